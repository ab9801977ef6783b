package serve

import (
	"context"
	"fmt"
	"strings"
	"time"

	"huddle/ipc/a2a"
	"huddle/protocol"
	"huddle/store"
)

// A2ABackend runs A2A tasks on the team: each task is one invocation, as
// huddle serve's, behind the plan gate of its member. A task for a member
// whose plan waits for the lead waits too (INPUT_REQUIRED, with the plan)
// before its invocation is sent, and while the member revises; the
// invocation then runs, and a plan the member submits meanwhile makes
// the task INPUT_REQUIRED again until the lead decides it. No caller,
// machine or person, decides a plan through a task.
type A2ABackend struct {
	*ServeBackend
	st store.Store
}

// NewA2ABackend is the A2A backend of the team b serves.
func NewA2ABackend(b *ServeBackend, st store.Store) *A2ABackend {
	return &A2ABackend{ServeBackend: b, st: st}
}

// Skills lists the skills as the Agent Card shows them.
func (b *A2ABackend) Skills() []a2a.Skill {
	var out []a2a.Skill
	for _, sk := range b.ServeBackend.Skills() {
		member, _, _ := strings.Cut(sk.ID, ".")
		out = append(out, a2a.Skill{ID: sk.ID, Name: sk.ID, Description: sk.Description, Tags: []string{"huddle", member}})
	}
	return out
}

// Run runs req behind its member's plan gate, telling the task where it
// stands.
func (b *A2ABackend) Run(ctx context.Context, req protocol.InvocationRequest, tell func(a2a.Progress)) protocol.InvocationResult {
	start := time.Now()
	if req.TimeoutSec <= 0 {
		req.TimeoutSec = b.policy.DefaultTimeoutSec
	}
	g, err := b.watchGate(ctx, req.Target, tell)
	if err != nil {
		return protocol.Fail(&req, 0, protocol.ErrIPC, "following "+req.Target+"'s plan: "+err.Error(), nil)
	}
	defer g.stop()
	if ended := g.wait(ctx, &req, time.Duration(req.TimeoutSec)*time.Second); ended != nil {
		ended.DurationMS = time.Since(start).Milliseconds()
		return *ended
	}
	type done struct{ res protocol.InvocationResult }
	out := make(chan done, 1)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { out <- done{b.Call(cctx, req)} }()
	for {
		select {
		case d := <-out:
			return d.res
		case <-g.changed:
			g.follow()
		}
	}
}

// gate follows one member's record and plans for a task.
type gate struct {
	b       *A2ABackend
	ctx     context.Context
	member  string
	tell    func(a2a.Progress)
	changed chan struct{}
	sub     store.Subscription
	// told is the plan the task was last told to wait on ("" none).
	told string
}

func (b *A2ABackend) watchGate(ctx context.Context, member string, tell func(a2a.Progress)) (*gate, error) {
	g := &gate{b: b, ctx: ctx, member: member, tell: tell, changed: make(chan struct{}, 1)}
	sub, err := b.st.Watch(ctx, func(c store.Change) {
		if c.Name == "" || c.Kind == store.ChangeRequest || c.Name == member {
			select {
			case g.changed <- struct{}{}:
			default:
			}
		}
	}, store.ChangeMember, store.ChangeRequest)
	if err != nil {
		return nil, err
	}
	g.sub = sub
	return g, nil
}

func (g *gate) stop() { _ = g.sub.Stop() }

// state reads where the member's plan stands: the plan of the member that
// waits for the lead (nil none; the newest when a foreign writer left
// several), and whether the member is revising one. The pending plan is
// read from the requests, not from the member's record alone: the record
// says awaiting_approval a moment after the plan is made.
func (g *gate) state() (waiting *a2a.Plan, revising bool) {
	live, _, err := g.b.st.LiveRequests(g.ctx)
	if err == nil {
		var newest *protocol.Request
		for i := range live {
			r := &live[i]
			if r.Kind == protocol.KindPlan && r.From == g.member && r.Status == protocol.RequestPending &&
				(newest == nil || r.Created.After(newest.Created)) {
				newest = r
			}
		}
		if newest != nil {
			p := &a2a.Plan{RequestID: newest.ID, Member: newest.From, Plan: newest.Plan, Revises: newest.Revises,
				Created: newest.Created, Deadline: newest.Deadline}
			if newest.Revises != "" {
				if prev, err := g.b.st.Request(g.ctx, newest.Revises); err == nil {
					p.Feedback = prev.Feedback
				}
			}
			return p, false
		}
	}
	rec, err := g.b.st.Member(g.ctx, g.member, store.RecordOnly)
	if err != nil {
		return nil, false // no record (not run, or a target): no gate
	}
	// Revising, or awaiting a plan decided this instant (the record
	// follows): a new plan, or working, comes next.
	return nil, rec.Status == protocol.MemberRevising || rec.Status == protocol.MemberAwaitingApproval
}

// follow tells the task the member's plan as it stands now: a plan that
// waits (INPUT_REQUIRED), or the decision of the one it waited on
// (WORKING again).
func (g *gate) follow() (waiting bool, revising bool) {
	p, rev := g.state()
	switch {
	case p != nil:
		if g.told != p.RequestID {
			if g.told != "" {
				// The plan the task waited on was decided and a newer one
				// came before this read: the decision is told first, so
				// every plan's end is on the task, however fast the next.
				g.tell(a2a.Progress{Note: g.decision(g.told)})
			}
			g.told = p.RequestID
			g.tell(a2a.Progress{Plan: p})
		}
		return true, false
	case g.told != "":
		g.tell(a2a.Progress{Note: g.decision(g.told)})
		g.told = ""
	}
	return false, rev
}

// decision says how the plan id ended.
func (g *gate) decision(id string) string {
	r, err := g.b.st.Request(g.ctx, id)
	if err != nil {
		return "plan " + id + " was decided"
	}
	switch r.Status {
	case protocol.RequestApproved:
		return fmt.Sprintf("%s's plan %s approved by %s", r.From, id, r.ResolvedBy)
	case protocol.RequestRejected:
		return fmt.Sprintf("%s's plan %s rejected by %s: %s; %s revises it", r.From, id, r.ResolvedBy, r.Feedback, r.From)
	}
	return fmt.Sprintf("%s's plan %s %s: %s", r.From, id, r.Status, r.ResponseReason)
}

// wait holds the invocation while the member's plan waits for the lead or
// the member revises one; the decision of a plan the task waited on is
// told as it comes. A revision that gives no new plan within limit ends
// the task TIMEOUT, a task cancelled meanwhile IPC_ERROR: wait returns
// that result, or nil to go on.
func (g *gate) wait(ctx context.Context, req *protocol.InvocationRequest, limit time.Duration) *protocol.InvocationResult {
	var revising *time.Timer
	defer func() {
		if revising != nil {
			revising.Stop()
		}
	}()
	for {
		waiting, rev := g.follow()
		if !waiting && !rev {
			return nil
		}
		var expire <-chan time.Time
		switch {
		case rev && revising == nil:
			revising = time.NewTimer(limit)
			expire = revising.C
		case rev:
			expire = revising.C
		case revising != nil:
			revising.Stop()
			revising = nil
		}
		select {
		case <-g.changed:
		case <-expire:
			res := protocol.Fail(req, 0, protocol.ErrTimeout,
				fmt.Sprintf("TIMEOUT: %s was revising its plan and submitted none within %ds", req.Target, req.TimeoutSec),
				map[string]any{"timeout_sec": req.TimeoutSec, "reason": "revising"})
			return &res
		case <-ctx.Done():
			res := protocol.Fail(req, 0, protocol.ErrIPC, "the call was cancelled: "+ctx.Err().Error(), nil)
			return &res
		}
	}
}
