package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"huddle/ipc"
	"huddle/team"
)

// freePort finds a loopback port that is free now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startServe runs `huddle serve` and waits for its address line.
func startServe(t *testing.T, dir, addr string, extra ...string) (stderr *strings.Builder) {
	t.Helper()
	cmd := exec.Command(teamCLIBinary(t), append([]string{"serve", "--dir", dir, "--addr", addr}, extra...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr = &strings.Builder{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.Contains(line, "on http://"+addr) {
		t.Fatalf("huddle serve: %q %v (stderr %s)", line, err, stderr.String())
	}
	return stderr
}

func writeTeamFiles(t *testing.T, dir string, tm team.Team, files map[string]string) {
	t.Helper()
	b, _ := json.Marshal(tm)
	os.WriteFile(team.ConfigPath(dir), b, 0o600)
	for name, content := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func teamChains(t *testing.T, dir string) []ipc.Chain {
	t.Helper()
	spans, err := ipc.NewTraceReader(dir).Read()
	if err != nil {
		t.Fatal(err)
	}
	tr := ipc.NewTraces()
	for _, s := range spans {
		tr.Add(s)
	}
	return tr.Chains()
}

// callsOf lists "caller→target.action status remote?" of a chain.
func callsOf(c ipc.Chain) []string {
	var out []string
	for _, r := range c.Rows {
		s := fmt.Sprintf("%s→%s.%s %s", r.Call.Caller, r.Call.Target, r.Call.Action, r.Call.Status)
		if r.Call.Remote != "" {
			s += " remote"
		}
		out = append(out, s)
	}
	return out
}

// TestTwoTeamsOnLoopback: four processes (up and serve for teams A and B).
// alpha in A calls bravo in B over HTTP; bravo's action calls back into A's
// echo. The chain is in both teams' traces under one correlation id.
func TestTwoTeamsOnLoopback(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	addrA, addrB := freePort(t), freePort(t)
	wait := team.Step{Wait: team.Duration(time.Hour)}
	script := func(name string, steps ...team.Step) team.MemberSpec {
		return team.MemberSpec{Name: name, Role: "test", Runtime: team.RuntimeSpec{Kind: team.RuntimeScript, Steps: steps}}
	}
	alpha := script("alpha", team.Step{Call: "bravo", Action: "act", Prompt: "from A", TimeoutSec: 20}, wait)
	alpha.IPC = "ipc/alpha.json"
	echo := script("echo", wait)
	echo.Actions = map[string]team.ActionSpec{"echo": {Reply: "echoed in A"}}
	remoteBravo := team.MemberSpec{Name: "bravo", Role: "B's bravo", Target: &team.TargetSpec{Kind: team.TargetHTTP, URL: "http://" + addrB, Skill: "bravo.act"}}
	writeTeamFiles(t, a, team.Team{Name: "team-a", Members: []team.MemberSpec{alpha, echo, remoteBravo}}, map[string]string{
		"ipc/alpha.json":   `{"allowed_targets":["bravo"]}`,
		".puruto-ipc.json": `{"allowed_targets":["echo"]}`,
	})
	bravo := script("bravo", wait)
	bravo.IPC = "ipc/bravo.json"
	bravo.Actions = map[string]team.ActionSpec{"act": {Reply: "done in B", Call: &team.CallSpec{Target: "back", Action: "echo"}}}
	back := team.MemberSpec{Name: "back", Role: "A's echo", Target: &team.TargetSpec{Kind: team.TargetHTTP, URL: "http://" + addrA, Skill: "echo.echo"}}
	writeTeamFiles(t, b, team.Team{Name: "team-b", Members: []team.MemberSpec{bravo, back}}, map[string]string{
		"ipc/bravo.json":   `{"allowed_targets":["back"]}`,
		".puruto-ipc.json": `{"allowed_targets":["bravo"]}`,
	})
	startServe(t, a, addrA)
	startServe(t, b, addrB)
	startUp(t, b)
	upA := startUp(t, a)
	t.Cleanup(func() {
		if t.Failed() {
			ta, _ := os.ReadFile(filepath.Join(a, "traces.jsonl"))
			t.Logf("traces A:\n%s", ta)
		}
	})
	waitUntil(t, 30*time.Second, "alpha's call to end", func() bool {
		return upA.saw(func(e map[string]any) bool { return e["event"] == "call" && e["member"] == "alpha" })
	})
	if !upA.saw(func(e map[string]any) bool {
		return e["event"] == "call" && e["member"] == "alpha" && e["status"] == "ok"
	}) {
		t.Fatalf("alpha's call failed: %v", upA.events)
	}
	var corr string
	for _, c := range teamChains(t, a) {
		for _, r := range c.Rows {
			if r.Call.Caller == "alpha" {
				corr = c.CorrelationID
			}
		}
	}
	if corr == "" {
		t.Fatal("alpha's call is not in A's traces")
	}
	find := func(dir string) []string {
		for _, c := range teamChains(t, dir) {
			if c.CorrelationID == corr {
				return callsOf(c)
			}
		}
		return nil
	}
	waitUntil(t, 10*time.Second, "the whole chain in both traces", func() bool {
		return len(find(a)) == 2 && len(find(b)) == 2
	})
	inA, inB := strings.Join(find(a), " | "), strings.Join(find(b), " | ")
	for _, want := range []string{"alpha→bravo.act ok remote", "bravo→echo.echo ok"} {
		if !strings.Contains(inA, want) {
			t.Errorf("A's chain %q lacks %q", inA, want)
		}
	}
	for _, want := range []string{"alpha→bravo.act ok", "bravo→back.echo ok remote"} {
		if !strings.Contains(inB, want) {
			t.Errorf("B's chain %q lacks %q", inB, want)
		}
	}
}
