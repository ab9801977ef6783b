// Package claudefix writes Claude Code agent teams as Claude Code lays
// them out, for the tests of the commands that read them. Only tests
// import it.
package claudefix

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"huddle/claudeteam"
)

// Team writes a Claude Code team under root the way Claude Code
// lays it out: config.json with members, inboxes as JSON arrays.
func Team(t testing.TB, root, name string, members []string, inboxes map[string][]claudeteam.Entry) {
	t.Helper()
	dir := filepath.Join(root, "teams", name)
	if err := os.MkdirAll(filepath.Join(dir, "inboxes"), 0o700); err != nil {
		t.Fatal(err)
	}
	var ms []map[string]any
	for _, m := range append([]string{claudeteam.LeadName}, members...) {
		ms = append(ms, map[string]any{"agentId": m + "@" + name, "name": m, "agentType": "general-purpose", "model": "claude-sonnet-4-6"})
	}
	b, _ := json.MarshalIndent(map[string]any{"name": name, "leadAgentId": "team-lead@" + name, "members": ms}, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	for member, es := range inboxes {
		b, _ := json.MarshalIndent(es, "", "  ")
		if err := os.WriteFile(filepath.Join(dir, "inboxes", member+".json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// Text is a message of Claude Code's as an inbox entry carries it.
func Text(fields map[string]any) string {
	b, _ := json.Marshal(fields)
	return string(b)
}

// Alpha is the team "alpha": alice idle with a pending plan, bob asked a permission that
// the lead allowed.
func Alpha(t testing.TB, root string) {
	t.Helper()
	at := claudeteam.Stamp(time.Now().Add(-time.Minute))
	Team(t, root, "alpha", []string{"alice", "bob"}, map[string][]claudeteam.Entry{
		claudeteam.LeadName: {
			{From: "alice", Text: Text(map[string]any{"type": "idle_notification", "from": "alice", "idleReason": "available"}), Timestamp: at},
			{From: "alice", Text: Text(map[string]any{"type": "plan_approval_request", "requestId": "plan-1@alice", "from": "alice", "planContent": "refactor the parser", "planFilePath": "/p.md"}), Timestamp: at},
			{From: "bob", Text: Text(map[string]any{"type": "permission_request", "request_id": "perm-1", "agent_id": "bob", "tool_name": "Bash", "description": "run tests", "input": map[string]any{"command": "go test"}}), Timestamp: at},
		},
		"bob": {
			{From: claudeteam.LeadName, Text: Text(map[string]any{"type": "permission_response", "request_id": "perm-1", "subtype": "success", "response": map[string]any{}}), Timestamp: at, Read: true},
		},
	})
}
