package filestore

import (
	"context"
	"fmt"
	"sync"

	"huddle/store"
	"huddle/teamdir"
)

// The runtime of a team directory holds runtime.lock's flock for as long
// as it runs (teamdir.LockRuntime). Through this store it also takes its
// members' leases; under the flock no other runtime can run the
// directory, so those leases are the flock itself: granted at once, never
// expiring while it is held, and gone the instant the process dies, with
// no lease file written or renewed (docs/ARCHITECTURE.md, "The team
// directory and the store").

// runtimeHold is the flock this handle holds on runtime.lock, if any.
type runtimeHold struct {
	mu     sync.Mutex
	unlock func()
	held   bool
}

func (h *runtimeHold) holding() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.held
}

// LockRuntime takes runtime.lock's flock for this handle's runtime (the
// error says who holds it when another does); unlock gives it up. While
// it is held, AcquireLease grants every member's lease at once and
// Heartbeat has nothing to do: the flock says the members are alive.
func (s *Store) LockRuntime() (unlock func(), err error) {
	s.hold.mu.Lock()
	defer s.hold.mu.Unlock()
	if s.hold.held {
		return nil, fmt.Errorf("the runtime of %s is already this handle's", s.dir)
	}
	release, err := teamdir.LockRuntime(s.dir)
	if err != nil {
		return nil, err
	}
	s.hold.unlock, s.hold.held = release, true
	return func() {
		s.hold.mu.Lock()
		defer s.hold.mu.Unlock()
		if s.hold.held {
			s.hold.held = false
			s.hold.unlock()
		}
	}, nil
}

// flockLease is a member's lease while this handle holds runtime.lock.
type flockLease struct {
	s      *Store
	member string
}

func (l *flockLease) Renew(ctx context.Context) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if !l.s.hold.holding() {
		return fmt.Errorf("lease %s: runtime.lock released: %w", l.member, store.ErrLeaseLost)
	}
	return nil
}

// Release has nothing to give up: the flock goes with the runtime.
func (l *flockLease) Release(ctx context.Context) error { return ctxErr(ctx) }
