package claudeteam

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"huddle/protocol"
)

// The fixtures are Claude Code team directories written the way Claude Code
// writes them (docs/claude-teams.md): config.json, inboxes as JSON arrays
// indented by two spaces, rewritten in place under a mkdir lock.

func writeConfig(t testing.TB, root, teamName string, members ...string) {
	t.Helper()
	cfg := map[string]any{
		"name": teamName, "description": "fixture", "createdAt": time.Now().UnixMilli(),
		"leadAgentId": LeadName + "@" + teamName,
	}
	var ms []map[string]any
	for _, m := range append([]string{LeadName}, members...) {
		e := map[string]any{"agentId": m + "@" + teamName, "name": m, "agentType": "general-purpose", "model": "claude-opus-4-6", "cwd": "/tmp", "tmuxPaneId": "in-process"}
		if m == LeadName {
			e["agentType"] = LeadName
		}
		ms = append(ms, e)
	}
	cfg["members"] = ms
	b, _ := json.MarshalIndent(cfg, "", "  ")
	if err := os.MkdirAll(inboxesDir(root, teamName), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(configPath(root, teamName), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// textOf encodes a protocol message as Claude Code puts it in text.
func textOf(fields map[string]any) string {
	b, _ := json.Marshal(fields)
	return string(b)
}

func entry(from, text string, at time.Time) Entry {
	return Entry{From: from, Text: text, Timestamp: Stamp(at)}
}

// claudeAppend appends e to an inbox as Claude Code's writeToMailbox does:
// create the file as [] if missing, mkdir the lock (retrying), read, push,
// write the file in place (truncate, then write), rmdir the lock.
func claudeAppend(t testing.TB, path string, e Entry) {
	t.Helper()
	if err := claudeRewrite(path, func(es []map[string]any) []map[string]any {
		var m map[string]any
		b, _ := json.Marshal(e)
		_ = json.Unmarshal(b, &m)
		return append(es, m)
	}); err != nil {
		t.Error(err)
	}
}

// claudeRewrite rewrites an inbox under Claude Code's lock, in place.
func claudeRewrite(path string, change func([]map[string]any) []map[string]any) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err == nil {
		_, _ = f.WriteString("[]")
		f.Close()
	}
	lp := path + ".lock"
	deadline := time.Now().Add(20 * time.Second)
	delay := 5 * time.Millisecond
	for {
		err := os.Mkdir(lp, 0o700)
		if err == nil {
			break
		}
		if !errors.Is(err, os.ErrExist) || time.Now().After(deadline) {
			return err
		}
		// proper-lockfile's retry, as Claude Code configures it: 5 ms,
		// doubling, at most 100 ms apart.
		time.Sleep(delay)
		delay = min(2*delay, 100*time.Millisecond)
	}
	defer os.Remove(lp)
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var es []map[string]any
	// Empty: another writer created the file and has not written its []
	// yet (Claude Code creates it with the wx flag, outside the lock).
	if len(bytes.TrimSpace(b)) > 0 {
		if err := json.Unmarshal(b, &es); err != nil {
			return err
		}
	}
	out, _ := json.MarshalIndent(change(es), "", "  ")
	return os.WriteFile(path, out, 0o600) // in place, as fs.writeFile
}

// markAllRead is what a recipient does after reading its inbox.
func markAllRead(path string) error {
	return claudeRewrite(path, func(es []map[string]any) []map[string]any {
		for _, e := range es {
			e["read"] = true
		}
		return es
	})
}

func request(s State, id string) *protocol.Request {
	for i := range s.Snapshot.Requests {
		if s.Snapshot.Requests[i].ID == id {
			return &s.Snapshot.Requests[i]
		}
	}
	return nil
}

func memberOf(s State, name string) protocol.Member {
	for _, mv := range s.Snapshot.Members {
		if mv.Record.Name == name {
			return mv.Record
		}
	}
	return protocol.Member{}
}

// observe starts an observer whose latest fold the test reads.
func observe(t *testing.T, root, teamName string) *Observer {
	t.Helper()
	o, err := Observe(t.Context(), root, teamName, func(State) {})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := o.Close(); err != nil {
			t.Error(err)
		}
	})
	return o
}

func contentsOf(s State) []string {
	var out []string
	for _, m := range s.Snapshot.Messages {
		out = append(out, m.Msg.Content)
	}
	return out
}

func hasLine(s []string, sub string) bool {
	for _, x := range s {
		if strings.Contains(x, sub) {
			return true
		}
	}
	return false
}

func inbox(root, teamName, member string) string { return InboxPath(root, teamName, member) }
