package supervisor

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"huddle/protocol"
	"huddle/team"
)

// runScript runs a scripted teammate's steps until its shutdown is approved
// or the runtime stops. prev is the record of its previous run, if any: a
// teammate that was waiting on a plan resumes waiting on the same request.
//
// Its own frame holds only the loop and the waits; a step runs in
// scriptStep, whose frame is gone by the time the teammate waits. A
// waiting teammate's goroutine then uses little enough of its stack for
// the garbage collector to shrink it to 4 KiB (from 8 KiB): a thousand
// teammates waiting cost 4 MB less.
func (mt *mate) runScript(ctx context.Context, prev *protocol.Member) error {
	sr, err := mt.startScript(prev)
	if err != nil {
		return err
	}
	for {
		wait, forever, err := mt.scriptStep(ctx, sr)
		switch {
		case err != nil:
			return err
		case forever:
			return waitStopped(ctx, mt.stop)
		case wait > 0:
			if err := sleep(ctx, mt.stop, wait); err != nil {
				return err
			}
		}
	}
}

// scriptRun is where a scripted teammate is in its steps.
type scriptRun struct {
	steps    []team.Step
	i        int
	resumeID string
	rng      *rand.Rand
}

// jitter is d give or take 20%.
func (sr *scriptRun) jitter(d team.Duration) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*sr.rng.Float64()))
}

// startScript finds where the teammate starts (resumeAt) and says it is
// working.
func (mt *mate) startScript(prev *protocol.Member) (*scriptRun, error) {
	spec := mt.spec.Runtime
	sr := &scriptRun{steps: spec.Steps, rng: rand.New(rand.NewPCG(uint64(spec.Seed), uint64(len(mt.spec.Name))))}
	sr.i, sr.resumeID = resumeAt(prev, spec.Steps)
	mt.mu.Lock()
	mt.rec.Step = sr.i
	mt.mu.Unlock()
	if err := mt.setStatus(protocol.MemberWorking, "starting"); err != nil {
		return nil, err
	}
	return sr, nil
}

// scriptStep runs the teammate's next step, but for the waiting itself: a
// wait step returns how long to wait; the end of the script returns
// forever (idle until asked to stop).
func (mt *mate) scriptStep(ctx context.Context, sr *scriptRun) (wait time.Duration, forever bool, err error) {
	if mt.stopping() {
		return 0, false, errStopped
	}
	if err := ctx.Err(); err != nil {
		return 0, false, err
	}
	if sr.i >= len(sr.steps) {
		// The script has run out: idle until asked to stop.
		if err := mt.setStatus(protocol.MemberIdle, "done"); err != nil {
			return 0, false, err
		}
		return 0, true, nil
	}
	// The step is on disk before it runs: a restart resumes here and
	// repeats none of the steps before it.
	if err := mt.setStep(sr.i); err != nil {
		return 0, false, err
	}
	st := &sr.steps[sr.i]
	kind, _ := st.Kind()
	switch kind {
	case "plan":
		err = mt.planStep(ctx, st.Plan, sr.resumeID)
		sr.resumeID = ""
	case "work":
		err = mt.workStep(ctx, sr.jitter(st.Work), st.Activity)
	case "say":
		err = mt.sayStep(st.Say, st.Text)
	case "call":
		err = mt.callStep(ctx, *st)
	case "wait":
		if err = mt.setStatus(protocol.MemberIdle, "waiting"); err == nil {
			wait = sr.jitter(st.Wait)
		}
	case "loop":
		sr.i = 0
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	sr.i++
	return wait, false, nil
}

// waitStopped waits until ctx ends or a shutdown is approved.
func waitStopped(ctx context.Context, stop <-chan struct{}) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-stop:
		return errStopped
	}
}

// resumeAt is where a scripted teammate starts, given the record of its
// previous run: where that run was, if the runtime died under it (its
// record is not final), still waiting on the same plan request if it was;
// otherwise (a first run, or one that ended) at the first step.
func resumeAt(prev *protocol.Member, steps []team.Step) (step int, planID string) {
	if prev == nil || prev.Status.IsTerminal() || prev.Step < 0 || prev.Step > len(steps) {
		return 0, ""
	}
	waiting := prev.Status == protocol.MemberAwaitingApproval || prev.Status == protocol.MemberRevising
	if waiting && prev.RequestID != "" && prev.Step < len(steps) && steps[prev.Step].Plan != "" {
		return prev.Step, prev.RequestID
	}
	return prev.Step, ""
}

// setStep records that step i is the one running (or next, once a plan is
// approved), on disk.
func (mt *mate) setStep(i int) error {
	mt.mu.Lock()
	if mt.rec.Step == i {
		mt.mu.Unlock()
		return nil
	}
	mt.rec.Step = i
	mt.mu.Unlock()
	return mt.write()
}

// planStep submits a plan and holds the gate until it is approved; on a
// rejection it revises the plan with the feedback and submits it again.
func (mt *mate) planStep(ctx context.Context, plan, resumeID string) error {
	id := resumeID
	for {
		if id == "" {
			var err error
			if id, err = mt.submitPlan(plan); err != nil {
				return err
			}
		} else if mt.status() != protocol.MemberAwaitingApproval {
			if err := mt.setStatus(protocol.MemberAwaitingApproval, "waiting for approval of "+id); err != nil {
				return err
			}
		}
		r, err := mt.awaitPlan(ctx, id)
		if err != nil {
			return err
		}
		mt.mu.Lock()
		mt.rec.RequestID = ""
		if r.Status == protocol.RequestApproved {
			// Past the plan in the same write as the approval: a restart
			// resumes after it, and never submits the plan again.
			mt.rec.Step++
		}
		mt.mu.Unlock()
		switch r.Status {
		case protocol.RequestApproved:
			return mt.setStatus(protocol.MemberWorking, "plan approved")
		case protocol.RequestCancelled:
			if mt.stopping() {
				return errStopped
			}
			fallthrough
		default: // rejected or expired: revise and ask again
			feedback := r.Feedback
			if r.Status != protocol.RequestRejected {
				feedback = fmt.Sprintf("(%s: %s)", r.Status, r.ResponseReason)
			}
			if err := mt.setStatus(protocol.MemberRevising, "revising: "+feedback); err != nil {
				return err
			}
			plan = plan + "\n\nRevised after feedback: " + feedback
			id = ""
		}
	}
}

// workStep works for d. It is the one step a reject_while_working teammate
// refuses to be stopped in; an approved shutdown lets it finish.
func (mt *mate) workStep(ctx context.Context, d time.Duration, activity string) error {
	if err := mt.setStatus(protocol.MemberWorking, activity); err != nil {
		return err
	}
	mt.inWork.Store(true)
	defer mt.inWork.Store(false)
	return sleep(ctx, nil, d)
}

func (mt *mate) sayStep(to, text string) error {
	if to == "*" {
		n, err := mt.rt.sh.broadcast(mt.rt.team, mt.spec.Name, text)
		mt.count(func(c *protocol.Counters) { c.Sent += n })
		return err
	}
	if err := mt.rt.sh.send(mt.rt.team, mt.spec.Name, to, text); err != nil {
		return err
	}
	mt.count(func(c *protocol.Counters) { c.Sent++ })
	return nil
}

// callStep makes a call and waits for its answer (or its deadline); the
// answer, whatever it is, is in the trace and the events, and the script
// goes on.
func (mt *mate) callStep(ctx context.Context, st team.Step) error {
	if err := mt.setStatus(protocol.MemberWorking, fmt.Sprintf("calling %s.%s", st.Call, st.Action)); err != nil {
		return err
	}
	mt.call(ctx, protocol.InvocationRequest{Target: st.Call, Action: st.Action, Prompt: st.Prompt, TimeoutSec: st.TimeoutSec})
	return ctx.Err()
}

// sleep waits for d, or until ctx ends, or (when stop is not nil) until a
// shutdown is approved.
func sleep(ctx context.Context, stop <-chan struct{}, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-stop:
		return errStopped
	case <-t.C:
		return nil
	}
}
