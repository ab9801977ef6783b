package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"huddle/internal/fakeapi"
	"huddle/internal/realcli"
	"huddle/internal/testkit"
)

// TestClaudeCodeDelegatesThroughHuddleMCP: the real Claude Code (pinned,
// its model a loopback fake), configured with huddle mcp as docs/doors.md
// says, names the team's tools to the model, loads call_action
// (ToolSearch) and calls it on the planner,
// whose plan the lead approves with huddle approve, and gets the planner's
// answer back as the tool's result. The call is in the team's traces as
// Claude Code's (--caller claude).
func TestClaudeCodeDelegatesThroughHuddleMCP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bins, err := realcli.Install(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := a2aTeamDir(t)
	startUp(t, dir)
	testkit.WaitFor(t, 30*time.Second, "planner's plan to wait", func() bool {
		return strings.Contains(huddle(t, "requests", "--dir", dir).stdout, "planner")
	})
	const callID = "toolu_huddle_1"
	// Claude Code defers MCP tools: it names them, and the model loads one
	// with ToolSearch ("select:NAME") before it calls it.
	fake := fakeapi.Anthropic(
		fakeapi.Turn{Make: func(r fakeapi.Request) (fakeapi.Turn, error) {
			if !strings.Contains(string(r.Body), "mcp__huddle__call_action") {
				return fakeapi.Turn{}, fmt.Errorf("Claude Code names no huddle tool")
			}
			return fakeapi.Turn{Calls: []fakeapi.Call{{Name: "ToolSearch", Input: map[string]any{"query": "select:mcp__huddle__call_action"}}}}, nil
		}},
		fakeapi.Turn{Make: func(r fakeapi.Request) (fakeapi.Turn, error) {
			m, err := r.Messages()
			if err != nil {
				return fakeapi.Turn{}, err
			}
			if names := strings.Join(m.ToolNames(), " "); !strings.Contains(names, "mcp__huddle__call_action") {
				return fakeapi.Turn{}, fmt.Errorf("huddle's call_action is not loaded: %s", names)
			}
			return fakeapi.Turn{Calls: []fakeapi.Call{{ID: callID, Name: "mcp__huddle__call_action",
				Input: map[string]any{"member": "planner", "action": "act", "prompt": "read the ledger for me"}}}}, nil
		}},
		fakeapi.Turn{Make: func(r fakeapi.Request) (fakeapi.Turn, error) {
			m, err := r.Messages()
			if err != nil {
				return fakeapi.Turn{}, err
			}
			res, ok := m.ToolResult(callID)
			if !ok {
				return fakeapi.Turn{}, fmt.Errorf("no result of the huddle call in the request")
			}
			return fakeapi.Turn{Text: "the team answered: " + res.Content}, nil
		}},
	)
	defer fake.Close()
	e, err := realcli.ClaudeEnv(t.TempDir(), fake.URL())
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "mcp.json")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"huddle": map[string]any{
		"type": "stdio", "command": huddleBinary(t), "args": []string{"mcp", "--dir", dir, "--caller", "claude"}}}})
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, bins.Claude, "-p", "Ask the huddle team's planner to read the ledger.", "--output-format", "json",
		"--mcp-config", cfg, "--strict-mcp-config", "--allowedTools", "mcp__huddle__call_action")
	cmd.Env, cmd.Dir = e.Vars, e.Work
	var out, stderr testkit.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("claude stdout %s\nstderr %s\nrequests %d refused %d", out.String(), stderr.String(), len(fake.Requests()), len(fake.Refused()))
			for _, r := range fake.Refused() {
				m, _ := r.Messages()
				i := strings.Index(string(r.Body), "mcp__huddle")
				t.Logf("refused: tools %v; mcp__huddle at %d: %.400s", m.ToolNames(), i, string(r.Body)[max(i-200, 0):])
			}
		}
	})
	// The model asked for the call: the lead approves the plan it waits on.
	testkit.WaitFor(t, 60*time.Second, "Claude Code's call of call_action", func() bool { return len(fake.Served()) >= 2 })
	var id string
	for _, f := range strings.Fields(huddle(t, "requests", "--dir", dir).stdout) {
		if strings.HasPrefix(f, "pl-") {
			id = f
		}
	}
	if r := huddle(t, "approve", id, "--dir", dir); r.code != 0 {
		t.Fatalf("huddle approve %s: %+v", id, r)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("claude: %v\nstdout %s\nstderr %s\nrefused %v", err, out.String(), stderr.String(), fake.Refused())
		}
	case <-ctx.Done():
		t.Fatal("claude did not end")
	}
	var res struct {
		Result string `json:"result"`
	}
	// Claude Code hands the model the structured content: the status and
	// the planner's result.
	if err := json.Unmarshal([]byte(out.String()), &res); err != nil || !strings.HasPrefix(res.Result, "the team answered: ") ||
		!strings.Contains(res.Result, `"summary":"planner acted"`) || !strings.Contains(res.Result, `"status":"ok"`) {
		t.Fatalf("Claude Code's answer: %q (%v)\nstderr %s", out.String(), err, stderr.String())
	}
	var found bool
	for _, c := range teamChains(t, dir) {
		for _, r := range c.Rows {
			found = found || (r.Call.Caller == "claude" && r.Call.Target == "planner" && r.Call.Status == "ok")
		}
	}
	if !found {
		t.Error("Claude Code's call is not in the team's traces")
	}
}
