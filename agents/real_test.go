package agents_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"huddle/internal/fakeapi"
	"huddle/internal/procenv"
	"huddle/internal/realcli"
	"huddle/internal/testkit"
	"huddle/internal/testkit/files"
	"huddle/team/supervisor"
	"huddle/teamdir"
)

// TestRealCodexEndsWithTheTeam: the real codex 0.169.0, run by `huddle
// agent codex` as a teammate, is mid-turn (its model request held by the
// fake) when the runtime stops: afterwards no process of it is left, the
// npm launcher's native child included, as /proc tells.
func TestRealCodexEndsWithTheTeam(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b, err := realcli.Install(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hold := make(chan struct{})
	defer close(hold)
	fake := fakeapi.Responses(fakeapi.Turn{Hold: hold})
	defer fake.Close()
	e, err := realcli.CodexEnv(t.TempDir(), fake.URL())
	if err != nil {
		t.Fatal(err)
	}
	var home string
	for _, v := range e.Vars {
		k, val, _ := strings.Cut(v, "=")
		t.Setenv(k, val)
		if k == "CODEX_HOME" {
			home = v
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(huddleEnv, "1")
	dir := t.TempDir()
	spec := map[string]any{"name": "agents", "members": []any{map[string]any{
		"name": "coder", "role": "writes the change", "runtime": map[string]any{"kind": "exec",
			"command": []string{"huddle", "agent", "codex", "--task", "Say hello.", "--bin", b.Codex, "--", "--skip-git-repo-check"}}}}}
	sb, _ := json.Marshal(spec)
	if err := os.WriteFile(teamdir.ConfigPath(dir), sb, 0o600); err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- supervisor.Run(rctx, files.Open(t, dir), dir, supervisor.Options{Executable: exe}) }()

	if _, err := fake.Wait(ctx, 1); err != nil {
		t.Fatal(err)
	}
	var pids []int
	testkit.WaitFor(t, 30*time.Second, "codex's processes (the launcher and its native child)", func() bool {
		pids = procenv.With(home)
		return len(pids) >= 2
	})
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the runtime did not stop within 30 s")
	}
	// By the time Run returns, each is dead or has SIGKILL pending: none
	// lives on to finish its turn.
	for _, pid := range pids {
		if !doomed(pid) {
			t.Errorf("process %d of the teammate lives on after the runtime stopped", pid)
		}
	}
	testkit.WaitFor(t, 15*time.Second, "every process of the teammate gone", func() bool { return len(procenv.With(home)) == 0 })
	t.Logf("the teammate ran %d processes (the adapter, codex's launcher, its native binary); none is left", len(pids))
}

// doomed reports whether pid is gone, a zombie, or has a SIGKILL
// pending.
func doomed(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return true
	}
	for l := range strings.Lines(string(b)) {
		k, v, _ := strings.Cut(strings.TrimSpace(l), ":")
		v = strings.TrimSpace(v)
		switch k {
		case "State":
			if strings.HasPrefix(v, "Z") || strings.HasPrefix(v, "X") {
				return true
			}
		case "SigPnd", "ShdPnd":
			if mask, err := strconv.ParseUint(v, 16, 64); err == nil && mask&(1<<(9-1)) != 0 {
				return true
			}
		}
	}
	return false
}
