package supervisor

import (
	"errors"
	"fmt"

	"huddle/protocol"
	"huddle/teamdir"
)

// Restarting a member (huddle restart, the UI's R): the CLI asks the store
// (store.Store.AskRestart: on a team directory it writes restart/<member>),
// and the runtime that runs the member, woken by the store's watch, takes
// the ask and runs the member again if it is stopped or crashed. An ask it
// refuses is dead-lettered with source restart/<member> and the reason. No
// runtime, no restart: the next huddle up starts every member anyway, and
// drops the asks left.

// restart runs member name again in this runtime, if huddle runs it and its
// run is over (stopped or crashed). The new run takes the member's inbox
// from where the old one stopped; a message the old process could not take
// goes to the new one.
func (rt *Runtime) restart(name string) error {
	if err := protocol.ValidateMemberName(name); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	if rt.ctx.Err() != nil {
		return errors.New("restart: the runtime is stopping")
	}
	spec, ok := rt.team.Member(name)
	if !ok {
		return fmt.Errorf("restart: no member %q in team %s", name, rt.team.Name)
	}
	if rt.leaseLost(name) {
		return fmt.Errorf("restart: %s runs elsewhere now (its lease was lost)", name)
	}
	old := rt.mate(name)
	if old == nil {
		return fmt.Errorf("restart: %s is not run by huddle (runtime %q)", name, spec.Runtime.Kind)
	}
	select {
	case <-old.finished:
	default:
		if !old.status().IsTerminal() {
			return fmt.Errorf("restart: %s is %s; only a stopped or crashed member is restarted", name, old.status())
		}
		// Its record says it ended, and its run is still cancelling what
		// was pending for it: a restart asked in that instant waits for
		// the run to be over rather than being refused.
		select {
		case <-old.finished:
		case <-rt.ctx.Done():
			return fmt.Errorf("restart: %w", rt.ctx.Err())
		}
	}
	if err := rt.run(rt.ctx, spec, false); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	close(old.replaced)
	rt.emit(Event{"event": "member_restarted", "member": name})
	return nil
}

// restartsAsked takes the asks (store.Store.AskRestart) of each member
// whose lease the runtime holds, those of names or, with all, every one,
// and runs each again; the store's watch says whose (watchStore). The ask
// goes first, so it is acted on once; a refused one is dead-lettered with
// source restart/<member> and why.
func (rt *Runtime) restartsAsked(names map[string]bool, all bool) {
	if !all && len(names) == 0 {
		return
	}
	if rt.local {
		// Every ask is this runtime's: one that names no member it runs is
		// taken and refused too.
		for name := range names {
			if name != "" && name != protocol.Lead {
				rt.takeRestart(name)
			}
		}
		if all {
			for _, name := range rt.runnable() {
				if !names[name] {
					rt.takeRestart(name)
				}
			}
		}
		return
	}
	for _, ml := range rt.heldLeases() {
		name := ml.name
		if name == protocol.Lead || ml.lost.Load() || (!all && !names[name]) {
			continue
		}
		rt.takeRestart(name)
	}
}

// takeRestart takes the ask of name, when there is one, and acts on it.
func (rt *Runtime) takeRestart(name string) {
	ctx, cancel := op()
	raw, err := rt.st.TakeRestart(ctx, name)
	cancel()
	if err != nil {
		rt.emit(Event{"event": "error", "member": name, "error": fmt.Sprintf("restart of %s: %v", name, err)})
		return
	}
	if raw == nil {
		return
	}
	if err := rt.restart(name); err != nil {
		if derr := rt.sh.deadLetter(teamdir.RestartDir+"/"+name, 0, err.Error(), raw); derr != nil {
			rt.emit(Event{"event": "error", "member": name, "error": derr.Error()})
		}
		rt.emit(Event{"event": "dead_letter", "member": name, "reason": err.Error()})
	}
}

// dropRestartAsked removes a restart of name asked before this runtime
// took its lease: the run it starts now is what was asked.
func (rt *Runtime) dropRestartAsked(name string) {
	ctx, cancel := op()
	defer cancel()
	if _, err := rt.st.TakeRestart(ctx, name); err != nil {
		rt.emit(Event{"event": "error", "member": name, "error": fmt.Sprintf("restart of %s: %v", name, err)})
	}
}
