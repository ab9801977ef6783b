package tui

import (
	"fmt"

	"charm.land/bubbles/v2/key"

	"huddle/protocol"
)

// What m, s, a and r act on follows the row under the cursor in every
// pane, and the footer names it, so a key never touches something the
// person is not looking at.

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
	keys := []key.Binding{memberKey(m.keys.Message, "message "+name), memberKey(m.keys.Shutdown, "shut down "+name)}
	if m.runOver(name) {
		keys = append([]key.Binding{memberKey(m.keys.Restart, "restart "+name)}, keys...)
	}
	return keys
}

// rosterPlan is the pending plan of the roster's selected member, for a
// and r on the roster.
func (m *Model) rosterPlan() (*protocol.Request, string) {
	mv := m.selectedMember()
	if mv == nil {
		return nil, "no member selected"
	}
	name := memberName(mv)
	for i := range m.snap.Requests {
		r := &m.snap.Requests[i]
		if r.Status == protocol.RequestPending && r.Kind == protocol.KindPlan && r.From == name {
			if m.requests.justArrived(r.ID) {
				return nil, "" // swallowed, as in Requests: it just arrived
			}
			return r, ""
		}
	}
	return nil, fmt.Sprintf("%s has no plan waiting for approval", name)
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
