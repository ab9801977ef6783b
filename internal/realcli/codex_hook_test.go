package realcli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"huddle/internal/fakeapi"
)

// TestCodexPermissionRequestHook: codex 0.169.0 runs a PermissionRequest
// command hook of $CODEX_HOME/hooks.json before it would ask for an
// approval, with the input and output shapes `huddle hook codex` relies
// on; the hook's allow runs the command outside the read-only sandbox,
// its deny keeps it from running and its message reaches the model, and
// neither reaches the app server's client as an approval request. Codex
// runs a hook of the user's only once it is trusted: /hooks in its TUI
// records that in config.toml as [hooks.state."KEY"] trusted_hash, which
// TrustHooks writes from what hooks/list reports.
func TestCodexPermissionRequestHook(t *testing.T) {
	b := pinned(t)
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTime)
	defer cancel()
	const why = "the desk denies this"
	escalated := func(cmd string) fakeapi.Turn {
		return fakeapi.Turn{Calls: []fakeapi.Call{{Name: "exec_command", Input: map[string]any{
			"cmd": cmd, "sandbox_permissions": "require_escalated", "justification": "Touch a file?"}}}}
	}
	fake := fakeapi.Responses(escalated("touch allowed.txt"), escalated("touch denied.txt"), fakeapi.Turn{Text: "done"})
	defer fake.Close()
	defer noneRefused(t, fake)
	root := t.TempDir()
	e, err := CodexEnv(root, fake.URL())
	if err != nil {
		t.Fatal(err)
	}
	hook, asked := scriptHook(t, root, `*denied.txt*`, why)
	hooks, _ := json.Marshal(map[string]any{"hooks": map[string]any{"PermissionRequest": []any{map[string]any{
		"hooks": []any{map[string]any{"type": "command", "command": hook, "timeout": 600}}}}}})
	if err := os.WriteFile(filepath.Join(root, "codex-home", "hooks.json"), hooks, 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Start("codex", b.Codex, CodexArgs, e)
	if err != nil {
		t.Fatal(err)
	}
	c := &Codex{Proc: p}
	defer func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	}()
	if err := c.Call(ctx, "initialize", map[string]any{"clientInfo": map[string]any{"name": "huddle", "version": "0.0.0"}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Notify("initialized", nil); err != nil {
		t.Fatal(err)
	}
	if err := c.TrustHooks(ctx, e, e.Work); err != nil {
		t.Fatal(err)
	}
	var th CodexThreadStarted
	if err := c.Call(ctx, "thread/start", map[string]any{"cwd": e.Work, "approvalPolicy": codexApprovalPolicy, "sandbox": codexSandbox}, &th); err != nil {
		t.Fatal(err)
	}
	if err := c.Call(ctx, "turn/start", map[string]any{"threadId": th.Thread.ID, "input": []any{map[string]any{"type": "text", "text": "Touch two files."}}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExpectTurnCompleted(ctx); err != nil { // an approval request first fails it
		hooked, _ := os.ReadFile(asked)
		t.Fatalf("%v\nthe hook read: %s\nstderr:\n%s", err, hooked, c.Stderr())
	}

	raw, err := os.ReadFile(asked)
	if err != nil {
		t.Fatalf("the hook was never asked: %v\nstderr:\n%s", err, c.Stderr())
	}
	type hookInput struct {
		SessionID string          `json:"session_id"`
		TurnID    string          `json:"turn_id"`
		Cwd       string          `json:"cwd"`
		Event     string          `json:"hook_event_name"`
		Mode      string          `json:"permission_mode"`
		Model     string          `json:"model"`
		Tool      string          `json:"tool_name"`
		Input     json.RawMessage `json:"tool_input"`
	}
	got := askedOf[hookInput](t, raw)
	if len(got) != 2 {
		t.Fatalf("the hook was asked %d times: %s", len(got), raw)
	}
	for i, a := range got {
		want := []string{"touch allowed.txt", "touch denied.txt"}[i]
		if a.SessionID != th.Thread.ID || a.TurnID == "" || a.Cwd != e.Work || a.Event != "PermissionRequest" || a.Tool != "Bash" ||
			a.Model != CodexModel || !strings.Contains(string(a.Input), `"command":"`+want) {
			t.Errorf("the hook's input %d: %+v %s", i, a, a.Input)
		}
	}
	if _, err := os.Stat(filepath.Join(e.Work, "allowed.txt")); err != nil {
		t.Errorf("the allowed command did not run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.Work, "denied.txt")); err == nil {
		t.Error("the denied command ran")
	}
	var bodies strings.Builder
	for _, r := range fake.Served() {
		bodies.Write(r.Body)
	}
	if !strings.Contains(bodies.String(), why) {
		t.Errorf("the model never read the deny's message %q", why)
	}
}
