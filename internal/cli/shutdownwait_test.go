package cli

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/internal/testkit/dirrecords"
	"huddle/protocol"
	"huddle/team"
)

func writeTeam(t *testing.T, tm team.Team) string {
	t.Helper()
	dir := t.TempDir()
	b, err := json.Marshal(tm)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(team.ConfigPath(dir), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// waitingFor waits until a member's record says status.
func waitingFor(t *testing.T, dir, member string, status protocol.MemberStatus) {
	t.Helper()
	testkit.WaitFor(t, 10*time.Second, member+" "+string(status), func() bool {
		m, err := dirrecords.LoadMember(dir, member)
		return err == nil && m.Status == status
	})
}

// TestShutdownWaitPrintsTheAnswer: --wait prints the teammate's answer;
// Exit 0 when it agrees, 1 when it refuses.
func TestShutdownWaitPrintsTheAnswer(t *testing.T) {
	forever := team.Duration(time.Hour)
	dir := writeTeam(t, team.Team{Name: "answers", Members: []team.MemberSpec{
		{Name: "idler", Role: "agrees", Runtime: team.RuntimeSpec{Kind: team.RuntimeScript, Steps: []team.Step{{Wait: forever}}}},
		{Name: "busy", Role: "refuses while working", Runtime: team.RuntimeSpec{Kind: team.RuntimeScript,
			OnShutdown: team.OnShutdownRejectWhileWorking, Steps: []team.Step{{Work: forever, Activity: "digging"}}}},
	}})
	startUp(t, dir)
	waitingFor(t, dir, "busy", protocol.MemberWorking)

	r := huddle(t, "shutdown", "busy", "--wait", "--dir", dir)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if r.code != ExitFail || r.stderr != "" || len(lines) != 2 || !strings.HasPrefix(lines[0], "sd-") ||
		!strings.HasPrefix(lines[1], "refused by busy: ") {
		t.Fatalf("shutdown busy --wait: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if rec := loadRequest(t, dir, lines[0]); rec.Status != protocol.RequestRejected {
		t.Fatalf("the record says %s", rec.Status)
	}

	r = huddle(t, "shutdown", "idler", "--wait", "--timeout", "30s", "--dir", dir)
	lines = strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if r.code != ExitOK || r.stderr != "" || len(lines) != 2 || lines[1] != "approved by idler: "+team.Printable(loadRequest(t, dir, lines[0]).ResponseReason) {
		t.Fatalf("shutdown idler --wait: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	waitingFor(t, dir, "idler", protocol.MemberStopped)

	// Already stopped: cancelled at once, which is not an agreement.
	r = huddle(t, "shutdown", "idler", "--wait", "--dir", dir)
	if r.code != ExitFail || !strings.Contains(r.stdout, "\ncancelled: idler is already stopped\n") {
		t.Fatalf("shutdown of a stopped member --wait: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// TestShutdownWaitExpiryAndTimeout: a teammate that never answers lets the
// request expire (exit 1); --timeout ends the wait first (exit 1, one line
// on stderr), the request still pending.
func TestShutdownWaitExpiryAndTimeout(t *testing.T) {
	dir := writeTeam(t, team.Team{Name: "silent", Settings: team.Settings{ShutdownDeadline: team.Duration(time.Second)},
		Members: []team.MemberSpec{{Name: "ext", Role: "never answers", Runtime: team.RuntimeSpec{Kind: team.RuntimeExternal}}}})
	startUp(t, dir)
	r := huddle(t, "shutdown", "ext", "--wait", "--dir", dir)
	if r.code != ExitFail || !strings.HasSuffix(r.stdout, "\nexpired: no answer before the deadline\n") {
		t.Fatalf("shutdown ext --wait: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}

	idle := writeTeam(t, team.Team{Name: "idle", Members: []team.MemberSpec{{Name: "ext", Role: "never answers", Runtime: team.RuntimeSpec{Kind: team.RuntimeExternal}}}})
	r = huddle(t, "shutdown", "ext", "--wait", "--timeout", "200ms", "--dir", idle)
	id := strings.TrimSpace(r.stdout)
	if r.code != ExitFail || !strings.HasPrefix(id, "sd-") || r.stderr != "huddle: shutdown: no answer within 200ms: "+id+" is still pending\n" {
		t.Fatalf("--timeout 200ms: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if rec := loadRequest(t, idle, id); rec.Status != protocol.RequestPending {
		t.Fatalf("after the timeout the request is %s", rec.Status)
	}

	huddle(t, "shutdown", "ext", "--timeout", "1s", "--dir", idle).wantError(t, ExitUsage, "--timeout goes with --wait", "shutdown --timeout without --wait")
	huddle(t, "shutdown", "ext", "--wait", "--timeout", "-1s", "--dir", idle).wantError(t, ExitUsage, "--timeout must be 0 or more", "shutdown --timeout -1s")
}
