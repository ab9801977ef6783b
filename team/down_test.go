package team

import (
	"testing"
	"time"

	"huddle/protocol"
	"huddle/store"
	"huddle/teamdir"
)

// TestSeenAs: a member's record as status shows it, by who says whether
// the team runs: a runtime.lock that is held shows it as it is, one that
// was released shows a live member stopped and never lost; a store's
// records show an unseen live member lost, and leave its status alone.
func TestSeenAs(t *testing.T) {
	working := store.MemberState{Member: protocol.Member{Name: "alice", Runtime: RuntimeScript, Status: protocol.MemberWorking, Activity: "counting"}, Lost: true}
	ran := teamdir.RuntimeState{Last: teamdir.RuntimeRecord{PID: 7, Started: time.Now()}}
	running := ran
	running.Running = true
	for _, c := range []struct {
		name     string
		rt       RuntimeState
		status   protocol.MemberStatus
		activity string
		lost     bool
	}{
		{"a held lock", running, protocol.MemberWorking, "counting", false},
		{"a released lock", ran, protocol.MemberStopped, "team not running (was working)", false},
		{"no lock, never run", RuntimeState{}, protocol.MemberWorking, "counting", false},
		{"a store, unseen", RuntimeState{ByRecords: true, LostAfter: LostAfter}, protocol.MemberWorking, "counting", true},
	} {
		rec, lost := SeenAs(c.rt, working)
		if rec.Status != c.status || rec.Activity != c.activity || lost != c.lost {
			t.Errorf("%s: %s %q lost %v; want %s %q lost %v", c.name, rec.Status, rec.Activity, lost, c.status, c.activity, c.lost)
		}
	}
}
