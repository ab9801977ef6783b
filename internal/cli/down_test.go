package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/internal/testkit/dirlead"
	"huddle/internal/testkit/dirrecords"
	"huddle/protocol"
	"huddle/team"
)

// planTeam writes a team whose alice submits a plan and then waits.
func planTeam(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	spec := team.Team{Name: "down", Members: []team.MemberSpec{{
		Name: "alice", Role: "test",
		Runtime: team.RuntimeSpec{Kind: team.RuntimeScript, Steps: []team.Step{
			{Plan: "migrate the database"}, {Say: "lead", Text: "migration done"}, {Wait: team.Duration(time.Hour)},
		}},
	}}}
	b, _ := json.Marshal(spec)
	if err := os.WriteFile(team.ConfigPath(dir), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func (p *upProcess) waitExit(t *testing.T, what string) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		t.Fatalf("huddle up did not exit on %s", what)
	}
	p.cmd.Wait()
}

// TestUpStopsOnSIGHUP: a closed terminal (SIGHUP) stops huddle up as SIGTERM
// does: members stopped, team_stopped emitted, and the lock says when.
func TestUpStopsOnSIGHUP(t *testing.T) {
	dir := planTeam(t)
	up := startUp(t, dir)
	testkit.WaitFor(t, 10*time.Second, "alice awaiting approval", func() bool {
		return up.saw(func(e map[string]any) bool { return e["member"] == "alice" && e["status"] == "awaiting_approval" })
	})
	if err := up.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	up.waitExit(t, "SIGHUP")
	if !up.saw(func(e map[string]any) bool { return e["event"] == "team_stopped" }) {
		t.Fatal("no team_stopped event after SIGHUP")
	}
	if m, _ := dirrecords.LoadMember(dir, "alice"); m == nil || m.Status != protocol.MemberStopped {
		t.Fatalf("alice after SIGHUP: %+v", m)
	}
	out := mustHuddle(t, "status", "--dir", dir).stdout
	if want := fmt.Sprintf("team not running (last ran pid %d, stopped at ", up.cmd.Process.Pid); !strings.Contains(out, want) {
		t.Fatalf("status after a clean stop lacks %q:\n%s", want, out)
	}
}

// TestKill9ThenTheCommandsSayNotRunning: after kill -9 of huddle up, status
// and requests say no runtime runs the team (naming its pid), alice is not
// shown waiting or working, the countdown is paused, and approve and send
// say that they apply at the next start; which they do.
func TestKill9ThenTheCommandsSayNotRunning(t *testing.T) {
	dir := planTeam(t)
	up := startUp(t, dir)
	testkit.WaitFor(t, 10*time.Second, "alice awaiting approval", func() bool {
		return up.saw(func(e map[string]any) bool { return e["member"] == "alice" && e["status"] == "awaiting_approval" })
	})
	pid := up.cmd.Process.Pid
	if err := up.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	up.waitExit(t, "SIGKILL")
	notRunning := fmt.Sprintf("team not running (last ran pid %d, started at ", pid)

	status := mustHuddle(t, "status", "--dir", dir).stdout
	if !strings.Contains(status, notRunning) || !strings.Contains(status, "did not stop cleanly") {
		t.Fatalf("status after kill -9 lacks %q:\n%s", notRunning, status)
	}
	if regexp.MustCompile(`(?m)^alice\s+\S+\s+\S+\s+(awaiting_approval|working)`).MatchString(status) || !regexp.MustCompile(`(?m)^alice\s+\S+\s+\S+\s+stopped`).MatchString(status) {
		t.Fatalf("status shows alice as if a runtime ran her:\n%s", status)
	}
	var rows []memberRow
	if err := json.Unmarshal([]byte(mustHuddle(t, "status", "--json", "--dir", dir).stdout), &rows); err != nil || len(rows) != 1 || rows[0].Status != "stopped" {
		t.Fatalf("status --json after kill -9: %+v %v", rows, err)
	}

	reqs := mustHuddle(t, "requests", "--dir", dir).stdout
	if !strings.Contains(reqs, notRunning) || !strings.Contains(reqs, "paused, ") {
		t.Fatalf("requests after kill -9 does not say the team is down and the countdown paused:\n%s", reqs)
	}
	list, err := dirrecords.ListRequests(dir)
	if err != nil || len(list) != 1 {
		t.Fatalf("requests: %+v %v", list, err)
	}
	id := list[0].ID
	approve := mustHuddle(t, "approve", id, "--dir", dir).stdout
	if strings.Contains(approve, "has been told") || !strings.Contains(approve, notRunning) || !strings.Contains(approve, "alice is told when it starts") {
		t.Fatalf("approve while down printed %q", approve)
	}
	send := mustHuddle(t, "send", "alice", "are you there", "--dir", dir).stdout
	if !strings.Contains(send, "delivered when the team starts") {
		t.Fatalf("send while down printed %q", send)
	}

	second := startUp(t, dir)
	testkit.WaitFor(t, 10*time.Second, "alice's message after the approval", func() bool {
		return second.saw(func(e map[string]any) bool {
			return e["event"] == "message_delivered" && e["from"] == "alice" && e["type"] == "message"
		})
	})
	if out := mustHuddle(t, "status", "--dir", dir).stdout; strings.Contains(out, "not running") {
		t.Fatalf("status while a runtime runs says it does not:\n%s", out)
	}
}

// TestShutdownWhileDownWaitsForTheNextStart: a shutdown asked while no
// runtime runs says so, and its deadline counts from the next start: a
// span that passed on the wall clock meanwhile is not an expiry.
func TestShutdownWhileDownWaitsForTheNextStart(t *testing.T) {
	dir := t.TempDir()
	spec := team.Team{Name: "down", Settings: team.Settings{ShutdownDeadline: team.Duration(time.Second)},
		Members: []team.MemberSpec{{Name: "bob", Role: "test", Runtime: team.RuntimeSpec{Kind: team.RuntimeScript, Steps: []team.Step{{Wait: team.Duration(time.Hour)}}}}}}
	b, _ := json.Marshal(spec)
	if err := os.WriteFile(team.ConfigPath(dir), b, 0o600); err != nil {
		t.Fatal(err)
	}
	up := startUp(t, dir)
	testkit.WaitFor(t, 10*time.Second, "bob idle", func() bool {
		return up.saw(func(e map[string]any) bool { return e["member"] == "bob" && e["status"] == "idle" })
	})
	up.cmd.Process.Signal(syscall.SIGTERM)
	up.waitExit(t, "SIGTERM")
	out := mustHuddle(t, "shutdown", "bob", "--dir", dir).stdout
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], "team not running (last ran pid") || !strings.Contains(lines[1], "bob is asked when it starts") {
		t.Fatalf("shutdown while down printed %q", out)
	}
	id := lines[0]
	r, err := dirrecords.LoadRequest(dir, id)
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the shutdown's deadline to pass on the wall clock", func() bool { return time.Now().After(r.Deadline) })
	second := startUp(t, dir)
	testkit.WaitFor(t, 10*time.Second, "bob stopped by the shutdown", func() bool {
		return second.saw(func(e map[string]any) bool { return e["member"] == "bob" && e["status"] == "stopped" })
	})
	if got, _ := dirrecords.LoadRequest(dir, id); got.Status != protocol.RequestApproved {
		t.Fatalf("shutdown asked while down: %s by %s (%s), want approved by bob", got.Status, got.ResolvedBy, got.ResponseReason)
	}
}

// TestRequestsReadTheArchiveOnlyWithAll: huddle requests never reads
// requests/done/ (a corrupt archived record goes unnoticed), --all does
// (and warns about it), lists history newest first, and --limit bounds it.
func TestRequestsReadTheArchiveOnlyWithAll(t *testing.T) {
	dir := demoTeam(t)
	for i := range 5 {
		r := protocol.NewRequest(protocol.KindPlan, fmt.Sprintf("pl-00000000000%d", i), "reservas", protocol.Lead, time.Now(), time.Hour)
		r.Plan = "plan"
		if err := dirrecords.CreateRequest(dir, &r); err != nil {
			t.Fatal(err)
		}
		f, err := dirlead.Decide(dir, r.ID, protocol.EventApprove, "", "")
		if err != nil {
			t.Fatal(err)
		}
		if err := dirrecords.Archive(dir, f.ID); err != nil {
			t.Fatal(err)
		}
	}
	torn := filepath.Join(dir, "requests", "done", "pl-0000000000ff.json")
	if err := os.WriteFile(torn, []byte("{torn"), 0o600); err != nil {
		t.Fatal(err)
	}
	long := time.Now().Add(-time.Hour) // archived before the others: --limit 3 leaves it out
	if err := os.Chtimes(torn, long, long); err != nil {
		t.Fatal(err)
	}
	if r := mustHuddle(t, "requests", "--dir", dir); r.stdout != "no pending requests\n" {
		t.Fatalf("requests: %q", r.stdout)
	}
	r := huddle(t, "requests", "--all", "--dir", dir)
	if r.code != ExitOK || !strings.Contains(r.stderr, "warning: requests/done/pl-0000000000ff.json is corrupt") {
		t.Fatalf("requests --all: exit %d, stderr %q", r.code, r.stderr)
	}
	if !regexp.MustCompile(`(?m)^pl-0000000000ff .*corrupt`).MatchString(r.stdout) {
		t.Fatalf("requests --all does not show the corrupt record:\n%s", r.stdout)
	}
	var got []protocol.Request
	lim := huddle(t, "requests", "--all", "--json", "--limit", "3", "--dir", dir)
	if err := json.Unmarshal([]byte(lim.stdout), &got); err != nil || len(got) != 3 {
		t.Fatalf("requests --all --limit 3: %v\n%s", err, lim.stdout)
	}
	for i := 1; i < len(got); i++ {
		if got[i].ResolvedAt == nil || got[i-1].ResolvedAt == nil {
			t.Fatalf("requests --all --limit 3 lists one that is not final: %s", lim.stdout)
		}
		if got[i].ResolvedAt.After(*got[i-1].ResolvedAt) {
			t.Fatalf("history is not newest first: %s then %s", got[i-1].ID, got[i].ID)
		}
	}
}
