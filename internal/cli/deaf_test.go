package cli

import (
	"encoding/json"
	"fmt"
	"os"
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

// TestUpStopsWithADeafAgent: `huddle up --headless` runs an exec teammate
// that never reads its stdin and ignores SIGINT and SIGTERM; 300 messages
// wait for it and its stdin pipe is full. SIGTERM to huddle up: it exits
// within 10 s, cleanly, with team_stopped, and the agent is gone.
func TestUpStopsWithADeafAgent(t *testing.T) {
	dir := t.TempDir()
	spec := team.Team{Name: "deaf", Members: []team.MemberSpec{{
		Name: "deaf", Role: "never reads",
		Runtime: team.RuntimeSpec{Kind: team.RuntimeExec, Command: []string{"sh", "-c",
			`trap '' INT TERM; echo '{"action":"status","status":"idle","activity":"deaf"}'; exec sleep 1000`}},
	}}}
	b, _ := json.Marshal(spec)
	if err := os.WriteFile(team.ConfigPath(dir), b, 0o600); err != nil {
		t.Fatal(err)
	}
	up := startUp(t, dir)
	var pid int
	testkit.WaitFor(t, 10*time.Second, "the deaf agent running, deaf to signals", func() bool {
		m, err := dirrecords.LoadMember(dir, "deaf")
		if err != nil || m.Activity != "deaf" {
			return false
		}
		pid = m.PID
		return true
	})
	tm, err := team.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The first message is larger than any pipe buffer.
	if err := dirlead.Send(dir, tm, protocol.Lead, "deaf", strings.Repeat("x", 256<<10)); err != nil {
		t.Fatal(err)
	}
	for i := range 299 {
		if err := dirlead.Send(dir, tm, protocol.Lead, "deaf", fmt.Sprintf("message %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	testkit.WaitFor(t, 10*time.Second, "the deaf agent's stdin full", func() bool { return testkit.StdinFull(pid) })
	start := time.Now()
	if err := up.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-up.done:
	case <-time.After(10 * time.Second):
		t.Fatal("huddle up did not exit within 10 s of SIGTERM, with a deaf agent")
	}
	if err := up.cmd.Wait(); err != nil {
		t.Fatalf("huddle up exit: %v", err)
	}
	t.Logf("huddle up exited %v after SIGTERM", time.Since(start).Round(time.Millisecond))
	if !up.saw(func(e map[string]any) bool { return e["event"] == "team_stopped" }) {
		t.Fatal("no team_stopped event")
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("the deaf agent (pid %d) outlived huddle up", pid)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}
