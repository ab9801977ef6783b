package realcli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fixtures is where `make record-agents` writes what the scenarios saw.
const fixtures = "../../agents/testdata/real"

// readFixture reads a committed fixture's JSON lines, failing on a line
// that is not a JSON object, on a key, or on a path of the machine that
// recorded it.
func readFixture(t *testing.T, cli, name string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures, cli, name))
	if err != nil {
		t.Fatalf("%v (record the fixtures with make record-agents)", err)
	}
	for _, s := range secrets {
		if bytes.Contains(b, []byte(s)) {
			t.Errorf("%s/%s holds a key", cli, name)
		}
	}
	if bytes.Contains(b, []byte("huddle-record-")) || bytes.Contains(b, []byte(os.Getenv("HOME")+"/")) {
		t.Errorf("%s/%s holds a path of the machine that recorded it", cli, name)
	}
	var lines [][]byte
	for i, l := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		var v map[string]any
		if err := json.Unmarshal(l, &v); err != nil {
			t.Fatalf("%s/%s:%d is not a JSON object: %v", cli, name, i+1, err)
		}
		lines = append(lines, l)
	}
	return lines
}

// TestClaudeFixture: the recorded plan scenario holds what
// ClaudePlanScenario drives, and every control_response answers a
// control_request it printed.
func TestClaudeFixture(t *testing.T) {
	out := readFixture(t, "claude", "plan-deny-revise-work.jsonl")
	in := readFixture(t, "claude", "plan-deny-revise-work.stdin.jsonl")
	init, ok := ClaudeInitOf(out)
	if !ok || init.PermissionMode != "plan" || init.Version != ClaudeVersion || init.Cwd != RootPlaceholder+"/work" {
		t.Errorf("init: %+v", init)
	}
	var asked, results []string
	requests := map[string]bool{}
	for _, l := range out {
		var e struct {
			Type      string
			RequestID string `json:"request_id"`
			Request   struct {
				ToolName string `json:"tool_name"`
			}
			Result string
		}
		decode(t, l, &e)
		switch e.Type {
		case "control_request":
			asked = append(asked, e.Request.ToolName)
			requests[e.RequestID] = true
		case "result":
			results = append(results, e.Result)
		}
	}
	if got := strings.Join(asked, " "); got != "ExitPlanMode ExitPlanMode Write Bash Bash" {
		t.Errorf("prompts %s", got)
	}
	if !slices.Equal(results, []string{ClaudeDone, ClaudeWelcome}) {
		t.Errorf("results %q", results)
	}
	var sent []string
	for _, l := range in {
		var m struct {
			Type     string
			Response struct {
				RequestID string `json:"request_id"`
				Response  struct{ Behavior string }
			}
		}
		decode(t, l, &m)
		if m.Type == "control_response" {
			if !requests[m.Response.RequestID] {
				t.Errorf("a control_response to no control_request: %s", l)
			}
			sent = append(sent, m.Response.Response.Behavior)
		} else {
			sent = append(sent, m.Type)
		}
	}
	if got := strings.Join(sent, " "); got != "user deny allow allow allow deny user" {
		t.Errorf("sent %s", got)
	}
}

// TestClaudeAPIErrorFixture: the recorded API-error scenario ends its one
// run with a result that says the API's error, is_error set under a
// "success" subtype.
func TestClaudeAPIErrorFixture(t *testing.T) {
	out := readFixture(t, "claude", "api-error.jsonl")
	readFixture(t, "claude", "api-error.stdin.jsonl")
	var results []ClaudeResult
	for _, l := range out {
		var r ClaudeResult
		if decode(t, l, &r); bytes.Contains(l, []byte(`"type":"result"`)) {
			results = append(results, r)
		}
	}
	if len(results) != 1 || results[0].Subtype != "success" || !results[0].IsError || !strings.Contains(results[0].Result, ClaudeAPIErrorText) {
		t.Errorf("results %+v", results)
	}
}

// TestCodexFixture: the recorded approvals scenario holds what
// CodexApprovalsScenario drives, and every answer on stdin answers a
// request the server printed.
func TestCodexFixture(t *testing.T) {
	out := readFixture(t, "codex", "approvals.jsonl")
	in := readFixture(t, "codex", "approvals.stdin.jsonl")
	var asked, notes []string
	serverRequests := map[string]bool{}
	for _, l := range out {
		m, _ := readRPC(l)
		switch {
		case m.IsRequest():
			asked = append(asked, strings.TrimSuffix(strings.TrimPrefix(m.Method, "item/"), "/requestApproval"))
			serverRequests[string(m.ID)] = true
		case m.Method == "turn/plan/updated" || m.Method == "turn/completed":
			notes = append(notes, m.Method)
		}
	}
	if got := strings.Join(asked, " "); got != "commandExecution fileChange commandExecution fileChange commandExecution" {
		t.Errorf("approvals %s", got)
	}
	if got := strings.Join(notes, " "); got != "turn/plan/updated turn/completed turn/completed" {
		t.Errorf("notifications %s", got)
	}
	if !hasLine(out, `"method":"turn/diff/updated"`) || !hasLine(out, `"method":"thread/tokenUsage/updated"`) {
		t.Error("no turn/diff/updated or thread/tokenUsage/updated")
	}
	var sent []string
	for _, l := range in {
		var m struct {
			ID     json.RawMessage
			Method string
			Result struct{ Decision string }
		}
		decode(t, l, &m)
		if m.Method != "" {
			sent = append(sent, m.Method)
			continue
		}
		if !serverRequests[string(m.ID)] {
			t.Errorf("an answer to no request of the server's: %s", l)
		}
		sent = append(sent, m.Result.Decision)
	}
	want := "initialize initialized thread/start turn/start accept accept decline decline turn/start acceptForSession"
	if got := strings.Join(sent, " "); got != want {
		t.Errorf("sent %s\nwant %s", got, want)
	}
}
