package team

import (
	"fmt"
	"iter"
	"time"

	"huddle/protocol"
	"huddle/store"
	"huddle/teamdir"
)

// RuntimeState is what a reader can tell about the runtime of a team: is
// one running, and which ran last (docs/ARCHITECTURE.md, "The team directory and the store", "State machines").
type RuntimeState = teamdir.RuntimeState

// ProbeRuntime tells whether a runtime holds the team's lock, and what the
// lock file says about the last one.
func ProbeRuntime(dir string) (RuntimeState, error) { return teamdir.ProbeRuntime(dir) }

// HasRun reports whether a runtime has ever run the team (runtime.lock
// holds a record). Commands say the team is not running only then: a
// directory no runtime has run yet is being set up.
func HasRun(st RuntimeState) bool {
	return st.Last.PID != 0 || (st.ByRecords && !st.LastAlive.IsZero())
}

// Down reports whether a runtime ran the team and none runs it now.
func Down(st RuntimeState) bool { return !st.Running && HasRun(st) }

// NotRunning says that no runtime runs the team, and which ran last:
// "team not running (last ran pid N, stopped at T)" after a clean stop,
// "… started at T, did not stop cleanly" after a kill -9.
func NotRunning(st RuntimeState) string {
	last := st.Last
	switch {
	case st.ByRecords:
		return fmt.Sprintf("team not running (no member seen within %v)", st.LostAfter)
	case last.PID == 0:
		return "team not running (no runtime has run it)"
	case last.Stopped != nil:
		return fmt.Sprintf("team not running (last ran pid %d, stopped at %s)", last.PID, clockTime(*last.Stopped))
	case !last.Started.IsZero():
		return fmt.Sprintf("team not running (last ran pid %d, started at %s, last seen alive at %s; it did not stop cleanly)",
			last.PID, clockTime(last.Started), clockTime(st.LastAlive))
	}
	return fmt.Sprintf("team not running (last ran pid %d)", last.PID)
}

func clockTime(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05") }

// RuntimeFromRecords is a store's RuntimeState, read from its members' records: the
// team runs while one of them is live and seen within lostAfter, or while
// there are none (DownByRecords), and was last alive when the latest of them was
// seen. A runtime that runs only the lead writes no member record, so it
// does not count.
func RuntimeFromRecords(states iter.Seq[store.MemberState], lostAfter time.Duration) RuntimeState {
	st := RuntimeState{ByRecords: true, LostAfter: lostAfter}
	some := false
	for s := range states {
		some = true
		if store.IsLive(s.Status) && !s.Lost {
			st.Running = true
		}
		if s.Seen.After(st.LastAlive) {
			st.LastAlive = s.Seen
		}
	}
	st.Running = st.Running || !some
	return st
}

// PausedSince is when the deadlines of pending requests stopped counting:
// when the last runtime was last seen alive (it stops counting with it).
func PausedSince(st RuntimeState) time.Time {
	if st.Last.Stopped != nil {
		return *st.Last.Stopped
	}
	return st.LastAlive
}

// StaleWhenDown reports whether rec's status is one that only a running
// runtime keeps true: a member huddle runs (script or exec) in a live
// state. External members and targets report for themselves.
func StaleWhenDown(rec *protocol.Member) bool {
	if rec.Runtime != RuntimeScript && rec.Runtime != RuntimeExec {
		return false
	}
	return rec.Status != "" && !rec.Status.IsTerminal()
}

// AsSeenWhileDown is rec as a reader shows it when no runtime runs the
// team: a member left in a live state by a runtime that ended is stopped,
// and its activity says what it was. The record on disk is left alone: the
// next runtime rewrites it as the member starts (or resumes).
func AsSeenWhileDown(rec protocol.Member) protocol.Member {
	if !StaleWhenDown(&rec) {
		return rec
	}
	was := rec.Status
	rec.Status = protocol.MemberStopped
	rec.Activity = fmt.Sprintf("team not running (was %s)", was)
	return rec
}

// SeenAs is a member's record as a reader shows it, by what rt (the
// team's RuntimeState) says: left in a live state by a runtime whose
// lock says it ended, it is stopped (AsSeenWhileDown); unseen by a store
// whose records say whether the team runs (no runtime.lock), it is lost.
// Lost is never said where a lock says: its flock, not a deadline, tells.
func SeenAs(rt RuntimeState, s store.MemberState) (rec protocol.Member, lost bool) {
	if rt.ByRecords {
		return s.Member, s.Lost
	}
	if Down(rt) {
		return AsSeenWhileDown(s.Member), false
	}
	return s.Member, false
}

// LeftWhenPaused is the time a pending request had left when its deadline
// stopped counting (the last runtime ended, or it was created after that):
// what it gets back when the next runtime starts (resumeDeadlines).
func LeftWhenPaused(r *protocol.Request, st RuntimeState) time.Duration {
	from := PausedSince(st)
	if r.Created.After(from) {
		from = r.Created
	}
	return r.Deadline.Sub(from)
}

// CorruptRequest stands for a request record that cannot be read: its id,
// the status StatusCorrupt, and why in ResponseReason.
func CorruptRequest(ce *store.CorruptError) protocol.Request { return *CorruptRecord(ce.Name, ce) }

// CorruptRecord stands for a request record that cannot be read: its id,
// the status corrupt, and why in ResponseReason.
func CorruptRecord(id string, ce *store.CorruptError) *protocol.Request {
	return &protocol.Request{ID: id, Status: protocol.RequestStatus(StatusCorrupt), ResponseReason: ce.Error()}
}

// StatusCorrupt is the status a UI shows for a record that cannot be read
// (a request's or a member's); it is no state of docs/ARCHITECTURE.md, "State machines"
const StatusCorrupt = "corrupt"

// StatusLost is the status a UI shows for a member that should be running
// and was not seen within the deadline (its machine or process went away),
// where the heartbeats say who runs; like StatusCorrupt, no state of
// docs/ARCHITECTURE.md, "State machines"
const StatusLost = "lost"
