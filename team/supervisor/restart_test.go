package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/internal/testkit/dirlead"
	"huddle/internal/testkit/dirrecords"
	"huddle/internal/testkit/teamkit"
	"huddle/protocol"
	"huddle/store/filestore"
	"huddle/team"
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
	st, err := filestore.Open(os.Getenv("DIR"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer st.Close()
	if err := Run(ctx, st, os.Getenv("DIR"), opts); err != nil {
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
	cmd.Env = append(append(os.Environ(), teamkit.RoleEnv+"=runtime", "DIR="+dir), env...)
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
	testkit.WaitFor(t, 15*time.Second, what, func() bool {
		m, err := dirrecords.LoadMember(dir, member)
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
	bob := teamkit.Scripted("bob", "", team.Step{Wait: team.Duration(time.Hour)})
	bob.Actions = map[string]team.ActionSpec{"echo": {Reply: "ok"}}
	alice := withPolicy(t, dir, teamkit.Scripted("alice", "",
		team.Step{Plan: "the plan"}, team.Step{Say: "lead", Text: "after the plan"},
		team.Step{Call: "bob", Action: "echo", Prompt: "hi", TimeoutSec: 10}, team.Step{Wait: team.Duration(time.Hour)}),
		`{"allowed_targets":["bob"]}`)
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: []team.MemberSpec{alice, bob}})
	waiting := func(m *protocol.Member) bool { return m.Status == protocol.MemberIdle && m.Activity == "waiting" }

	first := startRuntimeProcess(t, dir, "AUTO=1")
	run1 := waitRun(t, dir, "alice", "", "alice waiting after her plan, message and call", waiting)
	kill9(t, first)

	startRuntimeProcess(t, dir) // no auto-approve: a second plan would wait
	waitRun(t, dir, "alice", run1, "alice resumed at her wait step", waiting)
	rs, err := dirrecords.ListRequests(dir)
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

// TestExecRequestsGivenAgainAfterACrash: an exec teammate was given a
// shutdown request and an invocation and answered neither when the runtime
// was killed -9 (both lines committed). The next runtime gives both to the
// new process, which answers them: the caller, still waiting, gets its
// answer, and the shutdown is approved.
func TestExecRequestsGivenAgainAfterACrash(t *testing.T) {
	dir := t.TempDir()
	tally := filepath.Join(t.TempDir(), "tally")
	driver := withPolicy(t, dir, team.MemberSpec{Name: "driver", Runtime: team.RuntimeSpec{Kind: team.RuntimeExternal}}, `{"allowed_targets":["x"]}`)
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: []team.MemberSpec{roleSpec("x", "tally", "TALLY="+tally), driver}})
	first := startRuntimeProcess(t, dir)
	waitRun(t, dir, "x", "", "x running", func(m *protocol.Member) bool { return m.Status == protocol.MemberWorking })

	sd, err := dirlead.RequestShutdown(dir, "x", "time to go")
	if err != nil {
		t.Fatal(err)
	}
	ctx, caller := outsideCaller(t, dir, "driver")
	result := make(chan protocol.InvocationResult, 1)
	go func() {
		result <- caller.Call(ctx, protocol.InvocationRequest{Caller: "driver", Target: "x", Action: "audit", Prompt: "invoice 9", TimeoutSec: 60})
	}()
	testkit.WaitFor(t, 10*time.Second, "x given both", func() bool {
		return len(tallied(tally, protocol.TypeShutdownRequest)) == 1 && len(tallied(tally, protocol.TypeInvocationRequest)) == 1
	})
	kill9(t, first)

	// The next run's process answers what it is given.
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: []team.MemberSpec{roleSpec("x", "echo"), driver}})
	startRuntimeProcess(t, dir)
	select {
	case res := <-result:
		var out struct{ Summary string }
		if res.Status != protocol.ResultOK || json.Unmarshal(res.Result, &out) != nil || out.Summary != "echo: invoice 9" {
			t.Fatalf("the call: %+v", res)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the call was not answered after the restart")
	}
	testkit.WaitFor(t, 10*time.Second, "the shutdown approved by x", func() bool {
		r, err := dirrecords.LoadRequest(dir, sd.ID)
		return err == nil && r.Status == protocol.RequestApproved && r.ResolvedBy == "x"
	})
}
