package supervisor

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/internal/testkit/dirrecords"
	"huddle/internal/testkit/files"
	"huddle/internal/testkit/teamkit"
	"huddle/protocol"
	"huddle/team"
)

func init() {
	testRoles["spawner"] = runSpawner
	testRoles["orphan"] = runOrphan
}

// runSpawner is an agent that starts a child of its own, as the npm
// launcher of a real CLI starts its native binary (SETSID set: in a
// session of its own, as Codex starts its shells), says "spawned", then
// reads its stdin until EOF (QUIT_AT_ONCE set: exits at once, as a crash
// would) and exits without a thought for the child.
func runSpawner() int {
	exe, _ := os.Executable()
	ready, w, err := os.Pipe()
	if err != nil {
		return 3
	}
	child := exec.Command(exe)
	child.Env = append(os.Environ(), teamkit.RoleEnv+"=orphan")
	if os.Getenv("SETSID") != "" {
		child.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // out of the teammate's group, as Codex runs its shells
	}
	child.ExtraFiles = []*os.File{w} // its fd 3, closed once it wrote its pid
	if err := child.Start(); err != nil {
		return 3
	}
	w.Close()
	_, _ = io.Copy(io.Discard, ready) // until the child closed its end
	_ = json.NewEncoder(os.Stdout).Encode(protocol.ExecLine{Kind: "status", Status: "idle", Activity: "spawned"})
	if os.Getenv("QUIT_AT_ONCE") != "" {
		return 1
	}
	_, _ = io.Copy(io.Discard, bufio.NewReader(os.Stdin))
	return 0
}

// runOrphan ignores the polite signals, writes its pid to $PIDFILE, tells
// its parent by closing fd 3, and sleeps: only SIGKILL ends it.
func runOrphan() int {
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM)
	if err := os.WriteFile(os.Getenv("PIDFILE"), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return 3
	}
	os.NewFile(3, "ready").Close()
	time.Sleep(time.Hour)
	return 0
}

// TestAgentChildrenEndWithIt: what an exec teammate starts ends with it,
// whether the teammate crashed (its child is killed once it exits) or the
// runtime stopped it (the child ignores SIGINT and is killed with the
// teammate's group, or by its mark if it left the group): no process is
// left, as /proc tells.
func TestAgentChildrenEndWithIt(t *testing.T) {
	dir, pids := t.TempDir(), t.TempDir()
	crashPID, stopPID, leavePID := filepath.Join(pids, "crash"), filepath.Join(pids, "stop"), filepath.Join(pids, "leave")
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: []team.MemberSpec{
		roleSpec("crasher", "spawner", "PIDFILE="+crashPID, "QUIT_AT_ONCE=1"),
		roleSpec("stayer", "spawner", "PIDFILE="+stopPID),
		roleSpec("leaver", "spawner", "PIDFILE="+leavePID, "SETSID=1"),
	}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, files.Open(t, dir), dir, Options{}) }()

	crashed := childPID(t, crashPID)
	testkit.WaitFor(t, 15*time.Second, "crasher crashed", func() bool {
		m, err := dirrecords.LoadMember(dir, "crasher")
		return err == nil && m.Status == protocol.MemberCrashed
	})
	testkit.WaitFor(t, 15*time.Second, "the crashed teammate's child gone", func() bool { return gone(crashed) })

	stayed, left := childPID(t, stopPID), childPID(t, leavePID)
	agentPID(t, dir, "stayer", "spawned")
	agentPID(t, dir, "leaver", "spawned")
	if gone(stayed) || gone(left) {
		t.Fatalf("a running teammate's child (%d, %d) is gone before the runtime stopped", stayed, left)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the runtime did not stop within 15 s")
	}
	testkit.WaitFor(t, 15*time.Second, "the stopped teammate's child gone", func() bool { return gone(stayed) })
	testkit.WaitFor(t, 15*time.Second, "the child that left the stopped teammate's group gone", func() bool { return gone(left) })
}

// childPID waits for the pid an orphan wrote to path.
func childPID(t *testing.T, path string) int {
	t.Helper()
	var pid int
	testkit.WaitFor(t, 15*time.Second, "a child's pid in "+path, func() bool {
		b, err := os.ReadFile(path)
		pid, _ = strconv.Atoi(string(b))
		return err == nil && pid > 0
	})
	t.Cleanup(func() {
		// A failed run leaves no orphan for an hour: it is still ours if
		// its environment names path.
		if env, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ")); err == nil && strings.Contains(string(env), "PIDFILE="+path+"\x00") {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return pid
}

// gone reports whether pid has no process, or only a zombie waiting for
// whoever adopted it to reap it.
func gone(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true
	}
	// "pid (comm) state …": the state follows the last ')'.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] == "Z"
}
