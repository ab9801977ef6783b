package view

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"huddle/internal/testkit/dirrecords"
	"huddle/internal/testkit/teamkit"
	"huddle/protocol"
	"huddle/team"
	"huddle/teamdir"
)

// TestObserverWhileNoRuntimeRuns: a runtime killed with kill -9 left alice
// working; an observer sees that nobody holds runtime.lock and shows her
// stopped, saying what she was, until a runtime holds the lock again.
func TestObserverWhileNoRuntimeRuns(t *testing.T) {
	dir := t.TempDir()
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: []team.MemberSpec{teamkit.Scripted("alice", "", team.Step{Wait: team.Duration(time.Hour)})}})
	if err := dirrecords.WriteMember(dir, &protocol.Member{Name: "alice", Runtime: team.RuntimeScript, Status: protocol.MemberWorking, Activity: "mid-step", Since: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	// A runtime that ran and died: its lock file stays, nobody holds it.
	unlock, err := teamdir.LockRuntime(dir)
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	_, rec := observe(t, dir, eventsOnly)
	s := rec.wait(t, "alice shown stopped while nobody runs the team", func(s Snapshot) bool {
		m, _ := member(s, "alice")
		return s.Down && m.Record.Status == protocol.MemberStopped
	})
	if m, _ := member(s, "alice"); !strings.Contains(m.Record.Activity, "team not running (was working)") {
		t.Fatalf("alice's activity while down: %q", m.Record.Activity)
	}
	if line := team.NotRunning(s.Runtime); !strings.Contains(line, fmt.Sprintf("last ran pid %d, stopped at", os.Getpid())) {
		t.Fatalf("not-running line: %q", line)
	}
	unlock, err = teamdir.LockRuntime(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	rec.wait(t, "alice shown working once a runtime holds the lock", func(s Snapshot) bool {
		m, _ := member(s, "alice")
		return !s.Down && m.Record.Status == protocol.MemberWorking
	})
}

// TestObserverShowsCorruptRecords: a request or member record that cannot
// be read is in the snapshot as corrupt, with why; repaired, it is itself.
func TestObserverShowsCorruptRecords(t *testing.T) {
	dir := t.TempDir()
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: []team.MemberSpec{external("alice")}})
	if err := os.MkdirAll(filepath.Join(dir, "requests"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "requests", "pl-0000000bad01.json"), []byte("{garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, rec := observe(t, dir, eventsOnly)
	if err := os.WriteFile(filepath.Join(dir, "members", "alice.json"), []byte("[1,"), 0o600); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "both records shown corrupt", func(s Snapshot) bool {
		m, _ := member(s, "alice")
		reqOK := len(s.Requests) == 1 && s.Requests[0].Status == team.StatusCorrupt && strings.Contains(s.Requests[0].ResponseReason, "requests/pl-0000000bad01.json")
		return reqOK && m.Record.Status == team.StatusCorrupt && strings.Contains(m.Record.Error, "members/alice.json")
	})
	writeMember(t, dir, "alice", protocol.MemberIdle, "fine again")
	rec.wait(t, "alice repaired", func(s Snapshot) bool {
		m, _ := member(s, "alice")
		return m.Record.Status == protocol.MemberIdle
	})
}

// TestObserverKeepsABoundedHistory: an observer started on a long history
// reads only the newest MaxHistory archived requests.
func TestObserverKeepsABoundedHistory(t *testing.T) {
	dir := t.TempDir()
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: []team.MemberSpec{external("alice")}})
	for _, id := range teamkit.FinalRecords(t, dir, MaxHistory+20) {
		if err := dirrecords.Archive(dir, id); err != nil {
			t.Fatal(err)
		}
	}
	_, rec := observe(t, dir, eventsOnly)
	s := rec.wait(t, "the history", func(s Snapshot) bool { return len(s.Requests) > 0 })
	if len(s.Requests) != MaxHistory {
		t.Fatalf("%d requests in the snapshot, want the newest %d", len(s.Requests), MaxHistory)
	}
}
