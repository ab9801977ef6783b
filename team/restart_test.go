package team

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"huddle/protocol"
	"huddle/teamdir"
)

func init() {
	testRoles["runtime"] = runRuntimeRole
}

// runRuntimeRole runs the team in $DIR until SIGTERM (or SIGKILL), with
// auto-approve when $AUTO is 1.
func runRuntimeRole() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	opts := Options{AutoApprove: os.Getenv("AUTO") == "1", Tick: 20 * time.Millisecond}
	if err := Run(ctx, os.Getenv("DIR"), opts); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// startRuntimeProcess runs the team in dir in a child process (the test
// binary in role "runtime"), so that a test can kill -9 it.
func startRuntimeProcess(t *testing.T, dir string, env ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(append(os.Environ(), roleEnv+"=runtime", "DIR="+dir), env...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Error("the runtime process did not stop on SIGTERM")
			_ = cmd.Process.Kill()
			<-done
		}
	})
	return cmd
}

// kill9 kills a runtime process at once and waits for it.
func kill9(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
}

// waitRun waits for member's record of a run other than notRun to satisfy
// cond, and returns that run's id.
func waitRun(t *testing.T, dir, member, notRun, what string, cond func(m *protocol.Member) bool) string {
	t.Helper()
	var run string
	waitFor(t, 15*time.Second, what, func() bool {
		m, err := LoadMember(dir, member)
		if err != nil || m.RunID == notRun || !cond(m) {
			return false
		}
		run = m.RunID
		return true
	})
	return run
}

// TestScriptResumesAfterItsApprovedPlan: a scripted teammate's plan is
// approved, it says its piece and makes its call, then the runtime is
// killed -9. The next runtime resumes it after those steps: no second plan,
// no second message, no second call.
func TestScriptResumesAfterItsApprovedPlan(t *testing.T) {
	dir := t.TempDir()
	bob := scripted("bob", "", Step{Wait: Duration(time.Hour)})
	bob.Actions = map[string]ActionSpec{"echo": {Reply: "ok"}}
	alice := withPolicy(t, dir, scripted("alice", "",
		Step{Plan: "the plan"}, Step{Say: "lead", Text: "after the plan"},
		Step{Call: "bob", Action: "echo", Prompt: "hi", TimeoutSec: 10}, Step{Wait: Duration(time.Hour)}),
		`{"allowed_targets":["bob"]}`)
	writeTeam(t, dir, Team{Name: "t", Members: []MemberSpec{alice, bob}})
	waiting := func(m *protocol.Member) bool { return m.Status == protocol.MemberIdle && m.Activity == "waiting" }

	first := startRuntimeProcess(t, dir, "AUTO=1")
	run1 := waitRun(t, dir, "alice", "", "alice waiting after her plan, message and call", waiting)
	kill9(t, first)

	startRuntimeProcess(t, dir) // no auto-approve: a second plan would wait
	waitRun(t, dir, "alice", run1, "alice resumed at her wait step", waiting)
	rs, err := ListRequests(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Status != protocol.RequestApproved {
		t.Fatalf("requests after the restart: %+v; want the one approved plan", rs)
	}
	lead, _ := os.ReadFile(teamdir.InboxDirPath(dir) + "/lead.jsonl")
	if n := strings.Count(string(lead), "after the plan"); n != 1 {
		t.Fatalf("alice said her piece %d times", n)
	}
	traces, _ := os.ReadFile(teamdir.TracesPath(dir))
	if n := strings.Count(string(traces), `"span":"start"`); n != 1 {
		t.Fatalf("%d calls started; want alice's one:\n%s", n, traces)
	}
}
