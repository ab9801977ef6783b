package tui

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"huddle/protocol"
)

// What m, s, a and r act on follows the row under the cursor in every
// pane, and the footer names it, so a key never touches something the
// person is not looking at.

// selection is the request a and r decide: the one the details on screen
// draw. It is computed here alone, for the keys, the footer and the
// details, so the three cannot disagree.
type selection struct {
	// req is the request drawn in the details of the focused pane: the
	// Requests row under the cursor, or the pending request the roster's
	// member card draws; nil when the screen draws none.
	req *protocol.Request
	// why says why a and r decide nothing, when they do not ("" when req
	// may be decided).
	why string
}

// selection is the request on screen that a and r would decide.
func (m *Model) selection() selection {
	var r *protocol.Request
	switch m.focus {
	case paneRequests:
		r = m.requests.selected()
		if r == nil {
			return selection{why: "no request selected"}
		}
	case paneRoster:
		mv := m.selectedMember()
		if mv == nil {
			return selection{why: "no member selected"}
		}
		name := memberName(mv)
		if m.member.open && m.member.name == name {
			r = m.member.facts.pending
		}
		if r == nil {
			return selection{why: name + " has no request waiting for the lead"}
		}
	default:
		return selection{why: "this pane shows no request: select one in Requests (2), or a member (1) whose card shows one"}
	}
	return selection{req: r, why: m.undecidable(r)}
}

// undecidable says why the lead may not decide r from this screen, or "".
func (m *Model) undecidable(r *protocol.Request) string {
	switch {
	case r.Status.IsTerminal():
		return fmt.Sprintf("%s is already %s by %s", r.ID, r.Status, r.ResolvedBy)
	case r.Kind == protocol.KindShutdown:
		return fmt.Sprintf("%s asks %s to shut down: only %s answers it", r.ID, r.To, r.To)
	case r.Kind != protocol.KindPlan && r.Kind != protocol.KindPermission && r.Kind != protocol.KindSetup:
		return fmt.Sprintf("%s is a %s request: the UI answers plans", r.ID, r.Kind)
	case !r.Deadline.IsZero() && !m.snap.Down && !m.now().Before(r.Deadline):
		return fmt.Sprintf("%s passed its deadline at %s: it expires, nothing was decided", r.ID, r.Deadline.Local().Format("15:04:05"))
	}
	if rf, ok := m.actions.(Refuser); ok {
		return rf.Refuses(r)
	}
	return ""
}

// shownRequest is what the screen shows of a request, enough to tell that
// it changed: decided, revised, moved on, replaced by another.
type shownRequest struct {
	id      string
	status  protocol.RequestStatus
	history int
	plan    string
}

func shownOf(r *protocol.Request) shownRequest {
	if r == nil {
		return shownRequest{}
	}
	return shownRequest{id: r.ID, status: r.Status, history: len(r.History), plan: r.Plan}
}

// noteSelection records the request now on screen. When it changed by
// itself (a snapshot, not a key the person pressed), a and r wait out the
// grace period: a keystroke meant for what was there cannot decide what
// just took its place.
// It reports whether a grace period started.
func (m *Model) noteSelection(byItself bool) bool {
	now := shownOf(m.selection().req)
	if now == m.onScreen {
		return false
	}
	m.onScreen = now
	m.changedAt = time.Time{}
	if byItself && now.id != "" {
		m.changedAt = m.now()
		return true
	}
	return false
}

// graceOverMsg comes when a grace period ends, so the footer offers a and
// r as soon as they act.
type graceOverMsg struct{}

func graceOver() tea.Cmd {
	return tea.Tick(grace, func(time.Time) tea.Msg { return graceOverMsg{} })
}

// inGrace reports whether the request on screen got there, or changed, by
// itself too recently for a key to decide it.
func (c *common) inGrace() bool {
	return !c.changedAt.IsZero() && c.now().Sub(c.changedAt) < grace
}

// decidable returns the request on screen if the lead may decide it now,
// or says why not in the flash line. A request that arrived, or came on
// screen by itself, or changed, less than the grace period ago waits.
func (m *Model) decidable() *protocol.Request {
	sel := m.selection()
	switch {
	case sel.why != "":
		m.flash, m.flashBad = sel.why, true
		return nil
	case m.requests.waits(sel.req):
		m.flash, m.flashBad = fmt.Sprintf("%s just came on screen or changed: nothing decided (a and r wait a moment)", sel.req.ID), true
		return nil
	}
	return sel.req
}

// decideKeys are a and r as the footer shows them: naming the request
// they decide, or nothing when the screen shows none they may decide now.
func (m *Model) decideKeys() []key.Binding {
	if r := m.requests.selected(); m.focus == paneRequests && r != nil && r.Kind == protocol.KindReview {
		if _, ok := m.actions.(Reviewer); !ok || m.readOnly {
			return nil
		}
		keys := []key.Binding{memberKey(m.keys.Diff, "diff")}
		if r.Status == protocol.RequestPending && !m.requests.waits(r) {
			keys = append(keys, memberKey(m.keys.Approve, fmt.Sprintf("merge %s %s", r.From, r.ID)))
		}
		return keys
	}
	sel := m.selection()
	if sel.req == nil || sel.why != "" || m.requests.waits(sel.req) {
		return nil // offered once they act: graceOverMsg redraws the footer
	}
	r := sel.req
	if r.Kind == protocol.KindPermission {
		keys := []key.Binding{memberKey(m.keys.Approve, fmt.Sprintf("allow %s once", r.From))}
		if _, ok := m.actions.(SessionAllower); ok && r.Rule != "" {
			keys = append(keys, memberKey(m.keys.AllowSession, "allow "+r.Rule+" for the session"))
		}
		return append(keys, memberKey(m.keys.Reject, "deny"))
	}
	return []key.Binding{
		memberKey(m.keys.Approve, fmt.Sprintf("approve %s %s", r.From, r.ID)),
		memberKey(m.keys.Reject, "reject"),
	}
}

// actedOn is the member m and s act on: the roster's member, a request's
// teammate, a call's caller (or its target when the caller is not a
// member), a message's sender (or its recipient when the lead sent it); ""
// when the focused pane's row names no member of the team.
func (m *Model) actedOn() string {
	var names []string
	switch m.focus {
	case paneRoster:
		if mv := m.selectedMember(); mv != nil {
			return memberName(mv)
		}
	case paneRequests:
		if r := m.requests.selected(); r != nil {
			names = []string{r.From, r.To}
			if r.Kind == protocol.KindShutdown {
				names = []string{r.To}
			}
		}
	case paneTraces:
		if c := m.traces.selectedCall(); c != nil {
			names = []string{c.Caller, c.Target}
		}
	case paneMessages:
		if mv := m.messages.selectedMessage(); mv != nil {
			names = []string{mv.Msg.From, mv.Msg.To}
		}
	case paneDeadLetters:
		if d := m.dead.selectedLetter(); d != nil {
			names = []string{d.By, d.Member}
		}
	}
	for _, n := range names {
		if m.isMember(n) {
			return n
		}
	}
	return ""
}

// isMember reports whether name is a member of the team on screen.
func (m *Model) isMember(name string) bool {
	if name == "" || name == protocol.Lead {
		return false
	}
	for i := range m.snap.Members {
		if memberName(&m.snap.Members[i]) == name {
			return true
		}
	}
	return false
}

// memberKeys are m and s as the footer shows them: naming the member they
// act on, or nothing when the row names none.
func (m *Model) memberKeys() []key.Binding {
	name := m.actedOn()
	if name == "" {
		return nil
	}
	var keys []key.Binding
	if m.memberRefusal(m.keys.Message) == "" {
		keys = append(keys, memberKey(m.keys.Message, "message "+name))
	}
	if m.memberRefusal(m.keys.Shutdown) == "" && m.cannotShutDown(name) == "" {
		keys = append(keys, memberKey(m.keys.Shutdown, "shut down "+name))
	}
	if m.cannotRestart(name) == "" {
		keys = append([]key.Binding{memberKey(m.keys.Restart, "restart "+name)}, keys...)
	}
	return keys
}

// statusOf is the member's status in the snapshot ("" when unknown).
func (m *Model) statusOf(name string) protocol.MemberStatus {
	for i := range m.snap.Members {
		if mv := &m.snap.Members[i]; memberName(mv) == name {
			return mv.Record.Status
		}
	}
	return ""
}

// cannotShutDown says why s cannot ask name to shut down ("" when it
// can): it is over, or on its way out already.
func (m *Model) cannotShutDown(name string) string {
	switch st := m.statusOf(name); st {
	case protocol.MemberStopped, protocol.MemberCrashed:
		return fmt.Sprintf("%s is %s: there is nothing to shut down (R runs it again)", name, st)
	case protocol.MemberStopping:
		return name + " is stopping already"
	}
	return ""
}

// cannotRestart says why R cannot run name again ("" when it can): its
// run is not over, no runtime runs the team, or this screen may not.
func (m *Model) cannotRestart(name string) string {
	switch {
	case m.readOnly:
		return "a replay acts on nothing"
	case !m.runOver(name):
		return fmt.Sprintf("%s is %s: R runs a stopped or crashed member again", name, orNotStarted(m.statusOf(name)))
	case m.snap.Down:
		return "the team is not running: start it (huddle up) to run " + name + " again"
	}
	if rf, ok := m.actions.(RestartRefuser); ok {
		return rf.RefusesRestart()
	}
	if _, ok := m.actions.(Restarter); !ok {
		return errNoRestart.Error()
	}
	return ""
}

func orNotStarted(s protocol.MemberStatus) string {
	if s == "" {
		return "not started"
	}
	return strings.ReplaceAll(string(s), "_", " ")
}

// memberRefusal is why the member key k (Message or Shutdown) cannot act
// on this team ("" when it can: MemberRefuser).
func (m *Model) memberRefusal(k key.Binding) string {
	rf, ok := m.actions.(MemberRefuser)
	switch {
	case !ok:
		return ""
	case k.Help().Key == m.keys.Shutdown.Help().Key:
		return rf.RefusesShutdown()
	default:
		return rf.RefusesMessage()
	}
}

// runOver reports whether the member's run is over (stopped or crashed):
// then R, which runs it again, is worth offering.
func (m *Model) runOver(name string) bool {
	for i := range m.snap.Members {
		mv := &m.snap.Members[i]
		if memberName(mv) == name {
			st := mv.Record.Status
			return st == protocol.MemberStopped || st == protocol.MemberCrashed
		}
	}
	return false
}
