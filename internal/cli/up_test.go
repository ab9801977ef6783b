package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/internal/testkit/dirlead"
	"huddle/internal/testkit/dirrecords"
	"huddle/protocol"
	"huddle/team"
)

// upProcess is a running `huddle up --headless` with its event stream.
type upProcess struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	events []map[string]any
	done   chan struct{}
}

func startUp(t *testing.T, dir string) *upProcess {
	t.Helper()
	return startUpIn(t, "", dir)
}

// startUpIn is startUp run in the directory cwd ("": this one).
func startUpIn(t *testing.T, cwd, dir string) *upProcess {
	t.Helper()
	cmd := exec.Command(huddleBinary(t), "up", "--headless", "--dir", dir)
	cmd.Dir = cwd
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &upProcess{cmd: cmd, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var e map[string]any
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Errorf("event line is not JSON: %q", sc.Text())
				continue
			}
			p.mu.Lock()
			p.events = append(p.events, e)
			p.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return p
}

func (p *upProcess) saw(match func(map[string]any) bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.events {
		if match(e) {
			return true
		}
	}
	return false
}

// TestUpKill9RestartKeepsThePlanGate: kill -9 the runtime while a plan waits,
// approve it while the runtime is down, start again: the approval takes
// effect, no plan is submitted twice, and SIGTERM stops the team cleanly.
func TestUpKill9RestartKeepsThePlanGate(t *testing.T) {
	dir := t.TempDir()
	spec := team.Team{Name: "restart", Members: []team.MemberSpec{{
		Name: "alice", Role: "test",
		Runtime: team.RuntimeSpec{Kind: team.RuntimeScript, Steps: []team.Step{
			{Plan: "migrate the database"}, {Say: "lead", Text: "migration done"}, {Wait: team.Duration(time.Hour)},
		}},
	}}}
	b, _ := json.Marshal(spec)
	if err := os.WriteFile(team.ConfigPath(dir), b, 0o600); err != nil {
		t.Fatal(err)
	}
	first := startUp(t, dir)
	testkit.WaitFor(t, 10*time.Second, "alice awaiting approval", func() bool {
		return first.saw(func(e map[string]any) bool { return e["member"] == "alice" && e["status"] == "awaiting_approval" })
	})
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.cmd.Wait()

	reqs, err := dirrecords.ListRequests(dir)
	if err != nil || len(reqs) != 1 || reqs[0].Status != protocol.RequestPending {
		t.Fatalf("after kill -9: %+v %v", reqs, err)
	}
	if m, _ := dirrecords.LoadMember(dir, "alice"); m.Status != protocol.MemberAwaitingApproval {
		t.Fatalf("alice after kill -9: %s", m.Status)
	}
	if _, err := dirlead.Decide(dir, reqs[0].ID, protocol.EventApprove, "go ahead", ""); err != nil {
		t.Fatal(err)
	}

	second := startUp(t, dir)
	testkit.WaitFor(t, 10*time.Second, "alice's message after the approval", func() bool {
		return second.saw(func(e map[string]any) bool {
			return e["event"] == "message_delivered" && e["from"] == "alice" && e["type"] == "message"
		})
	})
	reqs, _ = dirrecords.ListRequests(dir)
	if len(reqs) != 1 || reqs[0].Status != protocol.RequestApproved {
		t.Fatalf("after restart want the one plan approved, got %+v", reqs)
	}
	if err := second.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-second.done:
	case <-time.After(15 * time.Second):
		t.Fatal("huddle up did not exit on SIGTERM")
	}
	if err := second.cmd.Wait(); err != nil {
		t.Fatalf("huddle up exit: %v", err)
	}
	if !second.saw(func(e map[string]any) bool { return e["event"] == "team_stopped" }) {
		t.Fatal("no team_stopped event")
	}
	if m, _ := dirrecords.LoadMember(dir, "alice"); m.Status != protocol.MemberStopped {
		t.Fatalf("alice after SIGTERM: %s", m.Status)
	}
	for _, e := range second.events {
		if _, ok := e["ts"].(string); !ok || !strings.Contains(e["ts"].(string), "T") {
			t.Fatalf("event without ts: %v", e)
		}
	}
}

// TestUINeedsATerminal: without a terminal on stdout the UI commands say so
// in one line and point to --headless.
func TestUINeedsATerminal(t *testing.T) {
	dir := demoTeam(t)
	for _, args := range [][]string{{"up", "--dir", dir}, {"attach", "--dir", dir}} {
		r := huddle(t, args...)
		r.wantError(t, ExitUsage, "--headless", args...)
		if !strings.Contains(r.stderr, "not a terminal") {
			t.Errorf("huddle %v: %q does not say why", args, r.stderr)
		}
	}
}

// TestUpOnARunningTeamSaysAttach: a second huddle up on a team that runs
// says it runs, by which pid, and how to open it, in one line, exit 1,
// on a terminal or not, and takes nothing from the first.
func TestUpOnARunningTeamSaysAttach(t *testing.T) {
	dir := demoTeam(t)
	first := startUp(t, dir)
	testkit.WaitFor(t, 10*time.Second, "team_started", func() bool {
		return first.saw(func(e map[string]any) bool { return e["event"] == "team_started" })
	})
	want := fmt.Sprintf("huddle: up: the team in %s already runs (pid %d): open it with 'huddle attach --dir %s'\n", dir, first.cmd.Process.Pid, dir)
	for _, args := range [][]string{{"up", "--headless", "--dir", dir}, {"up", "--dir", dir}} {
		r := huddle(t, args...)
		if r.code != ExitFail || r.stderr != want {
			t.Fatalf("huddle %v on a running team: exit %d, stderr %q; want %q", args, r.code, r.stderr, want)
		}
	}
	if rs, err := team.ProbeRuntime(dir); err != nil || !rs.Running || rs.Last.PID != first.cmd.Process.Pid {
		t.Fatalf("the first runtime after a second up: %+v %v", rs, err)
	}
}
