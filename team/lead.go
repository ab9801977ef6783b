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
// reject), then tells the teammate. A second decision gets an *store.AlreadyError.
func Decide(dir, id string, ev protocol.RequestEvent, feedback, by string) (*protocol.Request, error) {
	by, err := checkDecision(id, ev, feedback, by)
	if err != nil {
		return nil, err
	}
	r, err := LoadRequest(dir, id)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no request %s", id)
		}
		return nil, err
	}
	if err := checkPlan(r); err != nil {
		return nil, err
	}
	r, err = resolve(dir, r, Resolution{Event: ev, By: by, Text: feedback})
	if err != nil {
		return nil, err
	}
	if err := inbox.Append(dir, r.From, decisionMessage(r, ev, feedback)); err != nil {
		return r, toldFailed(r, err)
	}
	return r, nil
}

// checkDecision refuses a lead's decision that is no answer, or a rejection
// without feedback, before anything is read; it returns who decides.
func checkDecision(id string, ev protocol.RequestEvent, feedback, by string) (string, error) {
	if by == "" {
		by = protocol.Lead
	}
	if !ev.IsAnswer() {
		return "", fmt.Errorf("decide %s: %q is not a decision: want %s or %s", id, ev, protocol.EventApprove, protocol.EventReject)
	}
	if ev == protocol.EventReject && feedback == "" {
		return "", errors.New("reject needs feedback: say what to change")
	}
	return by, nil
}

// checkPlan refuses to decide anything but a plan: a shutdown request is
// answered by its teammate.
func checkPlan(r *protocol.Request) error {
	if r.Kind != protocol.KindPlan {
		return fmt.Errorf("request %s is a %s request: only its teammate answers it", r.ID, r.Kind)
	}
	return nil
}

// decisionMessage is the plan_approval_response that tells the planner.
func decisionMessage(r *protocol.Request, ev protocol.RequestEvent, feedback string) *protocol.Message {
	m := protocol.NewMessage(protocol.TypePlanApprovalResponse, protocol.Lead, r.From)
	m.RequestID, m.Approve, m.Feedback = r.ID, protocol.Bool(ev == protocol.EventApprove), feedback
	return &m
}

func toldFailed(r *protocol.Request, err error) error {
	return fmt.Errorf("decided, but telling %s failed: %w", r.From, err)
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
	r, err := newShutdown(t, member, reason)
	if err != nil {
		return nil, err
	}
	if err := CreateRequest(dir, &r); err != nil {
		return nil, err
	}
	// While no runtime runs the team (it ran before), every member starts
	// again with the next one: the request waits for it, whatever status
	// the last run left.
	rt, perr := ProbeRuntime(dir)
	down := perr == nil && Down(rt)
	if st, err := LoadMember(dir, member); err == nil && st.Status.IsTerminal() && !down {
		return Resolve(dir, r.ID, alreadyEnded(member, st.Status))
	}
	if err := inbox.Append(dir, member, shutdownAsk(&r)); err != nil {
		return nil, err
	}
	return &r, nil
}

// newShutdown is a pending shutdown request of the lead to member of t.
func newShutdown(t *Team, member, reason string) (protocol.Request, error) {
	if err := protocol.ValidateMemberName(member); err != nil {
		return protocol.Request{}, err
	}
	if _, ok := t.Member(member); !ok {
		return protocol.Request{}, fmt.Errorf("no member %q in team %s", member, t.Name)
	}
	r := protocol.NewRequest(protocol.KindShutdown, protocol.NewRequestID(protocol.KindShutdown),
		protocol.Lead, member, time.Now(), t.Settings.Shutdown())
	r.Reason = reason
	return r, nil
}

// alreadyEnded cancels a shutdown request to a member that has ended.
func alreadyEnded(member string, st protocol.MemberStatus) Resolution {
	return Resolution{Event: protocol.EventCancel, By: protocol.Lead, Text: fmt.Sprintf("%s is already %s", member, st)}
}

// shutdownAsk is the shutdown_request that asks the member.
func shutdownAsk(r *protocol.Request) *protocol.Message {
	m := protocol.NewMessage(protocol.TypeShutdownRequest, protocol.Lead, r.To)
	m.RequestID, m.Reason = r.ID, r.Reason
	return &m
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
	m, err := plainMessage(t, from, to, text)
	if err != nil {
		return err
	}
	return inbox.Append(dir, to, m)
}

// plainMessage is a message from one address of t to another.
func plainMessage(t *Team, from, to, text string) (*protocol.Message, error) {
	if err := t.Address(from); err != nil {
		return nil, fmt.Errorf("from: %w", err)
	}
	if err := t.Address(to); err != nil {
		return nil, err
	}
	m := protocol.NewMessage(protocol.TypeMessage, from, to)
	m.Content = text
	return &m, nil
}

// Broadcast delivers text to every member of team t but the sender.
func Broadcast(dir string, t *Team, from, text string) (int, error) {
	msgs, err := broadcastMessages(t, from, text)
	if err != nil {
		return 0, err
	}
	for i, m := range msgs {
		if err := inbox.Append(dir, m.To, m); err != nil {
			return i, err
		}
	}
	return len(msgs), nil
}

// broadcastMessages are a broadcast's messages, one to every member of t but
// the sender.
func broadcastMessages(t *Team, from, text string) ([]*protocol.Message, error) {
	if err := t.Address(from); err != nil {
		return nil, fmt.Errorf("from: %w", err)
	}
	var msgs []*protocol.Message
	for _, mem := range t.Members {
		if mem.Name == from {
			continue
		}
		m := protocol.NewMessage(protocol.TypeBroadcast, from, mem.Name)
		m.Content = text
		msgs = append(msgs, &m)
	}
	return msgs, nil
}
