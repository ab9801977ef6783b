package tui

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"huddle/protocol"
	"huddle/team"
)

// requestsPane lists the plan and shutdown requests, pending first, over
// the details of the one under the cursor. It keeps the selection on the
// same request across snapshots.
type requestsPane struct {
	*common
	list list[int] // indices into snap.Requests
	// seenAt are the pending request ids already announced with a bell,
	// and when each was first seen.
	seenAt map[string]time.Time
	// pendingBefore is the pending set of the previous snapshot.
	pendingBefore map[string]bool
	// refused are the shutdown requests this snapshot shows refused that
	// the previous one showed pending.
	refused []*protocol.Request
}

func newRequestsPane(c *common) *requestsPane {
	p := &requestsPane{common: c, seenAt: map[string]time.Time{}}
	p.list.idOf = func(i int) string { return p.snap.Requests[i].ID }
	return p
}

// refresh rebuilds the rows from a new snapshot. The request under the
// cursor stays the same one while it is pending; when it became final, the
// one that now stands at its place is selected, with grace. It reports
// whether another request landed under the cursor.
func (p *requestsPane) refresh() bool {
	p.refused = p.refusedNow()
	p.refilter()
	landed := p.list.reselect(func(i int) bool {
		r := &p.snap.Requests[i]
		return r.Status == protocol.RequestPending || !p.pendingBefore[r.ID]
	})
	if landed {
		p.list.scroll = 0
	}
	p.pendingBefore = p.pendingSet()
	return landed
}

// openOnPending selects the first pending request when the one selected
// is not pending: the pane opens on what waits for the lead. The person
// chose it, so no grace applies.
func (p *requestsPane) openOnPending() {
	if r := p.selected(); r != nil && r.Status == protocol.RequestPending {
		return
	}
	for i, row := range p.list.rows {
		if p.snap.Requests[row].Status == protocol.RequestPending {
			p.list.cursor = i
			p.list.remember()
			return
		}
	}
}

// refusedNow lists the shutdown requests refused since the previous
// snapshot.
func (p *requestsPane) refusedNow() []*protocol.Request {
	var out []*protocol.Request
	for i := range p.snap.Requests {
		r := &p.snap.Requests[i]
		if r.Kind == protocol.KindShutdown && r.Status == protocol.RequestRejected && p.pendingBefore[r.ID] {
			out = append(out, r)
		}
	}
	return out
}

// announce reports whether the snapshot holds a pending request not seen
// before, so the root rings the bell once for it.
func (p *requestsPane) announce() bool {
	fresh := false
	for _, r := range p.snap.Requests {
		if r.Status != protocol.RequestPending {
			break // pending come first
		}
		if _, seen := p.seenAt[r.ID]; !seen {
			p.seenAt[r.ID] = p.now()
			fresh = true
		}
	}
	return fresh
}

func (p *requestsPane) pendingSet() map[string]bool {
	out := make(map[string]bool, p.snap.Pending)
	for _, r := range p.snap.Requests[:p.snap.Pending] {
		out[r.ID] = true
	}
	return out
}

func (p *requestsPane) refilter() {
	rows := p.list.rows[:0]
	for i, r := range p.snap.Requests {
		if p.list.matches(r.ID, r.From, r.To, string(r.Kind), string(r.Status), r.Plan, r.Reason, r.Feedback, r.ResponseReason, r.ResolvedBy, permissionText(&r)) {
			rows = append(rows, i)
		}
	}
	p.list.setRows(rows)
}

func (p *requestsPane) filter() string { return p.list.filter }

func (p *requestsPane) setFilter(f string) {
	p.list.filter = f
	p.refilter()
}

func (p *requestsPane) home()             { p.list.home() }
func (p *requestsPane) details() *details { return &p.list.details }

// byID is the request with id in the snapshot, if any.
func (p *requestsPane) byID(id string) *protocol.Request {
	for i := range p.snap.Requests {
		if p.snap.Requests[i].ID == id {
			return &p.snap.Requests[i]
		}
	}
	return nil
}

// selected is the request under the cursor, if any.
func (p *requestsPane) selected() *protocol.Request {
	return pick(&p.list, p.snap.Requests)
}

// justArrived reports whether the pending request id was first seen less
// than the grace period ago: whatever put it on screen, a key meant for
// something else cannot decide it.
func (p *requestsPane) justArrived(id string) bool {
	at, ok := p.seenAt[id]
	return !ok || p.now().Sub(at) < grace
}

// waits reports whether a and r wait before they decide r: a pending
// request that arrived, or came on screen or changed by itself, less than
// the grace period ago.
func (p *requestsPane) waits(r *protocol.Request) bool {
	return r.Status == protocol.RequestPending && ((p.inGrace() && p.onScreen.id == r.ID) || p.justArrived(r.ID))
}

// HandleKey moves the cursor and opens and closes the details.
func (p *requestsPane) HandleKey(k tea.KeyPressMsg) tea.Cmd {
	p.list.handleKey(&p.keys, k)
	return nil
}

func (p *requestsPane) ShortHelp() []key.Binding {
	k := p.keys
	return []key.Binding{k.Open, k.Filter}
}

func (p *requestsPane) FullHelp() [][]key.Binding {
	return [][]key.Binding{p.keys.listHelp(), append(p.keys.actionHelp(), p.keys.Diff)}
}

func (p *requestsPane) Render(w, h int) string {
	return p.list.split(&p.styles, w, h, p.rows, p.detail)
}

func (p *requestsPane) rows(w, h int) []string {
	if len(p.list.rows) == 0 {
		msg := "no requests yet: plans, permissions and shutdowns show here"
		if p.list.filter != "" {
			msg = "no request matches the filter"
		}
		return []string{p.styles.Muted.Render(msg)}
	}
	now := p.clock
	top := p.list.window(h)
	var out []string
	for i := top; i < len(p.list.rows) && len(out) < h; i++ {
		r := &p.snap.Requests[p.list.rows[i]]
		mark, ms := p.requestMark(r.Status)
		head := fmt.Sprintf("%s %-15s %s → %s", ms.Render(mark), r.ID, r.From, r.To)
		if w >= 70 {
			head = fmt.Sprintf("%s %-15s %-10s %s → %s", ms.Render(mark), r.ID, r.Kind, r.From, r.To)
		}
		if r.Permission != nil {
			head += " · " + team.Printable(r.Permission.Summary)
		}
		var tail string
		if r.Status == protocol.RequestPending && r.Deadline.IsZero() {
			// A Claude Code team's requests have no deadline.
			tail = p.styles.Muted.Render(age(now.Sub(r.Created))+" ago · ") + "no deadline"
		} else if r.Status == protocol.RequestPending {
			left := r.Deadline.Sub(now)
			tail = age(left) + " left"
			if p.snap.Down {
				// No runtime counts it down: it resumes at the next start.
				left = team.LeftWhenPaused(r, p.snap.Runtime)
				tail = "⏸ paused, " + age(left) + " left"
			}
			if w >= 70 {
				tail = p.styles.Muted.Render(age(now.Sub(r.Created))+" ago · ") + tail
			}
			if left < time.Minute {
				tail = p.styles.Warning.Render(ansi.Strip(tail))
			}
		} else {
			at := r.Created
			if r.ResolvedAt != nil {
				at = *r.ResolvedAt
			}
			tail = ms.Render(string(r.Status)) + p.styles.Muted.Render(fmt.Sprintf(" %s ago", age(now.Sub(at))))
		}
		room := w - ansi.StringWidth(tail) - 1
		line := fit(head, max(room, w/2)) + " " + tail
		line = fit(line, w)
		if i == p.list.cursor {
			line = p.highlight(line, paneRequests)
		}
		out = append(out, line)
	}
	return out
}

func (p *requestsPane) detail(w int) []string {
	r := p.selected()
	st := p.styles
	if r == nil {
		return nil
	}
	when := fmt.Sprintf("created %s (%s ago)", r.Created.Local().Format("15:04:05"), age(p.clock.Sub(r.Created)))
	if r.Status == protocol.RequestPending && p.snap.Down {
		when += fmt.Sprintf(" · deadline paused with %s left (team not running)", age(team.LeftWhenPaused(r, p.snap.Runtime)))
	} else if r.Status == protocol.RequestPending && r.Deadline.IsZero() {
		when += " · no deadline"
	} else if r.Status == protocol.RequestPending {
		when += fmt.Sprintf(" · deadline %s", r.Deadline.Local().Format("15:04:05"))
	} else if r.ResolvedBy != "" {
		when += " · " + string(r.Status) + " by " + r.ResolvedBy
	}
	out := []string{
		st.Title.Render(fmt.Sprintf("%s %s", r.Kind, r.ID)) + st.Muted.Render(fmt.Sprintf(" · %s → %s", r.From, r.To)),
		st.Muted.Render(when),
		p.diagram(r.Kind, r.Status),
	}
	if !p.readOnly && p.waits(r) {
		out = append(out, st.Muted.Render("  (just arrived or changed: a and r wait a moment)"))
	}
	out = append(out, p.revisions(r)...)
	out = append(out, st.Muted.Render("history"))
	for _, t := range r.History {
		from := string(t.From)
		if from == "" {
			from = "·"
		}
		l := fmt.Sprintf("  %s  %s → %s  by %s", t.At.Local().Format("15:04:05"), from, t.To, t.By)
		if t.Note != "" {
			l += ": " + team.Printable(t.Note)
		}
		out = append(out, l)
	}
	out = append(out, p.permission(r, w)...)
	if r.Setup != nil {
		out = append(out, p.section("setup script (sha256 "+r.Setup.SHA256[:min(12, len(r.Setup.SHA256))]+"…, in "+r.Setup.Worktree+")", r.Setup.Script, w)...)
	}
	if rv := r.Review; rv != nil {
		out = append(out, p.section("change", fmt.Sprintf("%s → %s: %d file(s), +%d -%d (%s..%s)\nplan %s\n%s", rv.Branch, rv.Base, rv.Files, rv.Added, rv.Deleted, short(rv.BaseCommit), short(rv.Head), dashIf(rv.Plan), rv.Summary), w)...)
	}
	out = append(out, p.section("plan", r.Plan, w)...)
	out = append(out, p.section("reason", r.Reason, w)...)
	out = append(out, p.section("feedback", r.Feedback, w)...)
	return append(out, p.section("answer", r.ResponseReason, w)...)
}

// revisions link a plan to the plan it replaces and to the plan that
// replaced it, with what the lead said.
func (p *requestsPane) revisions(r *protocol.Request) []string {
	st := p.styles
	var out []string
	if r.Revises != "" {
		line := "revises " + r.Revises
		if prev := p.byID(r.Revises); prev != nil {
			line += " (" + string(prev.Status)
			if prev.Feedback != "" {
				line += ": " + team.Printable(prev.Feedback)
			}
			line += ")"
		}
		out = append(out, st.Info.Render("↻ ")+line)
	}
	for i := range p.snap.Requests {
		if next := &p.snap.Requests[i]; next.Revises == r.ID {
			out = append(out, st.Info.Render("↻ ")+"revised by "+next.ID+" ("+string(next.Status)+")")
		}
	}
	return out
}

// diagram draws the request state machine with the current state lit.
func (p *requestsPane) diagram(kind protocol.RequestKind, cur protocol.RequestStatus) string {
	lit := func(s protocol.RequestStatus) string {
		if s == cur {
			return p.styles.Lit.Render("[" + string(s) + "]")
		}
		return p.styles.Muted.Render(string(s))
	}
	finals := []string{}
	for _, s := range protocol.RequestStatuses[1:] {
		if reachable(kind, s) {
			finals = append(finals, lit(s))
		}
	}
	return lit(protocol.RequestPending) + " ──▶ " + strings.Join(finals, "│")
}

// reachable reports whether a request of kind k can end in s: a
// permission is allowed or denied, a plan or shutdown approved, rejected
// or expired; any may be cancelled.
func reachable(k protocol.RequestKind, s protocol.RequestStatus) bool {
	for _, ev := range protocol.RequestEvents {
		if next, err := protocol.RequestPending.Next(k, ev); err == nil && next == s {
			return true
		}
	}
	return false
}

// permission draws what a permission asks: the tool and its input as a
// person reads it, what A would allow for the session, and the agent's
// own suggestions.
func (p *requestsPane) permission(r *protocol.Request, w int) []string {
	pm := r.Permission
	if pm == nil {
		return nil
	}
	drawn := pm.Drawn
	if drawn == "" {
		drawn = pm.Summary
	}
	out := p.section("asks to use "+pm.Tool, drawn, w)
	if r.Rule != "" {
		what := "A allows " + r.Rule + " for the rest of " + r.From + "'s session"
		if r.Scope == protocol.ScopeSession {
			what = "allowed for the session: " + r.Rule
		}
		out = append(out, p.styles.Muted.Render(fit(what, w)))
	}
	if len(pm.Suggestions) > 0 && string(pm.Suggestions) != "null" && string(pm.Suggestions) != "[]" {
		out = append(out, p.section("the agent suggests", string(pm.Suggestions), w)...)
	}
	return out
}

// short is a commit's first 8 hex digits.
func short(sha string) string { return sha[:min(8, len(sha))] }

func dashIf(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// permissionText is what a permission asks for, as its row and details
// say it ("" for another kind).
func permissionText(r *protocol.Request) string {
	if r.Permission == nil {
		return ""
	}
	return r.Permission.Tool + " " + r.Permission.Summary
}

func (p *requestsPane) counts() (int, int) { return len(p.list.rows), len(p.snap.Requests) }

func (p *requestsPane) moveBy(n int) { p.list.move(n) }
