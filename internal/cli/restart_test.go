package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/internal/testkit/dirrecords"
	"huddle/protocol"
	"huddle/team"
	"huddle/teamdir"
)

// restartTeam has an exec member running huddle's echo agent, a scripted
// one, and an external one.
func restartTeam(t *testing.T) string {
	t.Helper()
	return writeTeam(t, team.Team{Name: "restarts", Members: []team.MemberSpec{
		{Name: "echo", Role: "echoes", Runtime: team.RuntimeSpec{Kind: team.RuntimeExec, Command: []string{"huddle", "agent", "echo"}}},
		{Name: "idler", Role: "waits", Runtime: team.RuntimeSpec{Kind: team.RuntimeScript, Steps: []team.Step{{Wait: team.Duration(time.Hour)}}}},
		{Name: "outside", Role: "runs elsewhere", Runtime: team.RuntimeSpec{Kind: team.RuntimeExternal}},
	}})
}

// TestRestartACrashedMember: kill -9 an exec member's process (crashed),
// send it a message meanwhile, restart it: a new process, which gets that
// message and the next. A stopped scripted member runs again too.
func TestRestartACrashedMember(t *testing.T) {
	dir := restartTeam(t)
	startUp(t, dir)
	waitingFor(t, dir, "echo", protocol.MemberIdle)
	first, _ := dirrecords.LoadMember(dir, "echo")
	if err := syscall.Kill(first.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitingFor(t, dir, "echo", protocol.MemberCrashed)
	mustHuddle(t, "send", "echo", "while down", "--dir", dir)

	r := mustHuddle(t, "restart", "echo", "--dir", dir)
	if !strings.HasPrefix(r.stdout, "restarted echo, which was crashed (process exited: signal: killed): now ") {
		t.Fatalf("restart echo: %q", r.stdout)
	}
	second, _ := dirrecords.LoadMember(dir, "echo")
	if second.PID == first.PID || second.RunID == first.RunID || second.Status.IsTerminal() {
		t.Fatalf("after the restart: %+v (before %+v)", second, first)
	}
	leadHears(t, dir, "echo", "echo: while down")
	mustHuddle(t, "send", "echo", "after", "--dir", dir)
	leadHears(t, dir, "echo", "echo: after")

	r = huddle(t, "shutdown", "idler", "--wait", "--timeout", "20s", "--dir", dir)
	if r.code != exitOK {
		t.Fatalf("shutdown idler: %d %q %q", r.code, r.stdout, r.stderr)
	}
	waitingFor(t, dir, "idler", protocol.MemberStopped)
	if r := mustHuddle(t, "restart", "idler", "--dir", dir); !strings.HasPrefix(r.stdout, "restarted idler, which was stopped: now ") {
		t.Fatalf("restart idler: %q", r.stdout)
	}
	waitingFor(t, dir, "idler", protocol.MemberIdle)
}

// TestRestartRefusals: a member that runs, one huddle does not run, one
// that is not in the team, a team no runtime runs: one line, exit 1; a bad
// name, exit 2. A restart asked behind the CLI's back of a running member
// is refused by the runtime as a dead letter.
func TestRestartRefusals(t *testing.T) {
	dir := restartTeam(t)
	huddle(t, "restart", "echo", "--dir", dir).wantError(t, exitFail, "no runtime runs the team restarts ('huddle up' starts every member)", "restart without a runtime")
	up := startUp(t, dir)
	waitingFor(t, dir, "echo", protocol.MemberIdle)
	huddle(t, "restart", "echo", "--dir", dir).wantError(t, exitFail, "echo is idle; only a stopped or crashed member is restarted", "restart a running member")
	huddle(t, "restart", "outside", "--dir", dir).wantError(t, exitFail, `outside is not run by huddle (runtime "external")`, "restart an external member")
	huddle(t, "restart", "nobody", "--dir", dir).wantError(t, exitFail, `no member "nobody" in team restarts`, "restart nobody")
	huddle(t, "restart", "../x", "--dir", dir).wantError(t, exitUsage, "invalid name", "restart ../x")
	huddle(t, "restart", "echo", "--timeout", "0s", "--dir", dir).wantError(t, exitUsage, "--timeout must be more than 0", "restart --timeout 0s")

	p, _ := teamdir.RestartPath(dir, "idler")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the runtime to refuse restarting a running member", func() bool {
		return up.saw(func(e map[string]any) bool {
			return e["event"] == "dead_letter" && e["member"] == "idler" && strings.Contains(e["reason"].(string), "only a stopped or crashed member")
		})
	})
	letters := decodeDeadLetters(t, mustHuddle(t, "deadletters", "--json", "--member", "idler", "--dir", dir).stdout)
	if len(letters) != 1 || letters[0].Source != "restart/idler" {
		t.Fatalf("dead letters of idler: %+v", letters)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatalf("restart/idler is still there: %v", err)
	}
}
