package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/ipc/trace"
	"huddle/protocol"
	"huddle/team"
)

// TestCallFromAnotherProcess: `huddle call` from a second process against a
// team that `huddle up` runs: the teammate answers, and the call shows in
// that team's traces with the CLI's caller.
func TestCallFromAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	alice := team.MemberSpec{Name: "alice", Role: "greeter", Runtime: team.RuntimeSpec{Kind: team.RuntimeScript,
		Steps: []team.Step{{Wait: team.Duration(time.Hour)}}},
		Actions: map[string]team.ActionSpec{"greet": {Reply: "hello from alice"}}}
	b, _ := json.Marshal(team.Team{Name: "calls", Members: []team.MemberSpec{alice}})
	if err := os.WriteFile(team.ConfigPath(dir), b, 0o600); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(t.TempDir(), ".puruto-ipc.json")
	os.WriteFile(config, []byte(`{"enabled":true,"owner":"tester","max_hops":2,"default_timeout_sec":20,"allowed_targets":["alice"],"allowed_actions":{}}`), 0o600)
	up := startUp(t, dir)
	testkit.WaitFor(t, 10*time.Second, "the team", func() bool {
		return up.saw(func(e map[string]any) bool { return e["event"] == "team_started" })
	})

	r := mustHuddle(t, "call", "--target", "alice", "--action", "greet", "--prompt", "hi", "--config", config, "--dir", dir)
	var out struct {
		Request  protocol.InvocationRequest `json:"request"`
		Response protocol.InvocationResult  `json:"response"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("output is not {request, response}: %v\n%s", err, r.stdout)
	}
	if out.Response.Status != protocol.ResultOK || !strings.Contains(string(out.Response.Result), "hello from alice") ||
		out.Request.Caller != "tester" || out.Response.RequestID != out.Request.RequestID {
		t.Fatalf("call: %+v", out)
	}
	spans, err := trace.NewTraceReader(dir).Read()
	if err != nil {
		t.Fatal(err)
	}
	var start, end bool
	for _, s := range spans {
		if s.RequestID == out.Request.RequestID && s.Caller == "tester" && s.Target == "alice" {
			start = start || s.Span == trace.SpanStart
			end = end || (s.Span == trace.SpanEnd && s.Status == protocol.ResultOK)
		}
	}
	if !start || !end {
		t.Fatalf("the call is not in the team's traces: %+v", spans)
	}

	// An action alice does not have: exit 1, with the error result.
	r = huddle(t, "call", "--target", "alice", "--action", "fly", "--prompt", "hi", "--config", config, "--dir", dir)
	if r.code != exitFail || !strings.Contains(r.stdout, `alice has no action \"fly\"`) {
		t.Fatalf("unknown action: exit %d, %s", r.code, r.stdout)
	}
	// DENIED by the config: exit 1.
	r = huddle(t, "call", "--target", "bob", "--action", "x", "--prompt", "hi", "--config", config, "--dir", dir)
	if r.code != exitFail || !strings.Contains(r.stdout, `"DENIED"`) || !strings.Contains(r.stdout, "not_allowed_target") {
		t.Fatalf("denied: exit %d, %s", r.code, r.stdout)
	}
}

func TestCallArgumentsAndMissingConfig(t *testing.T) {
	cwd := t.TempDir()
	for _, args := range [][]string{
		{"call", "--action", "a", "--prompt", "p"},
		{"call", "--target", "t", "--prompt", "p"},
		{"call", "--target", "t", "--action", "a"},
		{"call", "--target", "t", "--action", "a", "--prompt", "p", "--hop", "-1"},
		{"call", "--target", "t", "--action", "a", "--prompt", "p", "--caller", "Not Valid"},
	} {
		r := huddleIn(t, cwd, nil, args...)
		r.wantError(t, exitUsage, "", args...)
	}
	// No config: an IPC_ERROR result on stdout, exit 1, and no file written.
	r := huddleIn(t, cwd, nil, "call", "--target", "t", "--action", "a", "--prompt", "p")
	if r.code != exitFail || !strings.Contains(r.stdout, `"IPC_ERROR"`) || !strings.Contains(r.stdout, ".puruto-ipc.json") {
		t.Fatalf("missing config: exit %d, %s", r.code, r.stdout)
	}
	if entries, _ := os.ReadDir(cwd); len(entries) != 0 {
		t.Fatalf("huddle call wrote %v into the working directory", entries)
	}
}
