package supervisor

import (
	"time"

	"huddle/teamdir"
)

// The runtime sleeps while nothing happens: instead of a tick that lists
// the requests and the restarts asked, the store's watch (on a team
// directory, fsnotify on requests/ and restart/) tells it that a restart
// was asked or a request changed, and one timer wakes it at the next
// deadline (docs/ARCHITECTURE.md, "Wake-ups"). A lost event (an overflow
// of the kernel's queue) costs a full look, never a request.

// alarm is the runtime's one timer: armed for the earliest time something
// is due (a deadline, or a look at requests/ after they changed).
type alarm struct {
	t  *time.Timer
	at time.Time // zero: not armed
}

func newAlarm() *alarm {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &alarm{t: t}
}

// arm makes the alarm go off at at, unless it is armed earlier already;
// a zero at changes nothing.
func (a *alarm) arm(at time.Time) {
	if at.IsZero() || (!a.at.IsZero() && !at.Before(a.at)) {
		return
	}
	a.at = at
	a.t.Reset(time.Until(at))
}

// fired is called when the alarm went off: it is no longer armed.
func (a *alarm) fired() { a.at = time.Time{} }

// awaitingPlan registers mt as awaiting plan id, so that a decision
// written by any process wakes it; notAwaiting takes that back.
func (rt *Runtime) awaitingPlan(id string, mt *mate) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.awaiting[id] = mt
}

func (rt *Runtime) notAwaiting(id string, mt *mate) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.awaiting[id] == mt {
		delete(rt.awaiting, id)
	}
}

// wakeAwaiting pokes the teammate awaiting plan id, or every awaiting one
// when id is empty.
func (rt *Runtime) wakeAwaiting(id string) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if id != "" {
		if mt := rt.awaiting[id]; mt != nil {
			mt.poke()
		}
		return
	}
	for _, mt := range rt.awaiting {
		mt.poke()
	}
}

// heartbeat times the touches of runtime.lock. Its modification time is
// when the runtime was last seen alive; it matters to a pending request's
// deadline (after a kill -9 the next runtime gives back the time since,
// PausedSince) and to the line that says when the runtime was last seen.
// So the lock is touched every teamdir.HeartbeatEvery while a deadline
// counts, and every teamdir.HeartbeatIdleEvery otherwise.
type heartbeat struct {
	t    *time.Timer
	due  time.Time
	busy bool
}

func newHeartbeat() *heartbeat {
	h := &heartbeat{t: time.NewTimer(teamdir.HeartbeatIdleEvery)}
	h.due = time.Now().Add(teamdir.HeartbeatIdleEvery)
	return h
}

// counting says whether a deadline counts now; the next touch comes within
// HeartbeatEvery when one does.
func (h *heartbeat) counting(busy bool) {
	h.busy = busy
	if busy && time.Until(h.due) > teamdir.HeartbeatEvery {
		h.reset(teamdir.HeartbeatEvery)
	}
}

// beaten is called after a touch: it arms the next one.
func (h *heartbeat) beaten() {
	if h.busy {
		h.reset(teamdir.HeartbeatEvery)
		return
	}
	h.reset(teamdir.HeartbeatIdleEvery)
}

func (h *heartbeat) reset(d time.Duration) {
	h.due = time.Now().Add(d)
	h.t.Reset(d)
}
