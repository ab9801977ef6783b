package team

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"huddle/protocol"
	"huddle/store"
	"huddle/teamdir"
)

// Restarting a member (huddle restart, the UI's R): the CLI writes
// restart/<member>, and the runtime that runs the team, woken by its watch
// on restart/, removes the file and runs the member again if it is stopped or crashed.
// A request it refuses is dead-lettered with source restart/<member> and
// the reason. The file is the whole protocol: no runtime, no restart (the
// next huddle up starts every member anyway, and removes what is left).

// ErrNotRunning is returned by RequestRestart when no runtime runs the team.
var ErrNotRunning = errors.New("no runtime runs the team")

// restartable refuses a restart of member that t does not name or that
// huddle does not run.
func restartable(t *Team, member string) error {
	spec, ok := t.Member(member)
	if !ok {
		return fmt.Errorf("no member %q in team %s", member, t.Name)
	}
	if !runByHuddle(spec) {
		return fmt.Errorf("%s is not run by huddle (runtime %q)", member, spec.Runtime.Kind)
	}
	return nil
}

// restartAsked runs when the runtime's watch reports a change in restart/:
// every restart/<member> asks for
// that member to run again. The file goes first, so a request is acted on
// once; a refused one is dead-lettered with why.
func (rt *Runtime) restartAsked() {
	entries, err := os.ReadDir(teamdir.RestartDirPath(rt.dir))
	if err != nil {
		return // none asked: no directory
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, teamdir.TempPrefix) || e.IsDir() {
			continue // a write in progress (Sweep removes what a crash left)
		}
		p := filepath.Join(teamdir.RestartDirPath(rt.dir), name)
		raw, _ := os.ReadFile(p)
		if err := os.Remove(p); err != nil {
			rt.emit(Event{"event": "error", "error": fmt.Sprintf("restart of %s: %v", name, err)})
			continue
		}
		if err := rt.restart(name); err != nil {
			if derr := rt.sh.deadLetter(teamdir.RestartDir+"/"+name, 0, err.Error(), raw); derr != nil {
				rt.emit(Event{"event": "error", "member": name, "error": derr.Error()})
			}
			rt.emit(Event{"event": "dead_letter", "member": name, "reason": err.Error()})
		}
	}
}

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
		return fmt.Errorf("restart: %s is %s; only a stopped or crashed member is restarted", name, old.status())
	}
	if err := rt.run(rt.ctx, spec, false); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	close(old.replaced)
	rt.emit(Event{"event": "member_restarted", "member": name})
	return nil
}

// restartsAskedOn is restartAsked on a store (store.Store.AskRestart): the
// runtime takes the ask of each member whose lease it holds, those of
// names or, with all, every one, and acts on it as on restart/<member>.
// The store's watch says whose (watchStore).
func (rt *Runtime) restartsAskedOn(names map[string]bool, all bool) {
	if !all && len(names) == 0 {
		return
	}
	for name, ml := range rt.leases {
		if name == protocol.Lead || ml.lost.Load() || (!all && !names[name]) {
			continue
		}
		ctx, cancel := op()
		raw, err := rt.opts.Store.TakeRestart(ctx, name)
		cancel()
		if err != nil {
			rt.emit(Event{"event": "error", "member": name, "error": fmt.Sprintf("restart of %s: %v", name, err)})
			continue
		}
		if raw == nil {
			continue
		}
		if err := rt.restart(name); err != nil {
			if derr := rt.sh.deadLetter(teamdir.RestartDir+"/"+name, 0, err.Error(), raw); derr != nil {
				rt.emit(Event{"event": "error", "member": name, "error": derr.Error()})
			}
			rt.emit(Event{"event": "dead_letter", "member": name, "reason": err.Error()})
		}
	}
}

// dropRestartAskedOn removes a restart of name asked before this runtime
// took its lease: the run it starts now is what was asked.
func (rt *Runtime) dropRestartAskedOn(name string) {
	ctx, cancel := op()
	defer cancel()
	if _, err := rt.opts.Store.TakeRestart(ctx, name); err != nil {
		rt.emit(Event{"event": "error", "member": name, "error": fmt.Sprintf("restart of %s: %v", name, err)})
	}
}

// RequestRestart asks the runtime that runs member, on any machine, to run
// it again. It checks what it can before asking — the member is huddle's
// to run, a runtime runs it, it is stopped or crashed (or lost) — and
// returns the member's record as it was, whose RunID changes when the
// runtime has restarted it (WaitMember). On a team directory the runtime
// is the one holding runtime.lock; on NATS the holder of the member's
// lease.
func RequestRestart(ctx context.Context, st store.Store, member string) (*protocol.Member, error) {
	if err := protocol.ValidateMemberName(member); err != nil {
		return nil, err
	}
	t, err := LoadTeamOn(ctx, st)
	if err != nil {
		return nil, err
	}
	if err := restartable(t, member); err != nil {
		return nil, err
	}
	_, onDir := st.(runtimeLocker)
	notRunning := fmt.Errorf("%w %s: no runtime holds the lease of %s ('huddle up --store' starts it)", ErrNotRunning, t.Name, member)
	if onDir {
		notRunning = fmt.Errorf("%w %s ('huddle up' starts every member)", ErrNotRunning, t.Name)
		if !RuntimeOf(ctx, st).Running {
			return nil, notRunning
		}
	}
	ms, err := st.Member(ctx, member, LostAfter)
	switch {
	case errors.Is(err, store.ErrNotFound) && onDir:
		return nil, fmt.Errorf("%s has no status record yet: %w", member, err)
	case errors.Is(err, store.ErrNotFound):
		return nil, notRunning // never run: no runtime took its lease
	case err != nil:
		return nil, fmt.Errorf("member %s: %w", member, err)
	}
	if !ms.Lost && !ms.Status.IsTerminal() {
		return nil, fmt.Errorf("%s is %s; only a stopped or crashed member is restarted", member, ms.Status)
	}
	err = st.AskRestart(ctx, member, protocol.Lead)
	switch {
	case errors.Is(err, store.ErrNoRuntime):
		return nil, notRunning
	case errors.Is(err, store.ErrExists):
		return nil, fmt.Errorf("a restart of %s is asked already, and the runtime that runs it has not taken it yet", member)
	case err != nil:
		return nil, err
	}
	rec := ms.Member
	return &rec, nil
}
