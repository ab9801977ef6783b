package claudeteam

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/protocol"
)

// replaceInbox writes an inbox as Claude Code 2.1.328 does: the whole
// array to a temporary file, renamed over the inbox.
func replaceInbox(t *testing.T, path string, es []Entry) {
	t.Helper()
	b, err := json.MarshalIndent(es, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	tmp := path + ".tmp." + time.Now().Format("150405.000000000")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// TestJournalOutlivesWhatClaudeCodeDeletes: a plan huddle read once is
// still there, with its content, after Claude Code delivered and deleted
// it (the inbox back to [], rewritten by temp + rename), after its
// answer was deleted too, and after Claude Code renamed the team
// <team>.deleted-<uuid> and removed it; the roster comes from the
// journaled config.json. Two readers journaling at once show each
// message once.
func TestJournalOutlivesWhatClaudeCodeDeletes(t *testing.T) {
	root := t.TempDir()
	j := Journal(filepath.Join(t.TempDir(), "journal"))
	team := "session-4c8a7d24"
	writeConfig(t, root, team, "alice")
	now := time.Now().Add(-time.Minute)
	plan := textOf(map[string]any{"type": "plan_approval_request", "requestId": "plan-1@alice", "from": "alice", "timestamp": Stamp(now), "planFilePath": "/tmp/plan.md", "planContent": "1. read\n2. write"})
	lead := inbox(root, team, LeadName)
	replaceInbox(t, lead, []Entry{entry("alice", plan, now)})

	read := func() State {
		t.Helper()
		s, err := ReadFrom(root, team, j)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	done := make(chan State, 2)
	for range 2 {
		go func() {
			s, _ := ReadFrom(root, team, j)
			done <- s
		}()
	}
	<-done
	<-done
	if r := request(read(), "plan-1@alice"); r == nil || r.Status != protocol.RequestPending {
		t.Fatalf("the plan while Claude Code still holds it: %+v", r)
	}
	replaceInbox(t, lead, []Entry{}) // delivered, deleted
	resp := textOf(map[string]any{"type": "plan_approval_response", "requestId": "plan-1@alice", "approved": true, "timestamp": Stamp(now.Add(time.Second))})
	replaceInbox(t, inbox(root, team, "alice"), []Entry{entry(LeadName, resp, now.Add(time.Second))})
	if r := request(read(), "plan-1@alice"); r == nil || r.Status != protocol.RequestApproved || r.Plan != "1. read\n2. write" {
		t.Fatalf("the plan after Claude Code deleted it: %+v", r)
	}
	replaceInbox(t, inbox(root, team, "alice"), []Entry{})
	writeConfig(t, root, team) // alice stopped: she leaves config.json
	read()
	gone := teamDir(root, team) + ".deleted-0e5d3c1a-9f7b-4a2e-8c61-1d2f3a4b5c6d"
	if err := os.Rename(teamDir(root, team), gone); err != nil {
		t.Fatal(err)
	}
	if ts, _ := Teams(root); len(ts) != 0 {
		t.Errorf("a team being removed is listed: %v", ts)
	}
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}
	s := read()
	r := request(s, "plan-1@alice")
	if !s.Gone || r == nil || r.Status != protocol.RequestApproved || r.Plan != "1. read\n2. write" || !strings.Contains(s.Snapshot.TeamErr, "removed this team") {
		t.Fatalf("the team after Claude Code removed it: gone %v, plan %+v, %q", s.Gone, r, s.Snapshot.TeamErr)
	}
	if m := memberOf(s, "alice"); m.Name != "alice" {
		t.Errorf("alice, who left config.json before the team went, is not on the journaled roster: %+v", s.Snapshot.Members)
	}
	n := 0
	for _, m := range s.Snapshot.Messages {
		if m.Msg.RequestID == "plan-1@alice" {
			n++
		}
	}
	if n != 2 {
		t.Errorf("the plan and its answer shown %d times, want 2 messages", n)
	}
	if teams, _ := j.Teams(); len(teams) != 1 || teams[0] != team {
		t.Errorf("journaled teams %v", teams)
	}
	if got, err := PickTeam(root, team, j); err != nil || got != team {
		t.Errorf("PickTeam of a removed team: %q %v", got, err)
	}
}

// TestWatchJournalsTeamsAsTheyCome: Watch follows a team Claude Code makes
// after it started, and what it saw outlives the team; a second Watch of
// the same journal is refused.
func TestWatchJournalsTeamsAsTheyCome(t *testing.T) {
	root := t.TempDir()
	j := Journal(filepath.Join(t.TempDir(), "journal"))
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan string, 4)
	done := make(chan error, 1)
	go func() { done <- Watch(ctx, root, j, func(team string) { started <- team }) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Watch: %v", err)
		}
	}()
	testkit.WaitFor(t, 10*time.Second, "the watch lock taken", func() bool {
		_, err := os.Stat(filepath.Join(string(j), "watch.lock"))
		return err == nil
	})
	if err := Watch(ctx, root, j, nil); !errors.As(err, new(*WatchingError)) {
		t.Errorf("a second Watch: %v", err)
	}
	watches := inotifyInstances(t)
	team := "session-77aa0011"
	writeConfig(t, root, team, "bob")
	select {
	case got := <-started:
		if got != team {
			t.Errorf("started %q", got)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the new team was not followed")
	}
	now := time.Now()
	idle := textOf(map[string]any{"type": "idle_notification", "from": "bob", "timestamp": Stamp(now), "idleReason": "available", "result": "wrote the tests"})
	replaceInbox(t, inbox(root, team, LeadName), []Entry{entry("bob", idle, now)})
	testkit.WaitFor(t, 20*time.Second, "the idle notification journaled", func() bool {
		b, _ := os.ReadFile(j.path(team))
		return strings.Contains(string(b), "wrote the tests")
	})
	if n := inotifyInstances(t); n <= watches {
		t.Errorf("following the team holds %d inotify instances, as before it (%d)", n, watches)
	}
	if err := os.RemoveAll(teamDir(root, team)); err != nil {
		t.Fatal(err)
	}
	// A team Claude Code removed is let go: a long watch would run out of
	// the user's 128 inotify instances otherwise.
	testkit.WaitFor(t, 20*time.Second, "the removed team's watch let go", func() bool { return inotifyInstances(t) == watches })
	s, err := ReadFrom(root, team, j)
	if err != nil {
		t.Fatal(err)
	}
	if m := memberOf(s, "bob"); m.Status != protocol.MemberIdle || !strings.Contains(m.Activity, "wrote the tests") {
		t.Errorf("bob from the journal: %+v", m)
	}
}

// inotifyInstances counts this process's inotify instances.
func inotifyInstances(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && l == "anon_inode:inotify" {
			n++
		}
	}
	return n
}
