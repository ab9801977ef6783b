package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"huddle/protocol"
	"huddle/store"
	"huddle/team"
)

// mate is one teammate run by this runtime: its status record, its inbox
// handler, and the signals between the handler and the runtime goroutine.
type mate struct {
	rt   *Runtime
	spec team.MemberSpec

	mu  sync.Mutex
	rec protocol.Member
	// lastPlan is the id of the member's latest plan, under mu: a plan
	// submitted while revising names it as the plan it replaces.
	lastPlan string
	// planApproved says the latest plan (lastPlan) is approved, and
	// sessionRules are what the lead allowed for the rest of the member's
	// session, both under mu: the permission gate reads them.
	planApproved bool
	sessionRules []string
	// writeMu orders the writes of rec: each takes its copy and writes it
	// under writeMu, so an older copy never lands over a newer one (the
	// inbox, the process's output and the run goroutine all change rec).
	writeMu sync.Mutex
	// firstMove, under writeMu, is the move to starting, its history line
	// not written yet: the spawn leaves it to the teammate's next move
	// (every run moves to working, or ends), which writes both lines at
	// once, so that a team starts without creating every history file
	// first. The line keeps the move's time (Since).
	firstMove *protocol.Member

	// wake is poked when a plan decision or a shutdown may have arrived.
	wake chan struct{}
	// stop is closed once a shutdown has been approved.
	stop     chan struct{}
	stopOnce sync.Once
	// inWork is set while a work step runs (reject_while_working).
	inWork   atomic.Bool
	activity atomic.Value // string
	// answerShutdown decides a shutdown request; runtimes may replace it.
	answerShutdown func(r *protocol.Request) (answer protocol.RequestEvent, reason string)
	// onMessage lets a runtime see messages (the exec runtime forwards them).
	onMessage func(ctx context.Context, d store.Delivery) error
	// proc is the process of an exec teammate; startErr why it did not start.
	proc     *proc
	startErr error
	// received are the invocations an exec teammate has yet to answer.
	received map[string]protocol.InvocationRequest
	// replay is what the previous run's process was given and had yet to
	// answer, for the new process; replayed their request ids, so that the
	// inbox's copy of one is not given twice; replayDone is closed once
	// replay is written, before any inbox message is.
	replay     []protocol.Message
	replayed   map[string]bool
	replayDone chan struct{}
	replayOnce sync.Once
	// answering are the invocations a scripted or llm teammate is answering.
	answering map[string]answering
	// llm is an llm teammate's loop and key (nil for other kinds).
	llm *llmState
	// replaced is closed when a restart put a new mate in this one's place
	// (team/restart.go): a message this one holds goes to the new one.
	replaced chan struct{}
	// finished is closed when the run goroutine has recorded how the run
	// ended (finish): only then may a restart replace the mate.
	finished chan struct{}
	// ws is the member's workspace when it works in a worktree
	// (workspace.go); gated says its process or loop starts, and its inbox
	// is consumed (consumeLater), only once its setup has run.
	ws           *team.Workspace
	gated        bool
	consumeLater bool
	// started is closed once what runs the teammate has started: a gated
	// teammate's inbox handler waits for it (a restart's consumer runs
	// already), so no message reaches a process not there yet.
	started chan struct{}
}

// spawnedMate is a teammate spawned and not launched yet: its record is
// written, its process or loop started, its inbox consumed; prev is the
// record of its previous run.
type spawnedMate struct {
	mt   *mate
	prev *protocol.Member
}

// run starts a teammate: spawn, then launch.
func (rt *Runtime) run(ctx context.Context, spec team.MemberSpec, consume bool) error {
	sm, err := rt.spawn(ctx, spec, consume)
	if err != nil || sm.mt == nil {
		return err
	}
	rt.launch(ctx, sm)
	return nil
}

// spawn makes a teammate ready to run: its record, its process or loop;
// consume starts the consumer of its inbox, which hands each message to
// whichever mate runs the member now (a restart replaces it). A member
// huddle does not run spawns nothing (no mate).
func (rt *Runtime) spawn(ctx context.Context, spec team.MemberSpec, consume bool) (spawnedMate, error) {
	mt := &mate{rt: rt, spec: spec, wake: make(chan struct{}, 1), stop: make(chan struct{}), replaced: make(chan struct{}), finished: make(chan struct{}), started: make(chan struct{})}
	mt.activity.Store("")
	prev := rt.previous(spec.Name)
	mt.rec = protocol.Member{Name: spec.Name, Role: spec.Role, Runtime: spec.Runtime.Kind, Status: protocol.MemberStarting, Since: time.Now().UTC(), PID: os.Getpid(), RunID: protocol.NewCorrelationID()[5:]}
	if spec.Runtime.Kind == team.RuntimeExternal || spec.Runtime.Kind == "" {
		// Something else runs it (or it is only a target to call): keep
		// what it last reported.
		if prev == nil {
			rec := mt.rec
			rec.Status, rec.PID, rec.RunID = protocol.MemberIdle, 0, ""
			rec.Activity = "run outside huddle"
			if t := spec.Target; t != nil {
				rec.Runtime = "target:" + t.Kind
				rec.Activity = "called at " + t.URL + strings.Join(t.Command, " ")
			}
			if err := rt.sh.writeMember(&rec); err != nil {
				return spawnedMate{}, err
			}
			rt.recordMove(&rec)
		}
		return spawnedMate{}, nil
	}
	if prev != nil {
		mt.rec.Counters = prev.Counters
	}
	rt.mu.Lock()
	rt.mates[spec.Name] = mt
	rt.mu.Unlock()
	if err := mt.write(); err != nil {
		return spawnedMate{}, err
	}
	mt.writeMu.Lock()
	mt.mu.Lock()
	first := mt.rec
	mt.mu.Unlock()
	mt.firstMove = &first
	mt.writeMu.Unlock()
	rt.emit(Event{"event": "member_status", "member": spec.Name, "status": string(protocol.MemberStarting)})
	if ws, ok := rt.team.Workspace(rt.dir, spec.Name); ok && spec.Runtime.Kind != team.RuntimeScript {
		// The worktree is made or found before anything starts in it; a
		// member that cannot have it crashes saying why, the team goes on.
		if mt.gated, mt.startErr = rt.prepareWorkspace(ctx, mt, ws); mt.startErr != nil {
			mt.gated = false
		}
	}
	if mt.gated {
		mt.consumeLater = consume
		return spawnedMate{mt: mt, prev: prev}, nil
	}
	if err := mt.startRun(prev); err != nil {
		return spawnedMate{}, err
	}
	close(mt.started)
	if consume {
		if err := mt.consume(); err != nil {
			return spawnedMate{mt: mt, prev: prev}, err
		}
	}
	return spawnedMate{mt: mt, prev: prev}, nil
}

// startRun starts what runs the teammate: its process or its loop (a
// script needs neither). One that could not start says so when it runs.
func (mt *mate) startRun(prev *protocol.Member) error {
	ready := mt.startErr == nil // else its run says why it could not start
	switch {
	case mt.spec.Runtime.Kind == team.RuntimeScript:
		mt.answerShutdown = mt.scriptAnswer
	case ready && mt.spec.Runtime.Kind == team.RuntimeLLM:
		mt.startThinker()
	case ready:
		if err := mt.startProcess(); err != nil {
			return err
		}
		if mt.proc != nil {
			mt.collectReplay(prev)
		}
	}
	return nil
}

// consume starts the consumer of the member's inbox, which hands each
// message to whichever mate runs the member now (a restart replaces it).
func (mt *mate) consume() error {
	rt, name := mt.rt, mt.spec.Name
	return rt.sh.consume(name, func(ctx context.Context, d store.Delivery) error { return rt.mate(name).handle(ctx, d) })
}

// ungate runs a gated teammate's setup, then starts it and its inbox's
// consumer as spawn would have.
func (mt *mate) ungate(ctx context.Context, prev *protocol.Member) error {
	if err := mt.awaitSetup(ctx); err != nil {
		return err
	}
	if err := mt.startRun(prev); err != nil {
		return err
	}
	close(mt.started)
	if mt.consumeLater {
		return mt.consume()
	}
	return nil
}

// previous is the record member name's last run left, nil if none (or
// corrupt): from the start's listing while the start spawns, else read.
func (rt *Runtime) previous(name string) *protocol.Member {
	rt.mu.Lock()
	last := rt.lastRecs
	rt.mu.Unlock()
	if last != nil {
		if rec := last[name]; rec != nil {
			cp := *rec
			return &cp
		}
		return nil
	}
	prev, _ := rt.sh.loadMember(name)
	return prev
}

// launch starts a spawned teammate's run goroutine, which records how the
// run ended.
func (rt *Runtime) launch(ctx context.Context, sm spawnedMate) {
	mt, prev, spec := sm.mt, sm.prev, sm.mt.spec
	ctx = rt.memberCtx(ctx, spec.Name)
	rt.wg.Add(1)
	go func() {
		defer rt.wg.Done()
		defer close(mt.finished)
		var err error
		if mt.gated {
			err = mt.ungate(ctx, prev)
		}
		switch {
		case err != nil:
		case spec.Runtime.Kind == team.RuntimeScript:
			err = mt.runScript(ctx, prev)
		case spec.Runtime.Kind == team.RuntimeExec:
			err = mt.runExec(ctx)
		case spec.Runtime.Kind == team.RuntimeLLM:
			err = mt.runLLM(ctx)
		}
		mt.finish(err)
	}()
}

// finish records how the teammate's run ended.
func (mt *mate) finish(err error) {
	switch {
	case err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, errStopped):
		mt.mu.Lock()
		mt.rec.Error = err.Error()
		mt.mu.Unlock()
		mt.finalStatus(protocol.MemberCrashed)
		mt.rt.cancelPending(mt.spec.Name, mt.spec.Name+" crashed")
	default:
		if mt.status() != protocol.MemberStopping {
			mt.finalStatus(protocol.MemberStopping)
		}
		mt.finalStatus(protocol.MemberStopped)
		if mt.rt.leaseLost(mt.spec.Name) {
			return // it runs elsewhere now: what is pending from or to it goes on there
		}
		mt.rt.cancelPending(mt.spec.Name, mt.spec.Name+" stopped")
	}
}

// finalStatus records how the run ended; a record that cannot be written is
// said in the events, as nothing is left to carry the error.
func (mt *mate) finalStatus(st protocol.MemberStatus) {
	if err := mt.setStatus(st, ""); err != nil {
		mt.rt.emit(Event{"event": "error", "member": mt.spec.Name, "error": err.Error()})
	}
}

func (mt *mate) status() protocol.MemberStatus {
	mt.mu.Lock()
	defer mt.mu.Unlock()
	return mt.rec.Status
}

func (mt *mate) write() error {
	mt.writeMu.Lock()
	defer mt.writeMu.Unlock()
	mt.mu.Lock()
	rec := mt.rec
	mt.mu.Unlock()
	if mt.rt.leaseLost(rec.Name) {
		return nil // another runtime runs it now, and writes its record
	}
	mt.rt.takeSlot()
	defer mt.rt.giveSlot()
	return mt.rt.sh.writeMember(&rec)
}

// setStatus moves the teammate's state machine and records it. An illegal
// move is refused: the state machine is the contract.
func (mt *mate) setStatus(next protocol.MemberStatus, activity string) error {
	_, err := mt.setStatusIf(nil, next, activity)
	return err
}

// setStatusIf is setStatus when cond, checked under the same lock as the
// move, holds of the record (nil: always); moved says whether it did.
func (mt *mate) setStatusIf(cond func(rec *protocol.Member) bool, next protocol.MemberStatus, activity string) (moved bool, err error) {
	mt.writeMu.Lock()
	defer mt.writeMu.Unlock()
	mt.mu.Lock()
	if cond != nil && !cond(&mt.rec) {
		mt.mu.Unlock()
		return false, nil
	}
	cur := mt.rec.Status
	if cur == next && mt.rec.Activity == activity {
		mt.mu.Unlock()
		return false, nil
	}
	if cur != next {
		if err := cur.Transition(next); err != nil {
			mt.mu.Unlock()
			return false, fmt.Errorf("%s: %w", mt.spec.Name, err)
		}
		mt.rec.Since = time.Now().UTC()
	}
	mt.rec.ActivitySince = time.Now().UTC()
	mt.rec.Status, mt.rec.Activity = next, activity
	rec := mt.rec
	mt.mu.Unlock()
	mt.activity.Store(activity)
	if err := mt.writeMove(&rec, cur != next); err != nil {
		return true, err
	}
	e := Event{"event": "member_status", "member": mt.spec.Name, "status": string(next)}
	if activity != "" {
		e["activity"] = activity
	}
	if next == protocol.MemberCrashed {
		e["error"] = rec.Error
	}
	mt.rt.emit(e)
	return true, nil
}

func (mt *mate) poke() {
	select {
	case mt.wake <- struct{}{}:
	default:
	}
}

func (mt *mate) stopping() bool {
	select {
	case <-mt.stop:
		return true
	default:
		return false
	}
}

func (mt *mate) count(f func(c *protocol.Counters)) {
	mt.mu.Lock()
	f(&mt.rec.Counters)
	mt.mu.Unlock()
}

// handle is the teammate's inbox handler.
func (mt *mate) handle(ctx context.Context, d store.Delivery) error {
	select {
	case <-mt.started:
	case <-mt.replaced:
		return mt.rt.mate(mt.spec.Name).handle(ctx, d) // a restart runs it now
	case <-ctx.Done():
		return ctx.Err() // not committed: the next run is given it
	}
	mt.rt.delivered(mt.spec.Name, d)
	mt.count(func(c *protocol.Counters) { c.Received++ })
	return mt.dispatch(ctx, d)
}

// dispatch acts on one message of the teammate's inbox, delivered and
// counted already.
func (mt *mate) dispatch(ctx context.Context, d store.Delivery) error {
	m := d.Msg
	switch m.Type {
	case protocol.TypeShutdownRequest:
		return mt.shutdownArrived(ctx, d)
	case protocol.TypePlanApprovalResponse:
		return mt.planDecided(ctx, d)
	case protocol.TypePermissionResponse:
		return mt.permissionDecided(ctx, d)
	case protocol.TypeInvocationRequest:
		return mt.invoked(ctx, d)
	case protocol.TypeInvocationResult:
		return mt.resultArrived(d)
	case protocol.TypeInvocationCancel:
		return mt.cancelled(ctx, d)
	case protocol.TypeMessage, protocol.TypeBroadcast:
		return mt.forward(ctx, d)
	default:
		mt.rt.deadLetter(mt.spec.Name, d, fmt.Sprintf("a teammate does not take %s", m.Type))
		return nil
	}
}

// shutdownArrived answers a shutdown request addressed to this teammate.
func (mt *mate) shutdownArrived(ctx context.Context, d store.Delivery) error {
	m := d.Msg
	name := mt.spec.Name
	if m.From != protocol.Lead {
		mt.rt.deadLetter(name, d, fmt.Sprintf("shutdown_request from %s; only the lead asks", m.From))
		return nil
	}
	r, err := mt.rt.recordFor(m, protocol.KindShutdown, protocol.Lead, name)
	if err != nil {
		return err
	}
	if r.Kind != protocol.KindShutdown || r.To != name {
		mt.rt.deadLetter(name, d, fmt.Sprintf("request %s is not a shutdown request for %s", r.ID, name))
		return nil
	}
	if r.Status.IsTerminal() {
		mt.rt.deadLetter(name, d, fmt.Sprintf("stale shutdown_request: %s already %s by %s", r.ID, r.Status, r.ResolvedBy))
		return nil
	}
	mt.rt.emit(Event{"event": "request_opened", "id": r.ID, "kind": string(r.Kind), "from": r.From, "to": r.To})
	if mt.answerShutdown == nil {
		// The teammate's own process answers (exec runtime).
		return mt.forward(ctx, d)
	}
	ev, reason := mt.answerShutdown(r)
	return mt.answer(r, ev, reason)
}

// answer resolves this teammate's shutdown request by ev (approve or
// reject) and tells the lead; an approval lets the runtime goroutine stop
// after its current step.
func (mt *mate) answer(r *protocol.Request, ev protocol.RequestEvent, reason string) error {
	name := mt.spec.Name
	if _, err := mt.rt.sh.resolveID(r.ID, team.Resolution{Event: ev, By: name, Text: reason}); err != nil {
		return err
	}
	resp := protocol.NewMessage(protocol.TypeShutdownResponse, name, protocol.Lead)
	resp.RequestID, resp.Approve, resp.Reason = r.ID, protocol.Bool(ev == protocol.EventApprove), reason
	if err := mt.rt.sh.appendTo(protocol.Lead, &resp); err != nil {
		return err
	}
	if ev == protocol.EventApprove {
		mt.stopOnce.Do(func() { close(mt.stop) })
		mt.poke()
	}
	return nil
}

// scriptAnswer is the shutdown policy of team.json.
func (mt *mate) scriptAnswer(*protocol.Request) (protocol.RequestEvent, string) {
	if mt.spec.Runtime.OnShutdown == team.OnShutdownRejectWhileWorking && mt.inWork.Load() {
		return protocol.EventReject, fmt.Sprintf("in the middle of %q; ask again when it is done", mt.activity.Load())
	}
	return protocol.EventApprove, "finishing the current step, then stopping"
}

// planDecided checks the lead's answer to one of this teammate's plans and
// wakes the runtime goroutine.
func (mt *mate) planDecided(ctx context.Context, d store.Delivery) error {
	m := d.Msg
	name := mt.spec.Name
	if m.From != protocol.Lead {
		mt.rt.deadLetter(name, d, fmt.Sprintf("plan_approval_response from %s; only the lead decides plans", m.From))
		return nil
	}
	r, err := mt.rt.sh.loadRequest(m.RequestID)
	if errors.Is(err, os.ErrNotExist) {
		mt.rt.deadLetter(name, d, "plan_approval_response for unknown request "+m.RequestID)
		return nil
	}
	if err != nil {
		return err
	}
	if r.Kind != protocol.KindPlan || r.From != name {
		mt.rt.deadLetter(name, d, fmt.Sprintf("request %s is not a plan of %s", r.ID, name))
		return nil
	}
	if r, err = mt.rt.sh.settle(r, team.Resolution{Event: planEvent(m), By: protocol.Lead, Text: m.Feedback}); err != nil {
		mt.rt.deadLetter(name, d, fmt.Sprintf("%s: %v", m.Type, err))
		return nil
	}
	mt.rt.emit(Event{"event": "request_resolved", "id": r.ID, "status": string(r.Status), "by": r.ResolvedBy})
	if err := mt.planSettled(r); err != nil {
		return err
	}
	mt.poke()
	return mt.forward(ctx, d)
}

// planEvent is the event a plan_approval_response stands for: approve or
// reject from the lead, or the deadline or a cancel that huddle tells
// (reason "expired" or "cancelled", tellPlanEnded).
func planEvent(m protocol.Message) protocol.RequestEvent {
	if !m.Approved() {
		switch protocol.RequestStatus(m.Reason) {
		case protocol.RequestExpired:
			return protocol.EventDeadline
		case protocol.RequestCancelled:
			return protocol.EventCancel
		}
	}
	return m.Event()
}

// planSettled moves an exec teammate whose awaited plan r is final out of
// awaiting_approval: working when approved, revising otherwise. A scripted
// one's runtime goroutine moves itself; a decision on an older plan (one
// cancelled by the newer) leaves the gate on the newer.
func (mt *mate) planSettled(r *protocol.Request) error {
	if mt.proc == nil || !r.Status.IsTerminal() {
		return nil
	}
	mt.mu.Lock()
	if r.ID == mt.lastPlan {
		mt.planApproved = r.Status == protocol.RequestApproved
	}
	mt.mu.Unlock()
	next, activity := protocol.MemberWorking, "plan approved"
	switch r.Status {
	case protocol.RequestRejected:
		next, activity = protocol.MemberRevising, "revising: "+r.Feedback
	case protocol.RequestExpired, protocol.RequestCancelled:
		next, activity = protocol.MemberRevising, fmt.Sprintf("plan %s: %s", r.Status, r.ResponseReason)
	}
	// Checked with the move, under one lock: the teammate may submit a
	// newer plan at any moment, and its gate must stay shut for that one.
	awaited := func(rec *protocol.Member) bool {
		return rec.Status == protocol.MemberAwaitingApproval && rec.RequestID == r.ID
	}
	_, err := mt.setStatusIf(awaited, next, activity)
	return err
}

// forward hands a message to the teammate's own process, if it has one.
func (mt *mate) forward(ctx context.Context, d store.Delivery) error {
	if mt.onMessage != nil {
		return mt.onMessage(ctx, d)
	}
	return nil
}

// submitPlan opens a plan request and sends it to the lead; the teammate is
// then awaiting approval.
func (mt *mate) submitPlan(plan string) (string, error) {
	name := mt.spec.Name
	r := protocol.NewRequest(protocol.KindPlan, protocol.NewRequestID(protocol.KindPlan), name, protocol.Lead, time.Now(), mt.rt.team.Settings.Approval())
	r.Plan = plan
	revising := mt.status() == protocol.MemberRevising
	mt.mu.Lock()
	if revising {
		// The previous plan was rejected or expired: this one replaces it.
		r.Revises = mt.lastPlan
	}
	mt.mu.Unlock()
	if err := mt.rt.sh.createRequest(&r); err != nil {
		return "", err
	}
	mt.mu.Lock()
	mt.lastPlan, mt.planApproved = r.ID, false
	mt.mu.Unlock()
	if mt.status() != protocol.MemberWorking && mt.status() != protocol.MemberRevising {
		if err := mt.setStatus(protocol.MemberWorking, "writing a plan"); err != nil {
			return "", err
		}
	}
	mt.mu.Lock()
	mt.rec.RequestID = r.ID
	mt.rec.Counters.Plans++
	mt.mu.Unlock()
	if err := mt.setStatus(protocol.MemberAwaitingApproval, "waiting for approval of "+r.ID); err != nil {
		return "", err
	}
	m := protocol.NewMessage(protocol.TypePlanApprovalRequest, name, protocol.Lead)
	m.RequestID, m.Plan = r.ID, plan
	if err := mt.rt.sh.appendTo(protocol.Lead, &m); err != nil {
		return "", err
	}
	return r.ID, nil
}

// awaitPlan blocks until the plan request id is final (the plan gate: no
// step runs meanwhile) and returns the final record.
//
// It polls nothing: it looks again when poked (mt.wake) — by the decision's
// line in the inbox (planDecided), by the runtime's expiry, or by the
// runtime's watch on requests/ when a decision file (or the record) is
// written by any process, lines or not (watch.go).
func (mt *mate) awaitPlan(ctx context.Context, id string) (*protocol.Request, error) {
	mt.rt.awaitingPlan(id, mt)
	defer mt.rt.notAwaiting(id, mt)
	for {
		r, err := mt.rt.sh.decided(id)
		var ce *store.CorruptError
		if errors.As(err, &ce) {
			// A corrupt record does not end the teammate: it says so, acts
			// on the decision if there is one, and otherwise keeps waiting
			// (someone may repair the record).
			mt.rt.reportCorrupt(ce)
			if mt.status() == protocol.MemberAwaitingApproval {
				_ = mt.setStatus(protocol.MemberAwaitingApproval, fmt.Sprintf("waiting for approval of %s (%s is corrupt)", id, ce.File))
			}
			r, err = &protocol.Request{ID: id, Status: protocol.RequestPending}, nil
			if d, ok := mt.rt.sh.fromDecision(id); ok {
				r = d
			}
		}
		if err != nil {
			return nil, err
		}
		if r.Status.IsTerminal() {
			return r, nil
		}
		if mt.stopping() {
			return nil, errStopped
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-mt.wake:
		}
	}
}

// errStopped ends a run whose shutdown was approved.
var errStopped = errors.New("shutdown approved")

// writeMove writes a teammate's record and, when its status moved, the
// line of its history, holding one of the runtime's write slots. Called
// under the mate's writeMu: the history is in the order of the moves.
func (mt *mate) writeMove(rec *protocol.Member, moved bool) error {
	rt := mt.rt
	if rt.leaseLost(rec.Name) {
		return nil // another runtime runs it now, and writes its record
	}
	rt.takeSlot()
	defer rt.giveSlot()
	if err := rt.sh.writeMember(rec); err != nil {
		return err
	}
	if moved {
		var earlier []*protocol.Member
		if mt.firstMove != nil {
			earlier = append(earlier, mt.firstMove)
			mt.firstMove = nil
		}
		if err := appendStatusHistory(rt.dir, rec, earlier...); err != nil {
			rt.emit(Event{"event": "error", "member": rec.Name, "error": err.Error()})
		}
	}
	return nil
}

// writeSlots is how many teammates write their records at once. A write
// blocks its thread in the kernel, and the Go runtime gives each blocked
// goroutine a thread of its own, which it keeps for the life of the
// process (about 50 KiB of stacks each): a thousand teammates moving at
// once would leave hundreds of threads behind, and contend for the same
// directory's lock in the kernel anyway.
const writeSlots = 4

// takeSlot waits for a write slot; giveSlot gives it back.
func (rt *Runtime) takeSlot() { rt.slots <- struct{}{} }

func (rt *Runtime) giveSlot() { <-rt.slots }
