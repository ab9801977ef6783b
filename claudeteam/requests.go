package claudeteam

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"huddle/protocol"
	"huddle/team/view"
)

// KindPermission is a permission_request of a Claude Code teammate, folded
// as a request like a plan or a shutdown.
const KindPermission = protocol.KindPermission

// requests folds the protocol messages into request state machines: a
// request opens pending when it is seen, and the first answer to its id
// resolves it. Pending come first, oldest first; then the final ones,
// newest resolution first, at most view.MaxHistory.
func (f *folder) requests() ([]protocol.Request, int) {
	all := f.all()
	byID := map[string]*protocol.Request{}
	var order []string
	for _, m := range all {
		r, ok := opened(m)
		if !ok || byID[r.ID] != nil {
			continue
		}
		byID[r.ID] = &r
		order = append(order, r.ID)
	}
	for _, m := range all {
		resolve(byID, m)
	}
	var pending, final []protocol.Request
	for _, id := range order {
		r := *byID[id]
		if r.Status == protocol.RequestPending {
			pending = append(pending, r)
		} else {
			final = append(final, r)
		}
	}
	sort.SliceStable(final, func(i, j int) bool { return final[i].ResolvedAt.After(*final[j].ResolvedAt) })
	if len(final) > view.MaxHistory {
		final = final[:view.MaxHistory]
	}
	return append(pending, final...), len(pending)
}

// opened is the request a message opens, if it opens one.
func opened(m *message) (protocol.Request, bool) {
	if !m.proto || m.p.id() == "" {
		return protocol.Request{}, false
	}
	p := &m.p
	var r protocol.Request
	switch p.Type {
	case typePlanRequest:
		r = newRequest(protocol.KindPlan, p.id(), m.entry.From, m.inbox, m)
		r.Plan = p.plan()
	case typePermissionRequest:
		r = newRequest(KindPermission, p.id(), m.entry.From, m.inbox, m)
		r.Reason = permissionText(p)
	case typeShutdownRequest:
		r = newRequest(protocol.KindShutdown, p.id(), m.entry.From, m.inbox, m)
		r.Reason = p.Reason
	default:
		return r, false
	}
	return r, true
}

func newRequest(kind protocol.RequestKind, id, from, to string, m *message) protocol.Request {
	// Claude Code sets no deadline: Deadline stays zero.
	r := protocol.NewRequest(kind, id, from, to, m.at, 0)
	r.Deadline = time.Time{}
	return r
}

// permissionText is what a permission request asks, for the details.
func permissionText(p *payload) string {
	s := "tool " + p.ToolName
	if p.Description != "" {
		s += ": " + p.Description
	}
	if len(p.Input) > 0 && string(p.Input) != "null" {
		var compact bytes.Buffer
		if json.Compact(&compact, p.Input) == nil {
			s += "\ninput " + compact.String()
		}
	}
	return s
}

// resolve applies an answer to the request it names; an answer to an
// unknown or final request changes nothing (the message still shows).
func resolve(byID map[string]*protocol.Request, m *message) {
	if !m.proto {
		return
	}
	p := &m.p
	r := byID[p.id()]
	if r == nil || r.Status != protocol.RequestPending {
		return
	}
	by := m.entry.From
	var approve bool
	var note string
	switch p.Type {
	case typePlanResponse:
		if r.Kind != protocol.KindPlan {
			return
		}
		approve, note = p.Approved != nil && *p.Approved, p.Feedback
		r.Feedback = p.Feedback
	case typePermissionResponse:
		if r.Kind != KindPermission {
			return
		}
		approve = p.Subtype != subtypePermissionDenied
		note = p.Error
		if p.AnsweredBy != "" {
			by = p.AnsweredBy
		}
		r.ResponseReason = note
	case typeShutdownApproved, typeShutdownRejected, typeShutdownResponse:
		if r.Kind != protocol.KindShutdown || m.entry.From != r.To {
			return // only the member asked answers its shutdown
		}
		approve, note = shutdownAnswer(p)
		r.ResponseReason = note
	default:
		return
	}
	if err := r.Apply(protocol.AnswerEvent(approve), by, m.at, note); err != nil {
		r.ResponseReason = fmt.Sprintf("answer not applied: %v", err)
	}
}
