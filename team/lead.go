package team

import (
	"errors"
	"fmt"
	"os"
	"time"

	"huddle/inbox"
	"huddle/protocol"
)

// What a human lead does: decide plans, ask members to shut down, send and
// broadcast. The CLI and the UI call the same functions; each works against
// a team that another process runs.

// Decide answers a pending plan request as the lead with ev (approve or
// reject), then tells the teammate. A second decision gets an *AlreadyError.
func Decide(dir, id string, ev protocol.RequestEvent, feedback, by string) (*protocol.Request, error) {
	if by == "" {
		by = protocol.Lead
	}
	if !ev.IsAnswer() {
		return nil, fmt.Errorf("decide %s: %q is not a decision: want %s or %s", id, ev, protocol.EventApprove, protocol.EventReject)
	}
	if ev == protocol.EventReject && feedback == "" {
		return nil, errors.New("reject needs feedback: say what to change")
	}
	r, err := LoadRequest(dir, id)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no request %s", id)
		}
		return nil, err
	}
	if r.Kind != protocol.KindPlan {
		return nil, fmt.Errorf("request %s is a %s request: only its teammate answers it", id, r.Kind)
	}
	r, err = resolve(dir, r, Resolution{Event: ev, By: by, Text: feedback})
	if err != nil {
		return nil, err
	}
	m := protocol.NewMessage(protocol.TypePlanApprovalResponse, protocol.Lead, r.From)
	m.RequestID, m.Approve, m.Feedback = id, protocol.Bool(ev == protocol.EventApprove), feedback
	if err := inbox.Append(dir, r.From, &m); err != nil {
		return r, fmt.Errorf("decided, but telling %s failed: %w", r.From, err)
	}
	return r, nil
}

// RequestShutdown asks member to shut down and returns the request. A member
// that is already stopped (or crashed) gets a request cancelled at once.
func RequestShutdown(dir, member, reason string) (*protocol.Request, error) {
	if err := protocol.ValidateMemberName(member); err != nil {
		return nil, err
	}
	t, err := Load(dir)
	if err != nil {
		return nil, err
	}
	if _, ok := t.Member(member); !ok {
		return nil, fmt.Errorf("no member %q in team %s", member, t.Name)
	}
	r := protocol.NewRequest(protocol.KindShutdown, protocol.NewRequestID(protocol.KindShutdown),
		protocol.Lead, member, time.Now(), t.Settings.Shutdown())
	r.Reason = reason
	if err := CreateRequest(dir, &r); err != nil {
		return nil, err
	}
	// While no runtime runs the team (it ran before), every member starts
	// again with the next one: the request waits for it, whatever status
	// the last run left.
	rt, perr := ProbeRuntime(dir)
	down := perr == nil && Down(rt)
	if st, err := LoadMember(dir, member); err == nil && st.Status.IsTerminal() && !down {
		return Resolve(dir, r.ID, Resolution{Event: protocol.EventCancel, By: protocol.Lead,
			Text: fmt.Sprintf("%s is already %s", member, st.Status)})
	}
	m := protocol.NewMessage(protocol.TypeShutdownRequest, protocol.Lead, member)
	m.RequestID, m.Reason = r.ID, reason
	if err := inbox.Append(dir, member, &m); err != nil {
		return nil, err
	}
	return &r, nil
}

// Address checks that name can send or receive in team t: the lead or a
// member.
func (t *Team) Address(name string) error {
	if name == protocol.Lead {
		return nil
	}
	if err := protocol.ValidateMemberName(name); err != nil {
		return err
	}
	if _, ok := t.Member(name); !ok {
		return fmt.Errorf("no member %q in team %s", name, t.Name)
	}
	return nil
}

// Send delivers a plain message between two addresses of team t.
func Send(dir string, t *Team, from, to, text string) error {
	if err := t.Address(from); err != nil {
		return fmt.Errorf("from: %w", err)
	}
	if err := t.Address(to); err != nil {
		return err
	}
	m := protocol.NewMessage(protocol.TypeMessage, from, to)
	m.Content = text
	return inbox.Append(dir, to, &m)
}

// Broadcast delivers text to every member of team t but the sender.
func Broadcast(dir string, t *Team, from, text string) (int, error) {
	if err := t.Address(from); err != nil {
		return 0, fmt.Errorf("from: %w", err)
	}
	n := 0
	for _, mem := range t.Members {
		if mem.Name == from {
			continue
		}
		m := protocol.NewMessage(protocol.TypeBroadcast, from, mem.Name)
		m.Content = text
		if err := inbox.Append(dir, mem.Name, &m); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
