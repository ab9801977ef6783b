package team

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"huddle/inbox"
	"huddle/ipc"
	"huddle/protocol"
	"huddle/teamdir"
)

// Event is one line of the headless event stream: {"ts","event",...}.
type Event map[string]any

// Options tune a runtime.
type Options struct {
	// AutoApprove approves every plan as it arrives. Off by default: nothing
	// is approved unless a human (or this flag) says so.
	AutoApprove bool
	// OnEvent receives every event; it is called from many goroutines.
	OnEvent func(Event)
	// Executable replaces a command's first word "huddle" for exec members,
	// so the demo's built-in agent runs from any build.
	Executable string
	Inbox      inbox.Options
	// Tick is how often deadlines are checked; default 500ms.
	Tick time.Duration
}

// Runtime runs a team: the lead's inbox and one goroutine per teammate.
type Runtime struct {
	dir  string
	team *Team
	opts Options
	w    *inbox.Watcher

	done chan struct{}
	err  error
	ctx  context.Context
	inv  invocations

	mu    sync.Mutex
	mates map[string]*mate
	// final remembers requests seen in a final state, which never changes,
	// so the periodic scans read only the records that still can.
	final map[string]bool
	wg    sync.WaitGroup
	evMu  sync.Mutex
}

// Run loads the team in dir and runs it until ctx ends; then it stops every
// teammate and returns. Only one runtime may run a team at a time.
func Run(ctx context.Context, dir string, opts Options) error {
	rt, err := Start(ctx, dir, opts)
	if err != nil {
		return err
	}
	return rt.Wait()
}

// Start loads the team in dir and starts running it: it returns once the
// lead and every teammate are running, or with the error that stopped them
// from starting. The team runs until ctx ends; Wait waits for that.
func Start(ctx context.Context, dir string, opts Options) (*Runtime, error) {
	t, err := Load(dir)
	if err != nil {
		return nil, err
	}
	unlock, err := teamdir.LockRuntime(dir)
	if err != nil {
		return nil, err
	}
	if opts.Tick <= 0 {
		opts.Tick = 500 * time.Millisecond
	}
	ctx, cancel := context.WithCancel(ctx)
	// What a consumer recovers from on its own (a damaged cursor journal)
	// becomes an event; consumers start only once rt is set.
	var rt *Runtime
	inboxOpts := opts.Inbox
	inboxOpts.Warn = func(member string, err error) {
		if opts.Inbox.Warn != nil {
			opts.Inbox.Warn(member, err)
		}
		rt.emit(Event{"event": "warning", "member": member, "warning": err.Error()})
	}
	w, err := inbox.NewWatcher(ctx, dir, inboxOpts)
	if err != nil {
		cancel()
		unlock()
		return nil, err
	}
	rt = &Runtime{dir: dir, team: t, opts: opts, w: w, mates: map[string]*mate{}, final: map[string]bool{}, done: make(chan struct{}), ctx: ctx}
	rt.inv = invocations{router: ipc.NewRouter(dir), callers: map[string]*ipc.Caller{}}
	// Under the lock no other runtime writes here: what a crash left goes.
	if err := teamdir.Sweep(dir); err != nil {
		rt.emit(Event{"event": "error", "error": err.Error()})
	}
	fail := func(err error) (*Runtime, error) {
		cancel()
		rt.wg.Wait()
		w.Close()
		unlock()
		return nil, err
	}
	if err := w.Consume(protocol.Lead, rt.handleLead); err != nil {
		return fail(err)
	}
	for _, spec := range t.Members {
		if err := rt.start(ctx, spec); err != nil {
			return fail(err)
		}
	}
	rt.emit(Event{"event": "team_started", "team": t.Name, "members": len(t.Members)})
	go func() {
		defer close(rt.done)
		defer unlock()
		defer cancel()
		tick := time.NewTicker(opts.Tick)
		defer tick.Stop()
		for done := false; !done; {
			select {
			case <-ctx.Done():
				done = true
			case <-tick.C:
				rt.expire()
			}
		}
		rt.wg.Wait() // teammates see ctx and stop
		rt.err = w.Close()
		rt.emit(Event{"event": "team_stopped", "team": t.Name})
	}()
	return rt, nil
}

// Wait waits until the team has stopped (its context ended) and returns
// what went wrong in stopping, if anything.
func (rt *Runtime) Wait() error {
	<-rt.done
	return rt.err
}

func (rt *Runtime) emit(e Event) {
	if rt.opts.OnEvent == nil {
		return
	}
	e["ts"] = protocol.FormatTime(time.Now())
	rt.evMu.Lock()
	defer rt.evMu.Unlock()
	rt.opts.OnEvent(e)
}

// deadLetter records refused input from an inbox and says so in the events.
func (rt *Runtime) deadLetter(member string, d inbox.Delivery, reason string) {
	raw, _ := json.Marshal(d.Msg)
	if err := inbox.WriteDeadLetter(rt.dir, teamdir.InboxRel(member), d.Offset, reason, raw); err != nil {
		rt.emit(Event{"event": "error", "member": member, "error": err.Error()})
	}
	rt.emit(Event{"event": "dead_letter", "member": member, "id": d.Msg.ID, "reason": reason})
}

func (rt *Runtime) delivered(member string, d inbox.Delivery) {
	e := Event{"event": "message_delivered", "member": member, "id": d.Msg.ID, "type": string(d.Msg.Type), "from": d.Msg.From, "to": d.Msg.To}
	if d.Redelivery {
		e["redelivery"] = true
	}
	rt.emit(e)
}

// handleLead handles the lead's inbox.
func (rt *Runtime) handleLead(_ context.Context, d inbox.Delivery) error {
	m := d.Msg
	rt.delivered(protocol.Lead, d)
	switch m.Type {
	case protocol.TypePlanApprovalRequest:
		return rt.planArrived(d)
	case protocol.TypeShutdownResponse:
		return rt.shutdownAnswered(d)
	case protocol.TypeStatus:
		return rt.statusReported(d)
	case protocol.TypePlanApprovalResponse, protocol.TypeShutdownRequest:
		rt.deadLetter(protocol.Lead, d, fmt.Sprintf("%s is sent by the lead, not to it", m.Type))
	}
	return nil
}

func (rt *Runtime) known(name string) bool {
	_, ok := rt.team.Member(name)
	return ok
}

// planArrived opens (or finds) the record of a plan request, cancels the
// member's older pending plans, and auto-approves when asked to.
func (rt *Runtime) planArrived(d inbox.Delivery) error {
	m := d.Msg
	if !rt.known(m.From) {
		rt.deadLetter(protocol.Lead, d, fmt.Sprintf("plan from %q, who is not in the team", m.From))
		return nil
	}
	r, err := rt.recordFor(m, protocol.KindPlan, m.From, protocol.Lead)
	if err != nil {
		return err
	}
	if r.Kind != protocol.KindPlan || r.From != m.From {
		rt.deadLetter(protocol.Lead, d, fmt.Sprintf("request %s is not a plan of %s", r.ID, m.From))
		return nil
	}
	rt.emit(Event{"event": "request_opened", "id": r.ID, "kind": string(r.Kind), "from": r.From, "to": r.To})
	rt.supersede(r)
	if rt.opts.AutoApprove && r.Status == protocol.RequestPending {
		if _, err := Decide(rt.dir, r.ID, protocol.EventApprove, "", "lead (auto-approve)"); err != nil {
			var already *AlreadyError
			if !errors.As(err, &already) {
				return err
			}
		}
		rt.emit(Event{"event": "request_resolved", "id": r.ID, "status": string(protocol.RequestApproved), "by": "lead (auto-approve)"})
	}
	return nil
}

// supersede cancels the member's pending plan requests older than r.
func (rt *Runtime) supersede(r *protocol.Request) {
	all, err := rt.pending()
	if err != nil {
		return
	}
	for _, old := range all {
		if old.ID == r.ID || old.Kind != protocol.KindPlan || old.From != r.From || old.Created.After(r.Created) {
			continue
		}
		if _, err := Resolve(rt.dir, old.ID, Resolution{Event: protocol.EventCancel, By: "huddle", Text: "superseded by " + r.ID}); err == nil {
			rt.emit(Event{"event": "request_resolved", "id": old.ID, "status": string(protocol.RequestCancelled), "by": "huddle"})
		}
	}
}

// shutdownAnswered checks a teammate's answer against its request record.
func (rt *Runtime) shutdownAnswered(d inbox.Delivery) error {
	m := d.Msg
	r, err := LoadRequest(rt.dir, m.RequestID)
	if errors.Is(err, os.ErrNotExist) {
		rt.deadLetter(protocol.Lead, d, "shutdown_response for unknown request "+m.RequestID)
		return nil
	}
	if err != nil {
		return err
	}
	if r.Kind != protocol.KindShutdown {
		rt.deadLetter(protocol.Lead, d, fmt.Sprintf("shutdown_response for %s, a %s request", r.ID, r.Kind))
		return nil
	}
	if r.To != m.From {
		rt.deadLetter(protocol.Lead, d, fmt.Sprintf("shutdown_response for %s from %s; only %s answers it", r.ID, m.From, r.To))
		return nil
	}
	if r, err = settle(rt.dir, r, Resolution{Event: m.Event(), By: m.From, Text: m.Reason}); err != nil {
		rt.deadLetter(protocol.Lead, d, fmt.Sprintf("%s: %v", m.Type, err))
		return nil
	}
	rt.emit(Event{"event": "request_resolved", "id": r.ID, "status": string(r.Status), "by": r.ResolvedBy, "reason": r.ResponseReason})
	return nil
}

// statusReported records what an external member says it is doing.
func (rt *Runtime) statusReported(d inbox.Delivery) error {
	m := d.Msg
	spec, ok := rt.team.Member(m.From)
	if !ok || spec.Runtime.Kind != RuntimeExternal {
		// huddle keeps the status of the members it runs itself.
		rt.deadLetter(protocol.Lead, d, fmt.Sprintf("status from %q, which huddle does not take reports from", m.From))
		return nil
	}
	rec, err := LoadMember(rt.dir, m.From)
	if err != nil {
		rec = &protocol.Member{Name: m.From, Role: spec.Role, Runtime: RuntimeExternal}
	}
	if rec.Status != m.Status {
		rec.Since = time.Now().UTC()
	}
	rec.Status, rec.Activity = m.Status, m.Content
	if err := WriteMember(rt.dir, rec); err != nil {
		return err
	}
	rt.emit(Event{"event": "member_status", "member": m.From, "status": string(m.Status), "activity": m.Content})
	return nil
}

// expire moves pending requests past their deadline to expired.
func (rt *Runtime) expire() {
	all, err := rt.pending()
	if err != nil {
		return
	}
	now := time.Now()
	for _, r := range all {
		if nr, err := applyDecision(rt.dir, &r, nil); err != nil || nr.Status.IsTerminal() {
			continue // decided elsewhere, and now written down
		}
		if now.Before(r.Deadline) {
			continue
		}
		if nr, err := Resolve(rt.dir, r.ID, Resolution{Event: protocol.EventDeadline, By: "huddle", Text: "no answer before the deadline"}); err == nil {
			rt.emit(Event{"event": "request_resolved", "id": nr.ID, "status": string(nr.Status), "by": "huddle"})
			if mt := rt.mate(nr.From); mt != nil {
				mt.poke()
			}
		}
	}
}

func (rt *Runtime) mate(name string) *mate {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.mates[name]
}

// cancelPending cancels every pending request from or to a member that is gone.
func (rt *Runtime) cancelPending(member, why string) {
	all, err := rt.pending()
	if err != nil {
		return
	}
	for _, r := range all {
		if r.From != member && r.To != member {
			continue
		}
		if nr, err := Resolve(rt.dir, r.ID, Resolution{Event: protocol.EventCancel, By: "huddle", Text: why}); err == nil {
			rt.emit(Event{"event": "request_resolved", "id": nr.ID, "status": string(nr.Status), "by": "huddle", "reason": why})
		}
	}
}

// recordFor returns the record of the request message m names, creating it
// from m when there is none: a foreign agent may write the line alone, and
// the receiver creates the record (docs/DESIGN.md §4).
func (rt *Runtime) recordFor(m protocol.Message, kind protocol.RequestKind, from, to string) (*protocol.Request, error) {
	r, err := LoadRequest(rt.dir, m.RequestID)
	if !errors.Is(err, os.ErrNotExist) {
		return r, err
	}
	ttl := rt.team.Settings.Approval()
	if kind == protocol.KindShutdown {
		ttl = rt.team.Settings.Shutdown()
	}
	nr := protocol.NewRequest(kind, m.RequestID, from, to, m.TS, ttl)
	nr.Plan, nr.Reason = m.Plan, m.Reason
	if err := CreateRequest(rt.dir, &nr); err != nil && !errors.Is(err, ErrExists) {
		return nil, err
	}
	return LoadRequest(rt.dir, m.RequestID)
}

// pending reads the request records not known to be final and returns the
// pending ones, oldest first.
func (rt *Runtime) pending() ([]protocol.Request, error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	all, err := listRequests(rt.dir, func(id string) bool { return rt.final[id] })
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, r := range all {
		if r.Status.IsTerminal() {
			rt.final[r.ID] = true
			continue
		}
		out = append(out, r)
	}
	return out, nil
}
