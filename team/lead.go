package team

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"huddle/protocol"
	"huddle/store"
)

// What a human lead does: decide plans, ask members to shut down, send and
// broadcast, on the store that keeps the team (the team directory's files
// store or NATS). The CLI and the UI call the same functions; each works
// against a team that another process, on any machine, runs.

// Decide answers a pending plan or permission request as the lead with ev
// (approve or reject; a permission approved is allowed once), then tells
// the teammate with a plan_approval_response or a permission_response. A
// second decision, from any process on any machine, gets an
// *store.AlreadyError naming the first.
func Decide(ctx context.Context, st store.Store, id string, ev protocol.RequestEvent, feedback, by string) (*protocol.Request, error) {
	return decide(ctx, st, id, Resolution{Event: ev, Text: feedback, By: by})
}

// AllowForSession allows a pending permission request, and with it what
// its Rule covers for the rest of the member's session: the runtime
// allows the same use again without asking.
func AllowForSession(ctx context.Context, st store.Store, id, by string) (*protocol.Request, error) {
	return decide(ctx, st, id, Resolution{Event: protocol.EventApprove, By: by, Scope: protocol.ScopeSession})
}

func decide(ctx context.Context, st store.Store, id string, res Resolution) (*protocol.Request, error) {
	by, err := checkDecision(id, res.Event, res.Text, res.By)
	if err != nil {
		return nil, err
	}
	res.By = by
	r, err := requestFrom(ctx, st, id)
	if err != nil {
		return nil, err
	}
	if err := checkDecidable(r, res); err != nil {
		return nil, err
	}
	ev, feedback := res.Event, res.Text
	r, err = Settle(ctx, st, id, res)
	if err != nil {
		return nil, err
	}
	if r.Kind == protocol.KindSetup {
		return r, nil // the runtime awaits the record itself (awaitSetup): no teammate reads a line of it
	}
	if err := st.Append(ctx, r.From, decisionMessage(r, ev, feedback)); err != nil {
		return r, toldFailed(r, err)
	}
	return r, nil
}

// RequestShutdown asks member to shut down and returns the request. A
// member that has ended (stopped or crashed) while a runtime of the team
// runs gets a request cancelled at once; while none runs (it ran before),
// the request waits in the member's inbox for the next one, whatever status
// the last run left.
func RequestShutdown(ctx context.Context, st store.Store, t *Team, member, reason string) (*protocol.Request, error) {
	r, err := newShutdown(t, member, reason)
	if err != nil {
		return nil, err
	}
	if err := st.CreateRequest(ctx, &r); err != nil {
		return nil, err
	}
	ms, err := st.Member(ctx, member, LostAfter)
	if err == nil && ms.Status.IsTerminal() && !Down(RuntimeOf(ctx, st)) {
		cr, err := Settle(ctx, st, r.ID, alreadyEnded(member, ms.Status))
		var already *store.AlreadyError
		if errors.As(err, &already) {
			// The runtime saw the request first and ended it (a request
			// to a member that has ended is cancelled by whoever sees it).
			return requestFrom(ctx, st, r.ID)
		}
		return cr, err
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("member %s: %w", member, err)
	}
	if err := st.Append(ctx, member, shutdownAsk(&r)); err != nil {
		return nil, err
	}
	return &r, nil
}

// RuntimeOf is what st tells of the team's runtime: a team directory's
// runtime.lock, when st keeps its team in one (its flock goes with its
// process; no lock file: no runtime ran it yet), else its members'
// records (RuntimeFromRecords), and a runtime runs while one holds the lead's lease
// (the first to start takes it), whatever those records say: a team whose
// members have all stopped still runs. A store that cannot be read is
// taken as running: no command says "not running" without knowing it.
func RuntimeOf(ctx context.Context, st store.Store) RuntimeState {
	if _, ok := st.(RuntimeLocker); ok {
		return RuntimeOfMembers(ctx, st, nil, LostAfter) // the lock alone says
	}
	states, _, err := st.Members(ctx, LostAfter)
	if err != nil {
		return RuntimeState{Running: true}
	}
	return RuntimeOfMembers(ctx, st, states, LostAfter)
}

// RuntimeOfMembers is RuntimeOf for a reader that has read the members'
// records already (states, with the deadline lostAfter it read them
// with): a team directory's runtime.lock still says, else the records do.
func RuntimeOfMembers(ctx context.Context, st store.Store, states []store.MemberState, lostAfter time.Duration) RuntimeState {
	if rl, ok := st.(RuntimeLocker); ok {
		rt, err := rl.RuntimeLock()
		if err != nil {
			return RuntimeState{Running: true}
		}
		return rt
	}
	rt := RuntimeFromRecords(slices.Values(states), lostAfter)
	if !rt.Running {
		h, err := st.LeaseHolder(ctx, protocol.Lead)
		rt.Running = err != nil || h != nil
	}
	return rt
}

// RuntimeLocker is a store kept in a team directory, whose runtime.lock
// says whether a runtime runs it (store/filestore).
type RuntimeLocker interface {
	RuntimeLock() (RuntimeState, error)
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

// checkDecidable refuses to decide anything but a plan, a permission or
// a workspace's setup (a shutdown request is answered by its teammate, a
// review by ReviewDecide), and a session scope for anything but a
// permission with a rule to allow.
func checkDecidable(r *protocol.Request, res Resolution) error {
	switch r.Kind {
	case protocol.KindPlan, protocol.KindPermission, protocol.KindSetup:
	case protocol.KindReview:
		return fmt.Errorf("request %s is a review: merge it, ask for changes or discard it (huddle merge, huddle review)", r.ID)
	default:
		return fmt.Errorf("request %s is a %s request: only its teammate answers it", r.ID, r.Kind)
	}
	if res.Scope == protocol.ScopeSession && (r.Kind != protocol.KindPermission || r.Rule == "") {
		return fmt.Errorf("request %s has nothing to allow for the session: only a permission with a rule does", r.ID)
	}
	return nil
}

// decisionMessage is the plan_approval_response or permission_response
// that tells the member who asked.
func decisionMessage(r *protocol.Request, ev protocol.RequestEvent, feedback string) *protocol.Message {
	t := protocol.TypePlanApprovalResponse
	if r.Kind == protocol.KindPermission {
		t = protocol.TypePermissionResponse
	}
	m := protocol.NewMessage(t, protocol.Lead, r.From)
	m.RequestID, m.Approve, m.Feedback = r.ID, protocol.Bool(ev == protocol.EventApprove), feedback
	return &m
}

func toldFailed(r *protocol.Request, err error) error {
	return fmt.Errorf("decided, but telling %s failed: %w", r.From, err)
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
func Send(ctx context.Context, st store.Store, t *Team, from, to, text string) error {
	m, err := plainMessage(t, from, to, text)
	if err != nil {
		return err
	}
	return st.Append(ctx, to, m)
}

// SendFromOutside delivers text to an address of team t from a caller
// outside it (a client of huddle mcp, as an HTTP caller of huddle serve
// is): a valid name that is neither a member's nor the lead's, so that it
// cannot speak as one of them.
func SendFromOutside(ctx context.Context, st store.Store, t *Team, caller, to, text string) error {
	if err := protocol.ValidateName(caller); err != nil {
		return fmt.Errorf("from: %w", err)
	}
	if _, member := t.Member(caller); member || caller == protocol.Lead {
		return fmt.Errorf("from: %s is an address of team %s; a caller outside the team cannot write as it", caller, t.Name)
	}
	if err := t.Address(to); err != nil {
		return err
	}
	m := protocol.NewMessage(protocol.TypeMessage, caller, to)
	m.Content = text
	return st.Append(ctx, to, &m)
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

// Broadcast delivers text to every member of team t but the sender, and
// says how many it reached.
func Broadcast(ctx context.Context, st store.Store, t *Team, from, text string) (int, error) {
	msgs, err := broadcastMessages(t, from, text)
	if err != nil {
		return 0, err
	}
	for i, m := range msgs {
		if err := st.Append(ctx, m.To, m); err != nil {
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
