package team

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"huddle/protocol"
	"huddle/teamdir"
)

// The runtime sleeps while nothing happens: instead of a tick that lists
// restart/ and requests/, one fsnotify watch on those two directories tells
// it that a restart was asked or a request changed, and one timer wakes it
// at the next deadline (docs/ARCHITECTURE.md, "Wake-ups"). A lost event (an
// overflow of the kernel's queue) costs a full look, never a request.

// watchRuntimeDirs creates restart/ and requests/ (a watch needs the
// directory) and watches both.
func watchRuntimeDirs(dir string) (*fsnotify.Watcher, error) {
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	}
	for _, d := range []string{teamdir.RestartDirPath(dir), teamdir.RequestsDirPath(dir)} {
		if err := os.MkdirAll(d, teamdir.DirMode); err != nil {
			fsw.Close()
			return nil, fmt.Errorf("watch: %w", err)
		}
		if err := fsw.Add(d); err != nil {
			fsw.Close()
			return nil, fmt.Errorf("watch %s: %w", d, err)
		}
	}
	return fsw, nil
}

// watchedDirGone tells whether ev says that restart/ or requests/ itself
// was removed or moved away: its watch is gone with it.
func (rt *Runtime) watchedDirGone(ev fsnotify.Event) bool {
	if ev.Op&(fsnotify.Remove|fsnotify.Rename) == 0 {
		return false
	}
	name := filepath.Clean(ev.Name)
	return name == filepath.Clean(teamdir.RestartDirPath(rt.dir)) || name == filepath.Clean(teamdir.RequestsDirPath(rt.dir))
}

// rewatch watches restart/ and requests/ again after one was removed or
// moved away (watchedDirGone), creating what is not there, and then acts
// on what the new directories hold, as no event told of it: the restarts
// asked in them, and every awaiting teammate looks at its plan (the look
// that follows applies decisions and arms deadlines). It runs a while
// after the removal (Tick), so that whoever recreates a directory does so
// before the runtime does.
func (rt *Runtime) rewatch(fsw *fsnotify.Watcher) {
	for _, d := range []string{teamdir.RestartDirPath(rt.dir), teamdir.RequestsDirPath(rt.dir)} {
		err := os.MkdirAll(d, teamdir.DirMode)
		if err == nil {
			err = fsw.Add(d) // a path still watched keeps its watch
		}
		if err != nil {
			rt.emit(Event{"event": "error", "error": fmt.Sprintf("watch %s: %v", d, err)})
		}
	}
	rt.relist()
	rt.restartAsked()
	rt.wakeAwaiting("")
}

// dropRestartsAsked removes what restart/ holds when the runtime starts:
// a restart asked while no runtime ran (or of the one before, which ended
// before acting on it) is honoured by this start, which runs every member.
// Called once the watch is on, so a request written from then on is an
// event the loop acts on.
func (rt *Runtime) dropRestartsAsked() {
	entries, err := os.ReadDir(teamdir.RestartDirPath(rt.dir))
	if err != nil {
		rt.emit(Event{"event": "error", "error": err.Error()})
		return
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(teamdir.RestartDirPath(rt.dir), e.Name())); err != nil {
			rt.emit(Event{"event": "error", "error": err.Error()})
		}
	}
}

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

// changed acts on one event of the runtime's watch. A restart asked is
// acted on at once; a request that changed wakes the teammate awaiting it
// (its decision may be there, or its record repaired), arms the alarm at
// its deadline, and has the records looked at within Tick (the alarm),
// which applies decisions, settles exec teammates and archives final
// records.
func (rt *Runtime) changed(ev fsnotify.Event, al *alarm) {
	if ev.Op&(fsnotify.Create|fsnotify.Write) == 0 {
		return // a removal or a rename away: nothing new to act on
	}
	name := filepath.Base(ev.Name)
	if strings.HasPrefix(name, ".") {
		return // a temp file: its rename into place is the event
	}
	switch filepath.Dir(ev.Name) {
	case filepath.Clean(teamdir.RestartDirPath(rt.dir)):
		rt.restartAsked()
	case filepath.Clean(teamdir.RequestsDirPath(rt.dir)):
		id, decided := strings.CutSuffix(name, ".decision")
		ok := decided
		if !ok {
			id, ok = strings.CutSuffix(name, ".json")
		}
		if !ok || protocol.ValidateID(id) != nil {
			return
		}
		if !decided {
			// A new record (or a new deadline): the alarm goes off at its
			// deadline at the latest. One being created reads as absent;
			// its rename into place is the next event.
			if r, err := rt.sh.loadRequest(id); err == nil && r.Status == protocol.RequestPending {
				al.arm(r.Deadline)
			}
		}
		if ev.Op&fsnotify.Write != 0 {
			// Written in place (a foreign agent): the directory's time did
			// not move, so the last listing must not be reused.
			rt.relist()
		}
		rt.wakeAwaiting(id)
		al.arm(time.Now().Add(rt.opts.Tick))
	}
}

// lostEvents is a watch that lost events or failed: everything it may have
// told is looked at now.
func (rt *Runtime) lostEvents(err error, al *alarm) {
	if !errors.Is(err, fsnotify.ErrEventOverflow) {
		rt.emit(Event{"event": "error", "error": fmt.Sprintf("watch: %v", err)})
	}
	rt.restartAsked()
	rt.wakeAwaiting("")
	al.arm(time.Now())
}

// awaitingPlan registers mt as awaiting plan id, so that a decision file
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

// relist makes the next look at the requests list requests/ again: the
// directory's time says nothing of a change made in place.
func (rt *Runtime) relist() {
	if d, ok := rt.sh.(*dirShared); ok {
		d.relist()
	}
}
