package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"huddle/protocol"
	"huddle/store"
	"huddle/team"
	"huddle/worktree"
)

// Reviewer is an optional part of Actions: reading a coding teammate's
// change and deciding its review (the diff view's a, r, d), and a plan's
// work so far (v on a plan).
type Reviewer interface {
	ReviewDiff(id string) ([]worktree.FileDiff, error)
	WorkDiff(member string) ([]worktree.FileDiff, error)
	Merge(id string) (string, error)
	RequestChanges(id, feedback string, comments []team.Comment) (string, error)
	Unmerged(id string) ([]worktree.Commit, error)
	Discard(id string) (string, error)
}

// ReviewLead is the lead's review operations (team/review.go) on the team
// st keeps, whose worktrees are under dir on this machine.
type ReviewLead struct {
	ctx context.Context
	st  store.Store
	dir string
}

// StoreReviews is the review operations on st; dir is the team directory
// the workspace paths of team.json are relative to.
func StoreReviews(ctx context.Context, st store.Store, dir string) *ReviewLead {
	return &ReviewLead{ctx: ctx, st: st, dir: dir}
}

func (l *ReviewLead) review(id string) (*protocol.Request, context.Context, context.CancelFunc, error) {
	ctx, cancel := context.WithTimeout(l.ctx, actTimeout)
	r, err := team.Review(ctx, l.st, id)
	if err != nil {
		cancel()
		return nil, nil, nil, err
	}
	return r, ctx, cancel, nil
}

func (l *ReviewLead) diff(id string) ([]worktree.FileDiff, error) {
	r, ctx, cancel, err := l.review(id)
	if err != nil {
		return nil, err
	}
	defer cancel()
	d, err := team.ReviewDiff(ctx, r)
	return worktree.ParseDiff(d), err
}

func (l *ReviewLead) work(member string) ([]worktree.FileDiff, error) {
	ctx, cancel := context.WithTimeout(l.ctx, actTimeout)
	defer cancel()
	t, err := team.LoadFrom(ctx, l.st)
	if err != nil {
		return nil, err
	}
	ws, ok := t.Workspace(l.dir, member)
	if !ok {
		return nil, fmt.Errorf("%s works in place: no worktree to compare", member)
	}
	d, _, err := team.WorkDiff(ctx, ws)
	return worktree.ParseDiff(d), err
}

// Reviews adds l's review operations to a: what the diff view's keys do.
func Reviews(a Actions, l *ReviewLead) Actions { return reviewActions{Actions: a, l: l} }

type reviewActions struct {
	Actions
	l *ReviewLead
}

func (a reviewActions) ReviewDiff(id string) ([]worktree.FileDiff, error) { return a.l.diff(id) }
func (a reviewActions) WorkDiff(member string) ([]worktree.FileDiff, error) {
	return a.l.work(member)
}

func (a reviewActions) Merge(id string) (string, error) {
	ctx, cancel := context.WithTimeout(a.l.ctx, actTimeout)
	defer cancel()
	m, err := team.Merge(ctx, a.l.st, id, protocol.Lead)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("merged %s: %s into %s as %s (%s)", id, m.Request.Review.Branch, m.Request.Review.Base, m.Commit[:min(8, len(m.Commit))], m.How), nil
}

func (a reviewActions) RequestChanges(id, feedback string, comments []team.Comment) (string, error) {
	ctx, cancel := context.WithTimeout(a.l.ctx, actTimeout)
	defer cancel()
	r, err := team.RequestChanges(ctx, a.l.st, id, feedback, comments, protocol.Lead)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("changes requested on %s (%d comment(s)): %s takes them as its next turn", id, len(comments), r.From), nil
}

func (a reviewActions) Unmerged(id string) ([]worktree.Commit, error) {
	r, ctx, cancel, err := a.l.review(id)
	if err != nil {
		return nil, err
	}
	defer cancel()
	return team.Unmerged(ctx, r)
}

func (a reviewActions) Discard(id string) (string, error) {
	ctx, cancel := context.WithTimeout(a.l.ctx, actTimeout)
	defer cancel()
	d, err := team.Discard(ctx, a.l.st, id, protocol.Lead)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("discarded %s: the old tip is kept as %s", id, d.Kept), nil
}

var errNoReviews = errors.New("this screen cannot review changes (no repository here)")

// diffLoadedMsg brings a diff the view opens on.
type diffLoadedMsg struct {
	id, member, title, banner string
	files                     []worktree.FileDiff
	err                       error
}

// unmergedMsg brings what a discard would take off a branch, to confirm.
type unmergedMsg struct {
	id      string
	commits []worktree.Commit
	err     error
}

func (m *Model) reviewer() (Reviewer, bool) {
	rv, ok := m.actions.(Reviewer)
	return rv, ok
}

// openDiff loads the diff of r: a review's change, or a plan's work so
// far (which must be empty before the plan's approval).
func (m *Model) openDiff(r *protocol.Request) tea.Cmd {
	rv, ok := m.reviewer()
	if !ok {
		m.flash, m.flashBad = errNoReviews.Error(), true
		return nil
	}
	id, from := r.ID, r.From
	switch {
	case r.Kind == protocol.KindReview && r.Review != nil:
		title := fmt.Sprintf("review %s · %s · %s → %s · %s", id, from, r.Review.Branch, r.Review.Base, r.Status)
		return func() tea.Msg {
			files, err := rv.ReviewDiff(id)
			return diffLoadedMsg{id: id, member: from, title: title, files: files, err: err}
		}
	case r.Kind == protocol.KindPlan:
		pending := r.Status == protocol.RequestPending
		return func() tea.Msg {
			files, err := rv.WorkDiff(from)
			msg := diffLoadedMsg{member: from, title: fmt.Sprintf("work of %s so far · plan %s (%s)", from, id, r.Status), files: files, err: err}
			if pending && len(files) > 0 {
				msg.banner = fmt.Sprintf("✗ %s changed %d file(s) before its plan was approved", from, len(files))
			}
			return msg
		}
	}
	m.flash, m.flashBad = fmt.Sprintf("%s is a %s request: v shows a review's change or a plan's work", id, r.Kind), true
	return nil
}

func (m *Model) diffLoaded(msg diffLoadedMsg) {
	if msg.err != nil {
		m.flash, m.flashBad = msg.err.Error(), true
		return
	}
	m.diff = newDiffView(&m.common, msg.id, msg.member, msg.title, msg.banner, msg.files)
	m.diff.height = max(m.height-6, 1) // until its first draw says
	m.diff.setWide(m.width >= sideBySideWidth)
	m.flash = ""
}

// diffKey takes a key while the diff view is open.
func (m *Model) diffKey(k tea.KeyPressMsg) tea.Cmd {
	v := m.diff
	switch k.String() {
	case "esc", "q":
		m.diff = nil
	case "]":
		v.nextFile(1)
	case "[":
		v.nextFile(-1)
	case "n":
		v.nextHunk(1)
	case "N":
		v.nextHunk(-1)
	case "down", "j":
		v.move(v.cursor + 1)
	case "up", "k":
		v.move(v.cursor - 1)
	case "pgdown", "space":
		v.move(v.cursor + v.height)
		v.top = clamp(v.cursor, 0, max(v.count()-1, 0))
	case "pgup":
		v.move(v.cursor - v.height)
		v.top = v.cursor
	case "home", "g":
		v.move(0)
	case "end", "G":
		v.move(v.count() - 1)
	case "c":
		if v.id == "" {
			return nil
		}
		path, line, ok := v.commentable()
		if !ok {
			m.flash, m.flashBad = "put the cursor on a line to comment on it", true
			return nil
		}
		m.dialog = newInputDialog(dialogComment, v.id, fmt.Sprintf("comment on %s:%d", path, line), m.styles)
		return m.dialog.input.Focus()
	case "a":
		if v.id == "" {
			return nil
		}
		m.flash, m.flashBad = "merging "+v.id+"…", false
		return m.merge(v.id)
	case "r":
		if v.id == "" {
			return nil
		}
		m.dialog = newInputDialog(dialogChanges, v.id, fmt.Sprintf("changes for %s (%d comment(s) go with them)", v.member, len(v.comments)), m.styles)
		return m.dialog.input.Focus()
	case "d":
		if v.id == "" {
			return nil
		}
		return m.unmerged(v.id)
	}
	return nil
}

func (m *Model) merge(id string) tea.Cmd {
	return m.act(func(a Actions) (string, error) {
		rv, ok := a.(Reviewer)
		if !ok {
			return "", errNoReviews
		}
		return rv.Merge(id)
	})
}

func (m *Model) requestChanges(id, feedback string, comments []team.Comment) tea.Cmd {
	return m.act(func(a Actions) (string, error) {
		rv, ok := a.(Reviewer)
		if !ok {
			return "", errNoReviews
		}
		return rv.RequestChanges(id, feedback, comments)
	})
}

func (m *Model) discard(id string) tea.Cmd {
	return m.act(func(a Actions) (string, error) {
		rv, ok := a.(Reviewer)
		if !ok {
			return "", errNoReviews
		}
		return rv.Discard(id)
	})
}

func (m *Model) unmerged(id string) tea.Cmd {
	rv, ok := m.reviewer()
	if !ok {
		m.flash, m.flashBad = errNoReviews.Error(), true
		return nil
	}
	return func() tea.Msg {
		cs, err := rv.Unmerged(id)
		return unmergedMsg{id: id, commits: cs, err: err}
	}
}

// unmergedRead opens the discard's confirmation, naming what it loses.
func (m *Model) unmergedRead(msg unmergedMsg) {
	if msg.err != nil {
		m.flash, m.flashBad = msg.err.Error(), true
		return
	}
	lines := make([]string, 0, len(msg.commits))
	for _, c := range msg.commits {
		lines = append(lines, c.String())
	}
	m.dialog = &dialog{kind: dialogDiscard, target: msg.id, title: strings.Join(lines, "\n")}
}

// reviewKey takes the keys that act on a review in the Requests list: v
// and enter open its diff (v also a plan's work so far), a merges, r and d
// open its diff to decide there. ok false: the key is not one of them.
func (m *Model) reviewKey(k tea.KeyPressMsg, r *protocol.Request) (tea.Cmd, bool) {
	switch k.String() {
	case "v":
		return m.openDiff(r), true
	case "enter", "r", "d":
		if r.Kind != protocol.KindReview {
			return nil, false
		}
		return m.openDiff(r), true
	case "a":
		if r.Kind != protocol.KindReview {
			return nil, false
		}
		if why := m.undecidableReview(r); why != "" {
			m.flash, m.flashBad = why, true
			return nil, true
		}
		m.flash, m.flashBad = "merging "+r.ID+"…", false
		return m.merge(r.ID), true
	}
	return nil, false
}

// undecidableReview says why a may not merge r from the list now.
func (m *Model) undecidableReview(r *protocol.Request) string {
	switch {
	case r.Status.IsTerminal():
		return fmt.Sprintf("%s is already %s by %s", r.ID, r.Status, r.ResolvedBy)
	case m.requests.waits(r):
		return fmt.Sprintf("%s just arrived or changed: a waits a moment", r.ID)
	}
	return ""
}
