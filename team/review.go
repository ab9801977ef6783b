package team

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"huddle/protocol"
	"huddle/store"
	"huddle/worktree"
)

// A review is the third handshake: a coding teammate's finished change on
// its branch, put to the lead (docs/worktrees.md, "Review"). Every
// decision on it takes the repository's lock, then reads the record: of two
// resolvers the first does its git work and decides, the second finds the
// record final and gets the store's *AlreadyError. The decision is claimed
// after the git work, so a record never says merged of a merge that failed;
// a crash between the two leaves the review pending over a merge already
// made, and merging it again is a fast-forward to where the base is.

// OpenReview puts member's change in its worktree to the lead: what the
// worktree holds that no commit does is committed on its branch first, and
// the review is of the branch from where it forked from the base to that
// commit. Nothing to review (the base holds it all): nil. A pending review
// of the same commit is returned as it is; an older pending one of the
// member is cancelled, superseded.
func OpenReview(ctx context.Context, st store.Store, t *Team, ws *Workspace, planID, summary string) (*protocol.Request, error) {
	r, err := worktree.Open(ctx, ws.Repo)
	if err != nil {
		return nil, err
	}
	base := ws.Base
	if base == "" {
		base = r.Upstream(ctx, ws.Branch)
	}
	if base == "" {
		return nil, fmt.Errorf("review: %s tracks no base branch", ws.Branch)
	}
	head, _, err := r.Snapshot(ctx, ws.Path, commitMessage(ws.Member, summary), ws.Member)
	if err != nil {
		return nil, fmt.Errorf("review: %w", err)
	}
	if in, err := r.IsAncestor(ctx, head, base); err != nil || in {
		return nil, err // nothing the base does not hold
	}
	fork, err := r.MergeBase(ctx, base, head)
	if err != nil {
		return nil, err
	}
	stat, err := r.DiffStat(ctx, fork, head)
	if err != nil {
		return nil, err
	}
	live, _, err := st.LiveRequests(ctx)
	if err != nil {
		return nil, err
	}
	var older []protocol.Request
	for _, o := range live {
		if o.Kind != protocol.KindReview || o.From != ws.Member || o.Status != protocol.RequestPending {
			continue
		}
		if o.Review != nil && o.Review.Head == head {
			return &o, nil
		}
		older = append(older, o)
	}
	rq := protocol.NewRequest(protocol.KindReview, protocol.NewRequestID(protocol.KindReview), ws.Member, protocol.Lead, time.Now(), t.Settings.Review())
	rq.Review = &protocol.Review{
		Branch: ws.Branch, Base: base, BaseCommit: fork, Head: head, Repo: r.Dir, Worktree: ws.Path,
		Plan: planID, Summary: Clip(summary, 2000), Files: stat.Files, Added: stat.Added, Deleted: stat.Deleted,
		Merge: ws.Merge, Auto: ws.AutoMerge,
	}
	if err := st.CreateRequest(ctx, &rq); err != nil {
		return nil, err
	}
	for _, o := range older {
		_, _ = Settle(ctx, st, o.ID, Resolution{Event: protocol.EventCancel, By: "huddle", Text: "superseded by " + rq.ID}) // one decided meanwhile stays as decided
	}
	return &rq, nil
}

// commitMessage is the message of the commit that keeps a teammate's work
// for its review: its name and the first line of what it said.
func commitMessage(member, summary string) string {
	first, _, _ := strings.Cut(strings.TrimSpace(summary), "\n")
	first = strings.TrimPrefix(first, "done: ")
	if first == "" {
		first = "work for review"
	}
	return member + ": " + Clip(first, 72)
}

// Review reads review id: ErrNotFound-like errors for an id that is not a
// review.
func Review(ctx context.Context, st store.Store, id string) (*protocol.Request, error) {
	r, err := requestFrom(ctx, st, id)
	if err != nil {
		return nil, err
	}
	if r.Kind != protocol.KindReview || r.Review == nil {
		return nil, fmt.Errorf("request %s is a %s request, not a review", id, r.Kind)
	}
	return r, nil
}

// ReviewDiff is the change review r puts to the lead: its unified diff,
// from where the branch forked to the reviewed commit, read from the
// repository on this machine.
func ReviewDiff(ctx context.Context, r *protocol.Request) ([]byte, error) {
	repo, err := worktree.Open(ctx, r.Review.Repo)
	if err != nil {
		return nil, fmt.Errorf("review %s: %w (the review's repository is on the machine that runs %s)", r.ID, err, r.From)
	}
	return repo.Diff(ctx, r.Review.BaseCommit, r.Review.Head)
}

// WorkDiff is what member's worktree holds now against where its branch
// forked from its base, committed or not: huddle diff, and a plan's "what
// did it change already". base is the branch it forks from.
func WorkDiff(ctx context.Context, ws *Workspace) (diff []byte, base string, err error) {
	r, err := worktree.Open(ctx, ws.Repo)
	if err != nil {
		return nil, "", err
	}
	if base = ws.Base; base == "" {
		base = r.Upstream(ctx, ws.Branch)
	}
	if base == "" {
		return nil, "", fmt.Errorf("%s: no worktree yet (it is made when the member starts)", ws.Member)
	}
	tree, err := worktree.WorkTree(ctx, ws.Path)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", ws.Path, err)
	}
	fork, err := r.MergeBase(ctx, base, ws.Branch)
	if err != nil {
		return nil, "", err
	}
	d, err := r.Diff(ctx, fork, tree)
	return d, base, err
}

// Merged is a review merged: what git did, and the record.
type Merged struct {
	Request *protocol.Request
	worktree.Merged
}

// Merge merges review id's reviewed commit into its base, as the lead
// (by) decided, as team.json's merge says, and tells the teammate. A
// conflict, or a base that moved when only a fast-forward will do, is no
// merge: the review ends changes_requested, the teammate is asked to
// resolve it on its branch (naming the files), and the error says so
// (*worktree.ConflictError, worktree.ErrNotFastForward).
func Merge(ctx context.Context, st store.Store, id, by string) (*Merged, error) {
	r, repo, unlock, err := lockReview(ctx, st, id, protocol.EventApprove, by)
	if err != nil {
		return nil, err
	}
	defer unlock()
	rv := r.Review
	msg := fmt.Sprintf("Merge %s (%s, review %s)", rv.Branch, r.From, r.ID)
	m, err := repo.Merge(ctx, rv.Base, rv.Head, rv.Merge, rv.Worktree, msg, by)
	var conflict *worktree.ConflictError
	switch {
	case errors.As(err, &conflict):
		text := fmt.Sprintf("your change conflicts with %s in %s: merge %s into your branch (git merge %s), resolve them, and finish again",
			rv.Base, strings.Join(conflict.Files, ", "), rv.Base, rv.Base)
		if _, derr := decideReview(ctx, st, r, protocol.EventReject, "huddle (conflict)", text); derr != nil {
			return nil, derr
		}
		return nil, err
	case errors.Is(err, worktree.ErrNotFastForward):
		text := fmt.Sprintf("%s moved on and this team merges by fast-forward only: rebase your branch onto %s (git rebase %s) and finish again", rv.Base, rv.Base, rv.Base)
		if _, derr := decideReview(ctx, st, r, protocol.EventReject, "huddle (not a fast-forward)", text); derr != nil {
			return nil, derr
		}
		return nil, err
	case err != nil:
		return nil, fmt.Errorf("merge %s: %w", id, err)
	}
	text := fmt.Sprintf("merged into %s as %s (%s)", rv.Base, short(m.Commit), m.How)
	nr, err := decideReview(ctx, st, r, protocol.EventApprove, by, text)
	if err != nil {
		return nil, err
	}
	return &Merged{Request: nr, Merged: *m}, nil
}

// Comment is a person's note on one line of a review's diff.
type Comment struct {
	Path string `json:"path"`
	Line int    `json:"line"` // in the new file; 0: the file as a whole
	Text string `json:"text"`
}

// RequestChanges sends review id back to its teammate with the lead's
// feedback and line comments, which reach it as its next turn (a message
// from the lead); its branch and worktree stay as they are.
func RequestChanges(ctx context.Context, st store.Store, id, feedback string, comments []Comment, by string) (*protocol.Request, error) {
	text := feedbackText(feedback, comments)
	if strings.TrimSpace(text) == "" {
		return nil, errors.New("request changes needs feedback or a comment: say what to change")
	}
	r, _, unlock, err := lockReview(ctx, st, id, protocol.EventReject, by)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return decideReview(ctx, st, r, protocol.EventReject, by, text)
}

// feedbackText is the feedback and the comments as the teammate reads
// them: one "path:line: text" a comment.
func feedbackText(feedback string, comments []Comment) string {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(feedback))
	for _, c := range comments {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		if c.Line > 0 {
			fmt.Fprintf(&b, "%s:%d: %s", c.Path, c.Line, c.Text)
		} else {
			fmt.Fprintf(&b, "%s: %s", c.Path, c.Text)
		}
	}
	return b.String()
}

// Discarded is a review discarded: the record, and the ref that keeps the
// old tip of the branch.
type Discarded struct {
	Request *protocol.Request
	Kept    string
}

// Discard throws review id's change away: its branch goes back to the
// base and its worktree is cleaned (ignored files stay), the old tip kept
// under refs/huddle/discarded/. The caller has had the commits lost from
// the branch confirmed (Unmerged).
func Discard(ctx context.Context, st store.Store, id, by string) (*Discarded, error) {
	r, repo, unlock, err := lockReview(ctx, st, id, protocol.EventDiscard, by)
	if err != nil {
		return nil, err
	}
	defer unlock()
	rv := r.Review
	kept, err := repo.Reset(ctx, rv.Worktree, rv.Branch, rv.Base)
	if err != nil {
		return nil, fmt.Errorf("discard %s: %w", id, err)
	}
	nr, err := decideReview(ctx, st, r, protocol.EventDiscard, by, "discarded: the branch is back at "+rv.Base+"; the old tip is kept as "+kept)
	if err != nil {
		return nil, err
	}
	return &Discarded{Request: nr, Kept: kept}, nil
}

// ExpireReview ends review id at its deadline, under the repository's
// lock as every decision on a review is (a merge under way finishes
// first), and tells the teammate: nothing was merged.
func ExpireReview(ctx context.Context, st store.Store, id string) (*protocol.Request, error) {
	r, _, unlock, err := lockReview(ctx, st, id, protocol.EventDeadline, "huddle")
	if err != nil {
		return nil, err
	}
	defer unlock()
	return decideReview(ctx, st, r, protocol.EventDeadline, "huddle", "expired: no review before the deadline; nothing was merged, your branch is as it was")
}

// Unmerged are the commits of review r's branch its base does not hold:
// what a discard takes off the branch.
func Unmerged(ctx context.Context, r *protocol.Request) ([]worktree.Commit, error) {
	repo, err := worktree.Open(ctx, r.Review.Repo)
	if err != nil {
		return nil, err
	}
	return repo.Unmerged(ctx, r.Review.Base, r.Review.Branch)
}

// lockReview reads review id, refuses a decision it cannot take, takes
// its repository's lock and reads it again under the lock: a final review
// is the winner's *store.AlreadyError.
func lockReview(ctx context.Context, st store.Store, id string, ev protocol.RequestEvent, by string) (*protocol.Request, *worktree.Repo, func(), error) {
	if by == "" {
		by = protocol.Lead
	}
	r, err := Review(ctx, st, id)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := store.CheckDecision(r, store.Decision{Event: ev, By: by}); err != nil {
		return nil, nil, nil, err
	}
	repo, err := worktree.Open(ctx, r.Review.Repo)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("review %s: %w", id, err)
	}
	unlock, err := repo.Lock()
	if err != nil {
		return nil, nil, nil, err
	}
	if r, err = Review(ctx, st, id); err == nil {
		err = store.CheckDecision(r, store.Decision{Event: ev, By: by})
	}
	if err != nil {
		unlock()
		return nil, nil, nil, err
	}
	return r, repo, unlock, nil
}

// decideReview records the decision and tells the teammate: a message
// from the lead, which an agent takes as its next turn.
func decideReview(ctx context.Context, st store.Store, r *protocol.Request, ev protocol.RequestEvent, by, text string) (*protocol.Request, error) {
	nr, err := Settle(ctx, st, r.ID, Resolution{Event: ev, By: by, Text: text})
	if err != nil {
		return nil, err
	}
	m := protocol.NewMessage(protocol.TypeMessage, protocol.Lead, r.From)
	switch ev {
	case protocol.EventApprove:
		m.Content = fmt.Sprintf("Your change (review %s) was %s.", r.ID, text)
	case protocol.EventReject:
		m.Content = fmt.Sprintf("Changes requested on your change (review %s) on branch %s. Make them on your branch, then finish again:\n%s", r.ID, r.Review.Branch, text)
	default:
		m.Content = fmt.Sprintf("Your change (review %s) was %s.", r.ID, text)
	}
	if err := st.Append(ctx, r.From, &m); err != nil {
		return nr, toldFailed(nr, err)
	}
	return nr, nil
}

func short(sha string) string {
	if len(sha) > 8 {
		return sha[:8]
	}
	return sha
}
