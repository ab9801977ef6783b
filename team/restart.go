package team

import (
	"context"
	"errors"
	"fmt"

	"huddle/protocol"
	"huddle/store"
)

// ErrNotRunning is returned by RequestRestart when no runtime runs the team.
var ErrNotRunning = errors.New("no runtime runs the team")

// Restartable refuses a restart of member that t does not name or that
// huddle does not run.
func Restartable(t *Team, member string) error {
	spec, ok := t.Member(member)
	if !ok {
		return fmt.Errorf("no member %q in team %s", member, t.Name)
	}
	if !spec.RunByHuddle() {
		return fmt.Errorf("%s is not run by huddle (runtime %q)", member, spec.Runtime.Kind)
	}
	return nil
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
	t, err := LoadFrom(ctx, st)
	if err != nil {
		return nil, err
	}
	if err := Restartable(t, member); err != nil {
		return nil, err
	}
	_, onDir := st.(RuntimeLocker)
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
