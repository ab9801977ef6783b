package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"huddle/ipc"
	"huddle/ipc/a2a"
	"huddle/ipc/blueprint"
	"huddle/protocol"
	"huddle/store"
	"huddle/team"
)

// invocations is the runtime's part of the invocation layer: one Caller per
// member (its policy), one Router for the answers that come back to the
// members' inboxes, and the targets that names resolve to.
type invocations struct {
	router  *ipc.Router
	mu      sync.Mutex
	callers map[string]*ipc.Caller
	// pending counts the calls under way, by caller and in all: no agent
	// can have more than callsPerCaller at once, nor the team more than
	// callsPerTeam (reserveCall).
	pending map[string]int
	total   int
}

// The most calls under way at once, for one caller and for the team; a
// call past either is answered IPC_ERROR at once, its details saying
// busy, and nothing is started for it.
const (
	callsPerCaller = 64
	callsPerTeam   = 1024
)

// reserveCall takes a place for one call of member, and returns the func
// that gives it back; or, when there is none, why (the busy answer).
func (rt *Runtime) reserveCall(member string) (release func(), busy string) {
	inv := &rt.inv
	inv.mu.Lock()
	defer inv.mu.Unlock()
	switch {
	case inv.pending[member] >= callsPerCaller:
		return nil, fmt.Sprintf("busy: %s has %d calls under way, the most one caller may; call again once one is answered", member, callsPerCaller)
	case inv.total >= callsPerTeam:
		return nil, fmt.Sprintf("busy: the team has %d calls under way, the most it may; call again once one is answered", callsPerTeam)
	}
	if inv.pending == nil {
		inv.pending = map[string]int{}
	}
	inv.pending[member]++
	inv.total++
	var once sync.Once
	return func() {
		once.Do(func() {
			inv.mu.Lock()
			defer inv.mu.Unlock()
			if inv.pending[member]--; inv.pending[member] == 0 {
				delete(inv.pending, member)
			}
			inv.total--
		})
	}, ""
}

// busyResult is the answer to a call past the bounds (reserveCall).
func busyResult(req *protocol.InvocationRequest, why string) protocol.InvocationResult {
	if req.RequestID == "" {
		req.RequestID = protocol.NewInvocationID()
	}
	if req.CorrelationID == "" {
		req.CorrelationID = protocol.NewCorrelationID()
	}
	return protocol.Fail(req, 0, protocol.ErrIPC, why, map[string]any{"busy": true})
}

// memberInboxes are the teammates' records and inboxes a resolver reads
// and writes (shared).
type memberInboxes interface {
	loadMember(name string) (*protocol.Member, error)
	appendTo(member string, m *protocol.Message) error
}

// resolverFor resolves the names of team t: a member with a target goes
// there; any other member is a teammate reached through its inbox, unless
// its run is over (stopped or crashed): then it is not available. sh holds
// the teammates' records and inboxes; an exec target's relative dir is
// under dir.
func resolverFor(dir string, t *team.Team, router *ipc.Router, sh memberInboxes) ipc.Resolver {
	return func(name string) (ipc.Target, string) {
		spec, ok := t.Member(name)
		if !ok {
			return nil, "is not a member of team " + t.Name
		}
		if tg := spec.Target; tg != nil && tg.Kind == team.TargetExec {
			cwd := spec.Dir
			if cwd != "" && !filepath.IsAbs(cwd) {
				cwd = filepath.Join(dir, cwd)
			}
			return ipc.ExecTarget{Command: tg.Command, Dir: cwd}, ""
		}
		if tg := spec.Target; tg != nil && tg.Kind == team.TargetHTTP && tg.Protocol == team.ProtocolA2A {
			c := &a2a.Client{URL: tg.URL}
			if tg.APIKeyEnv != "" {
				c.APIKey = os.Getenv(tg.APIKeyEnv)
			}
			return a2a.Target{Client: c, Skill: tg.Skill}, ""
		}
		if tg := spec.Target; tg != nil && tg.Kind == team.TargetHTTP {
			c := &blueprint.Client{BaseURL: strings.TrimRight(tg.URL, "/")}
			if tg.APIKeyEnv != "" {
				c.APIKey = os.Getenv(tg.APIKeyEnv)
			}
			return blueprint.Target{Client: c, Skill: tg.Skill}, ""
		}
		if rec, err := sh.loadMember(name); err == nil && rec.Status.IsTerminal() {
			return nil, fmt.Sprintf("is not available: it is %s", rec.Status)
		}
		return ipc.InboxTarget{TeamDir: dir, Name: name, Router: router, Append: sh.appendTo}, ""
	}
}

// MemberPolicy loads the policy of a member of t from the file team.json
// names, or says why there is none.
func MemberPolicy(dir string, t *team.Team, member string) (*ipc.Policy, error) {
	spec, _ := t.Member(member)
	path := spec.PolicyPath(dir)
	if path == "" {
		return nil, fmt.Errorf("IPC_ERROR: %s has no %s (set \"ipc\" or \"dir\" in team.json)", member, ipc.ConfigFile)
	}
	p, err := ipc.LoadPolicy(path)
	if err != nil {
		return nil, fmt.Errorf("IPC_ERROR: %s: %w", member, err)
	}
	return p, nil
}

// memberPolicy is member's policy: from the team directory, or, for a team
// in a store, from the store when it holds one (onStorePolicy).
func (rt *Runtime) memberPolicy(member string) (*ipc.Policy, error) {
	if p, found, err := rt.storePolicy(member); found {
		return p, err
	}
	return MemberPolicy(rt.dir, rt.team, member)
}

func (rt *Runtime) caller(member string) *ipc.Caller {
	rt.inv.mu.Lock()
	defer rt.inv.mu.Unlock()
	c, ok := rt.inv.callers[member]
	if !ok {
		policy, policyErr := rt.memberPolicy(member)
		c = &ipc.Caller{Policy: policy, PolicyErr: policyErr, AppendSpan: rt.sh.appendSpan}
		c.Resolve = resolverFor(rt.dir, rt.team, rt.inv.router, rt.sh)
		c.OnSpanError = func(err error) { rt.emit(Event{"event": "error", "member": member, "error": err.Error()}) }
		rt.inv.callers[member] = c
	}
	return c
}

// call makes a call as member, within the bounds (reserveCall), and
// reports it in the events.
func (mt *mate) call(ctx context.Context, req protocol.InvocationRequest) protocol.InvocationResult {
	release, busy := mt.rt.reserveCall(mt.spec.Name)
	if busy != "" {
		return mt.refuseCall(req, busy)
	}
	defer release()
	return mt.callReserved(ctx, req)
}

// refuseCall answers a call past the bounds, and says so in the events.
func (mt *mate) refuseCall(req protocol.InvocationRequest, why string) protocol.InvocationResult {
	req.Caller = mt.spec.Name
	res := busyResult(&req, why)
	mt.rt.emit(Event{"event": "call", "member": mt.spec.Name, "target": req.Target, "action": req.Action,
		"request_id": res.RequestID, "correlation_id": res.CorrelationID, "status": res.Status, "code": string(protocol.ErrIPC), "error": why})
	return res
}

// callReserved is call once its place is taken.
func (mt *mate) callReserved(ctx context.Context, req protocol.InvocationRequest) protocol.InvocationResult {
	req.Caller = mt.spec.Name
	mt.count(func(c *protocol.Counters) { c.Calls++ })
	res := mt.rt.caller(mt.spec.Name).Call(ctx, req)
	e := Event{"event": "call", "member": mt.spec.Name, "target": req.Target, "action": req.Action,
		"request_id": res.RequestID, "correlation_id": res.CorrelationID, "status": res.Status, "duration_ms": res.DurationMS}
	if res.Error != nil {
		e["code"] = string(res.Error.Code)
		e["error"] = res.Error.Message
	}
	mt.rt.emit(e)
	return res
}

// invoked handles an invocation_request in this member's inbox.
func (mt *mate) invoked(ctx context.Context, d store.Delivery) error {
	req := *d.Msg.Invocation
	if req.Target != mt.spec.Name {
		mt.rt.deadLetter(mt.spec.Name, d, fmt.Sprintf("invocation for %q in the inbox of %q", req.Target, mt.spec.Name))
		return nil
	}
	if mt.proc != nil {
		mt.remember(req)
		return mt.forward(ctx, d)
	}
	// Answer off the inbox loop: an action may take its time or call onward.
	// The caller may cancel it (invocation_cancel), which cancels the
	// onward calls too.
	ctx, cancel := context.WithCancel(mt.rt.ctx)
	mt.mu.Lock()
	if mt.answering == nil {
		mt.answering = map[string]answering{}
	}
	mt.answering[req.RequestID] = answering{caller: req.Caller, cancel: cancel}
	mt.mu.Unlock()
	mt.rt.wg.Add(1)
	go func() {
		defer mt.rt.wg.Done()
		defer func() {
			mt.mu.Lock()
			delete(mt.answering, req.RequestID)
			mt.mu.Unlock()
			cancel()
		}()
		if mt.llm != nil && mt.llm.thinker != nil {
			mt.reply(req, mt.answerLLM(ctx, req))
			return
		}
		mt.reply(req, mt.answerAction(ctx, req))
	}()
	return nil
}

// answering is an invocation a scripted member is answering.
type answering struct {
	caller string
	cancel context.CancelFunc
}

// cancelled stops the answer to an invocation whose caller gave up.
func (mt *mate) cancelled(ctx context.Context, d store.Delivery) error {
	id := d.Msg.RequestID
	if mt.proc != nil {
		return mt.forward(ctx, d) // an exec member decides itself
	}
	mt.mu.Lock()
	a, ok := mt.answering[id]
	mt.mu.Unlock()
	switch {
	case !ok:
		return nil // already answered: nothing to stop
	case a.caller != d.Msg.From:
		mt.rt.deadLetter(mt.spec.Name, d, fmt.Sprintf("invocation_cancel for %s from %s; only its caller %s cancels it", id, d.Msg.From, a.caller))
		return nil
	}
	a.cancel()
	mt.rt.emit(Event{"event": "invocation_cancelled", "member": mt.spec.Name, "request_id": id, "by": d.Msg.From})
	return nil
}

// answerAction runs one of the member's actions.
func (mt *mate) answerAction(ctx context.Context, req protocol.InvocationRequest) protocol.InvocationResult {
	start := time.Now()
	spec, ok := mt.spec.Actions[req.Action]
	if !ok {
		names := make([]string, 0, len(mt.spec.Actions))
		for n := range mt.spec.Actions {
			names = append(names, n)
		}
		return protocol.Fail(&req, 0, protocol.ErrIPC, fmt.Sprintf("%s has no action %q", mt.spec.Name, req.Action),
			map[string]any{"action": req.Action, "actions": names})
	}
	if err := sleep(ctx, nil, time.Duration(spec.Delay)); err != nil {
		return protocol.Fail(&req, time.Since(start).Milliseconds(), protocol.ErrIPC, "cancelled before answering", nil)
	}
	reply := map[string]any{"summary": spec.Reply}
	if c := spec.Call; c != nil {
		prompt := c.Prompt
		if prompt == "" {
			prompt = req.Prompt
		}
		onward := mt.call(ctx, protocol.InvocationRequest{
			CorrelationID: req.CorrelationID, ParentRequestID: req.RequestID, Hop: req.Hop + 1,
			Target: c.Target, Action: c.Action, Prompt: prompt, TimeoutSec: c.TimeoutSec,
		})
		folded := map[string]any{"status": onward.Status}
		if onward.Error != nil {
			folded["error"] = onward.Error.Code
			folded["message"] = onward.Error.Message
		} else {
			var out any
			if json.Unmarshal(onward.Result, &out) == nil {
				folded["result"] = out
			}
		}
		reply["onward"] = map[string]any{c.Target + "." + c.Action: folded}
	}
	res, err := protocol.OK(&req, time.Since(start).Milliseconds(), reply)
	if err != nil {
		return protocol.Fail(&req, 0, protocol.ErrIPC, err.Error(), nil)
	}
	return res
}

// reply sends a result to the caller's inbox. A result too large for an
// inbox line reaches the caller at once as IPC_ERROR naming its size, not
// as a TIMEOUT at the deadline.
func (mt *mate) reply(req protocol.InvocationRequest, res protocol.InvocationResult) {
	m := protocol.NewMessage(protocol.TypeInvocationResult, mt.spec.Name, req.Caller)
	m.Result = &res
	err := mt.rt.sh.appendTo(req.Caller, &m)
	if errors.Is(err, protocol.ErrTooLarge) {
		fail := tooLarge(&req, &m)
		m.Result = &fail
		err = mt.rt.sh.appendTo(req.Caller, &m)
	}
	if err != nil {
		mt.rt.emit(Event{"event": "error", "member": mt.spec.Name, "error": fmt.Sprintf("answering %s: %v", req.RequestID, err)})
	}
}

// tooLarge is the IPC_ERROR result that replaces an answer m too large for
// an inbox line (docs/ARCHITECTURE.md, "Bounds").
func tooLarge(req *protocol.InvocationRequest, m *protocol.Message) protocol.InvocationResult {
	size := 0
	if b, err := protocol.Encode(m); err == nil {
		size = len(b) + 1
	}
	msg := fmt.Sprintf("IPC_ERROR: the answer of %s is %d bytes, over the %d-byte limit of an inbox line", m.From, size, protocol.MaxLine)
	return protocol.Fail(req, m.Result.DurationMS, protocol.ErrIPC, msg,
		map[string]any{"reason": "answer_too_large", "bytes": size, "max_bytes": protocol.MaxLine})
}

// resultArrived hands an invocation_result in this member's inbox to the
// call waiting for it, as every consumer and observer of an inbox does
// (ipc.Router.Take).
func (mt *mate) resultArrived(d store.Delivery) error {
	mt.rt.inv.router.Take(d.Msg)
	return nil
}

// remember keeps the invocations an exec member received until it answers
// them, to check its answers and to answer for it when it answers wrong.
// Their ids are in its record (Open), so that a restarted runtime gives
// them to the new process.
func (mt *mate) remember(req protocol.InvocationRequest) {
	mt.mu.Lock()
	if mt.received == nil {
		mt.received = map[string]protocol.InvocationRequest{}
	}
	_, known := mt.received[req.RequestID]
	mt.received[req.RequestID] = req
	if !known {
		// A new slice each time: a copy of the record being written may
		// still hold the old one.
		mt.rec.Open = append(slices.Clip(mt.rec.Open), req.RequestID)
	}
	mt.mu.Unlock()
	if !known {
		mt.writeOrSay()
	}
}

func (mt *mate) forget(id string) (protocol.InvocationRequest, bool) {
	mt.mu.Lock()
	req, ok := mt.received[id]
	delete(mt.received, id)
	if ok {
		mt.rec.Open = slices.DeleteFunc(slices.Clone(mt.rec.Open), func(o string) bool { return o == id })
	}
	mt.mu.Unlock()
	if ok {
		mt.writeOrSay()
	}
	return req, ok
}

// writeOrSay writes the teammate's record; an error is said in the events
// (the record is rewritten at the next change).
func (mt *mate) writeOrSay() {
	if err := mt.write(); err != nil {
		mt.rt.emit(Event{"event": "error", "member": mt.spec.Name, "error": err.Error()})
	}
}
