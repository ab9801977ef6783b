package realcli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"huddle/internal/fakeapi"
)

// TestCodexAppServerApprovals runs Codex 0.169.0's app server through a
// thread of two turns with command and file-change approvals and checks
// every method and field of it huddle's adapter will rely on.
func TestCodexAppServerApprovals(t *testing.T) {
	b := pinned(t)
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTime)
	defer cancel()
	run, err := CodexApprovalsScenario(ctx, b, t.TempDir())
	if err != nil {
		if run != nil {
			t.Logf("stdout:\n%s", run.StdoutText())
		}
		t.Fatal(err)
	}
	work := run.Env.Work

	var init struct {
		UserAgent string `json:"userAgent"`
		CodexHome string `json:"codexHome"`
	}
	decode(t, run.Init, &init)
	if init.CodexHome != filepath.Join(run.Env.Root, "codex-home") || !strings.HasPrefix(init.UserAgent, "huddle/"+CodexVersion) {
		t.Errorf("initialize: %s", run.Init)
	}
	th := run.Thread
	if th.Thread.ID == "" || string(th.ApprovalPolicy) != `"on-request"` || string(th.Sandbox) != `{"type":"readOnly","networkAccess":false}` ||
		th.Model != CodexModel || th.ModelProvider != CodexProvider || th.Cwd != work {
		t.Errorf("thread/start: %+v", th)
	}
	if !hasLine(run.Stdout, `"method":"thread/started"`, th.Thread.ID) {
		t.Error("no thread/started notification")
	}

	// The model is offered the tools the scenario calls: exec_command, the
	// freeform apply_patch and (with tools.update_plan.enabled) update_plan.
	req, err := run.Requests[0].ResponsesBody()
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"exec_command", "apply_patch", "update_plan"} {
		if !slices.Contains(req.ToolNames(), tool) {
			t.Errorf("tools %v lack %s", req.ToolNames(), tool)
		}
	}
	if req.Model != CodexModel || run.Requests[0].Path != "/v1/responses" {
		t.Errorf("first request: %s %s", run.Requests[0].Path, req.Model)
	}

	// update_plan becomes turn/plan/updated, statuses in camelCase.
	plan := notification(t, run.Stdout, "turn/plan/updated")
	var p struct {
		ThreadID    string `json:"threadId"`
		TurnID      string `json:"turnId"`
		Explanation string `json:"explanation"`
		Plan        []struct{ Step, Status string }
	}
	decode(t, plan, &p)
	if p.ThreadID != th.Thread.ID || p.TurnID == "" || p.Explanation != CodexPlanExplain || len(p.Plan) != 2 ||
		p.Plan[0] != (struct{ Step, Status string }{"Make made.txt", "inProgress"}) || p.Plan[1].Status != "pending" {
		t.Errorf("turn/plan/updated: %s", plan)
	}

	if got := strings.Join(methods(run.Approvals), " "); got != "item/commandExecution/requestApproval item/fileChange/requestApproval "+
		"item/commandExecution/requestApproval item/fileChange/requestApproval item/commandExecution/requestApproval" {
		t.Fatalf("approvals asked: %s", got)
	}
	// A command approval names the command (as the shell runs it), its
	// cwd, the model's justification and the decisions offered.
	var cmd struct {
		ThreadID, TurnID, ItemID, Command, Cwd, Reason string
		StartedAtMs                                    int64
		AvailableDecisions                             []json.RawMessage
	}
	decode(t, run.Approvals[0].Params, &cmd)
	if cmd.ThreadID != th.Thread.ID || cmd.ItemID != "call_fake_2_1" || cmd.Command != "/bin/bash -lc '"+CodexTouch+"'" ||
		cmd.Cwd != work || cmd.Reason != CodexTouchReason || cmd.StartedAtMs == 0 || len(cmd.AvailableDecisions) == 0 || string(cmd.AvailableDecisions[0]) != `"accept"` {
		t.Errorf("command approval: %s", run.Approvals[0].Line)
	}
	// Accepted, it runs outside the read-only sandbox.
	if _, err := os.Stat(filepath.Join(work, "made.txt")); err != nil {
		t.Errorf("the accepted command did not run: %v", err)
	}
	// A file-change approval carries only ids: the change itself is in the
	// fileChange item started just before it.
	var fc struct{ ThreadID, TurnID, ItemID string }
	decode(t, run.Approvals[1].Params, &fc)
	started := itemStarted(t, run.Stdout, fc.ItemID)
	if fc.ThreadID != th.Thread.ID || !strings.Contains(string(started), `"type":"fileChange"`) ||
		!strings.Contains(string(started), `"path":"`+filepath.Join(work, "notes.txt")+`","kind":{"type":"add"}`) {
		t.Errorf("file-change approval %s, its item %s", run.Approvals[1].Line, started)
	}
	if got := readFile(t, filepath.Join(work, "notes.txt")); got != CodexNotes {
		t.Errorf("notes.txt holds %q", got)
	}
	// Its paths are relative to the repository Codex finds above the work
	// directory, if any (an empty .git directory counts): only the file's
	// name and the added line are certain.
	if !hasLine(run.Stdout, `"method":"turn/diff/updated"`, `notes.txt\n@@ -0,0 +1 @@\n+hello from a patch`) {
		var diffs []string
		for _, l := range run.Stdout {
			if strings.Contains(string(l), `"method":"turn/diff/updated"`) || strings.Contains(string(l), `"method":"turn/completed"`) {
				diffs = append(diffs, string(l))
			}
		}
		t.Errorf("no turn/diff/updated with the patch; the diffs and turn ends:\n%s", strings.Join(diffs, "\n"))
	}
	// Declined, the command does not run and the model is told so.
	if _, err := os.Stat(filepath.Join(work, "made.txt")); err != nil {
		t.Errorf("the declined rm ran: %v", err)
	}
	body, err := run.Requests[4].ResponsesBody()
	if err != nil {
		t.Fatal(err)
	}
	if out, ok := body.CallOutput("call_fake_4_1"); !ok || !strings.Contains(out.Output, "rejected by user") {
		t.Errorf("the declined command's output: %+v", out)
	}
	if !hasLine(run.Stdout, `"method":"item/completed"`, `"id":"call_fake_4_1"`, `"status":"declined"`) {
		t.Error("the declined command's item does not complete as declined")
	}
	body, err = run.Requests[5].ResponsesBody()
	if err != nil {
		t.Fatal(err)
	}
	if out, ok := body.CallOutput("call_fake_5_1"); !ok || out.Output != "patch rejected by user" {
		t.Errorf("the declined patch's output: %+v", out)
	}
	if _, err := os.Stat(filepath.Join(work, "declined.txt")); !os.IsNotExist(err) {
		t.Errorf("the declined patch was applied: %v", err)
	}

	// acceptForSession: the same command again in the session is not asked.
	if run.Decisions[4] != "acceptForSession" || len(run.Requests) != 9 {
		t.Errorf("decisions %v, %d requests", run.Decisions, len(run.Requests))
	}
	if _, err := os.Stat(filepath.Join(work, "second.txt")); err != nil {
		t.Errorf("the command accepted for the session did not run: %v", err)
	}

	// Each turn completes; its items are the turn's last message and the
	// usage comes as thread/tokenUsage/updated: total is the thread's,
	// last the last request's.
	if len(run.Completed) != 2 {
		t.Fatalf("%d turns completed", len(run.Completed))
	}
	for i, done := range []string{CodexDone, CodexSecondDone} {
		var c struct {
			Turn struct {
				Status string `json:"status"`
				Items  []struct{ Type, Text string }
			} `json:"turn"`
		}
		decode(t, run.Completed[i].Params, &c)
		if c.Turn.Status != "completed" || len(c.Turn.Items) == 0 || c.Turn.Items[len(c.Turn.Items)-1].Text != done {
			t.Errorf("turn/completed %d: %s", i+1, run.Completed[i].Line)
		}
	}
	usage := lastNotification(t, run.Stdout, "thread/tokenUsage/updated")
	var tu struct {
		TokenUsage struct {
			Total, Last struct {
				InputTokens       int64 `json:"inputTokens"`
				CachedInputTokens int64 `json:"cachedInputTokens"`
				OutputTokens      int64 `json:"outputTokens"`
			}
		} `json:"tokenUsage"`
	}
	decode(t, usage, &tu)
	u, n := CodexScenarioUsage, int64(len(run.Requests))
	if tu.TokenUsage.Total.InputTokens != n*u.InputTokens || tu.TokenUsage.Total.CachedInputTokens != n*u.CacheReadInputTokens ||
		tu.TokenUsage.Total.OutputTokens != n*u.OutputTokens || tu.TokenUsage.Last.InputTokens != u.InputTokens || tu.TokenUsage.Last.OutputTokens != u.OutputTokens {
		t.Errorf("last thread/tokenUsage/updated: %s", usage)
	}
}

// TestCodexReadOnlySandboxRefusesAWrite: a command the model runs inside
// the read-only sandbox (no escalation asked) cannot write, nobody is
// asked, and the model reads the refusal: the plan gate can rely on the
// sandbox.
func TestCodexReadOnlySandboxRefusesAWrite(t *testing.T) {
	b := pinned(t)
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTime)
	defer cancel()
	fake := fakeapi.Responses(
		fakeapi.Turn{Calls: []fakeapi.Call{{Name: "exec_command", Input: map[string]any{"cmd": "touch sandboxed.txt"}}}},
		fakeapi.Turn{Text: "It could not."},
	)
	defer fake.Close()
	defer noneRefused(t, fake)
	e, err := CodexEnv(t.TempDir(), fake.URL())
	if err != nil {
		t.Fatal(err)
	}
	c, err := StartCodex(b, e)
	if err != nil {
		t.Fatal(err)
	}
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
	var th CodexThreadStarted
	if err := c.Call(ctx, "thread/start", map[string]any{"cwd": e.Work, "approvalPolicy": "on-request", "sandbox": "read-only"}, &th); err != nil {
		t.Fatal(err)
	}
	if err := c.Call(ctx, "turn/start", map[string]any{"threadId": th.Thread.ID, "input": []any{map[string]any{"type": "text", "text": "Touch a file."}}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExpectTurnCompleted(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(e.Work, "sandboxed.txt")); !os.IsNotExist(err) {
		t.Errorf("the sandboxed command wrote: %v", err)
	}
	// 0.169.0 does not always tell of a command that exits at once: the
	// item pair comes from the process's watcher, which a fast exit can
	// beat (openai/codex#44557's kind). When it tells, it says the refusal.
	if hasLine(c.Lines(), `"method":"item/completed"`, `"type":"commandExecution"`) &&
		!hasLine(c.Lines(), `"method":"item/completed"`, `"type":"commandExecution"`, `"status":"failed"`, "Read-only file system") {
		t.Errorf("the command's item completed without the sandbox's refusal:\n%s", bytes.Join(c.Lines(), []byte("\n")))
	}
	body, err := fake.Served()[1].ResponsesBody()
	if err != nil {
		t.Fatal(err)
	}
	if out, ok := body.CallOutput("call_fake_1_1"); !ok || !strings.Contains(out.Output, "Read-only file system") {
		t.Errorf("the model got %+v", out)
	}
}

// TestCodexProtocolSchema: the methods huddle speaks are in the JSON
// schema the binary generates, with the decisions it answers.
func TestCodexProtocolSchema(t *testing.T) {
	b := pinned(t)
	e, err := CodexEnv(t.TempDir(), "http://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(e.Root, "schema")
	cmd := exec.Command(b.Codex, "app-server", "generate-json-schema", "--out", out)
	cmd.Env, cmd.Dir = e.Vars, e.Work
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("generate-json-schema: %v\n%s", err, msg)
	}
	want := map[string][]string{
		"ClientRequest.json":      {"initialize", "thread/start", "thread/resume", "turn/start", "turn/interrupt"},
		"ClientNotification.json": {"initialized"},
		"ServerRequest.json": {"item/commandExecution/requestApproval", "item/fileChange/requestApproval",
			"item/permissions/requestApproval", "item/tool/requestUserInput"},
		"ServerNotification.json": {"thread/started", "turn/started", "turn/completed", "turn/plan/updated", "turn/diff/updated",
			"item/started", "item/completed", "item/agentMessage/delta", "thread/tokenUsage/updated", "serverRequest/resolved", "error"},
	}
	for file, methods := range want {
		var s struct {
			OneOf []struct {
				Properties struct {
					Method struct {
						Enum []string `json:"enum"`
					} `json:"method"`
				} `json:"properties"`
			} `json:"oneOf"`
		}
		raw, err := os.ReadFile(filepath.Join(out, file))
		if err != nil {
			t.Fatal(err)
		}
		decode(t, raw, &s)
		var have []string
		for _, o := range s.OneOf {
			have = append(have, o.Properties.Method.Enum...)
		}
		for _, m := range methods {
			if !slices.Contains(have, m) {
				t.Errorf("%s has no %s", file, m)
			}
		}
	}
	for file, decisions := range map[string][]string{
		"CommandExecutionRequestApprovalResponse.json": {`"accept"`, `"acceptForSession"`, `"decline"`, `"cancel"`},
		"FileChangeRequestApprovalResponse.json":       {`"accept"`, `"acceptForSession"`, `"decline"`, `"cancel"`},
	} {
		raw, err := os.ReadFile(filepath.Join(out, file))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range decisions {
			if !strings.Contains(string(raw), d) {
				t.Errorf("%s offers no %s", file, d)
			}
		}
	}
}

func methods(ms []RPCMessage) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Method)
	}
	return out
}

// notification returns the params of the first notification method in
// lines; lastNotification those of the last.
func notification(t *testing.T, lines [][]byte, method string) json.RawMessage {
	t.Helper()
	for _, l := range lines {
		if m, ok := readRPC(l); ok && m.Method == method {
			return m.Params
		}
	}
	t.Fatalf("no %s", method)
	return nil
}

func lastNotification(t *testing.T, lines [][]byte, method string) json.RawMessage {
	t.Helper()
	for i := len(lines) - 1; i >= 0; i-- {
		if m, ok := readRPC(lines[i]); ok && m.Method == method {
			return m.Params
		}
	}
	t.Fatalf("no %s", method)
	return nil
}

// itemStarted returns the item/started line of item id.
func itemStarted(t *testing.T, lines [][]byte, id string) []byte {
	t.Helper()
	for _, l := range lines {
		m, ok := readRPC(l)
		if !ok || m.Method != "item/started" {
			continue
		}
		var p struct {
			Item struct{ ID string } `json:"item"`
		}
		if json.Unmarshal(m.Params, &p) == nil && p.Item.ID == id {
			return l
		}
	}
	t.Fatalf("no item/started for %s", id)
	return nil
}

// TestCodexPermissionsApproval: item/permissions/requestApproval exists in
// 0.169.0 behind an experimental gate (the request_permissions_tool
// feature, the experimentalApi capability and a granular approval policy
// with request_permissions); write access to the work directory granted
// for the turn lets a command inside the read-only sandbox write there.
func TestCodexPermissionsApproval(t *testing.T) {
	b := pinned(t)
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTime)
	defer cancel()
	root := t.TempDir()
	work := filepath.Join(root, "work")
	fake := fakeapi.Responses(
		fakeapi.Turn{Calls: []fakeapi.Call{{Name: "request_permissions", Input: map[string]any{
			"permissions": map[string]any{"file_system": map[string]any{"write": []string{work}}}, "reason": "Write granted.txt",
		}}}},
		fakeapi.Turn{Calls: []fakeapi.Call{{Name: "exec_command", Input: map[string]any{"cmd": "touch granted.txt"}}}},
		fakeapi.Turn{Text: "Written."},
	)
	defer fake.Close()
	defer noneRefused(t, fake)
	e, err := CodexEnv(root, fake.URL())
	if err != nil {
		t.Fatal(err)
	}
	c, err := StartCodex(b, e, "--enable", "request_permissions_tool")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	}()
	err = c.Call(ctx, "initialize", map[string]any{
		"clientInfo": map[string]any{"name": "huddle", "version": "0.0.0"}, "capabilities": map[string]any{"experimentalApi": true},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Notify("initialized", nil); err != nil {
		t.Fatal(err)
	}
	granular := map[string]any{"granular": map[string]any{"sandbox_approval": true, "rules": true, "mcp_elicitations": false, "request_permissions": true}}
	var th CodexThreadStarted
	if err := c.Call(ctx, "thread/start", map[string]any{"cwd": work, "approvalPolicy": granular, "sandbox": "read-only"}, &th); err != nil {
		t.Fatal(err)
	}
	if err := c.Call(ctx, "turn/start", map[string]any{"threadId": th.Thread.ID, "input": []any{map[string]any{"type": "text", "text": "Write granted.txt."}}}, nil); err != nil {
		t.Fatal(err)
	}
	req, err := c.ExpectRequest(ctx, "item/permissions/requestApproval")
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		ThreadID, ItemID, Cwd, Reason string
		Permissions                   struct {
			FileSystem struct {
				Write []string `json:"write"`
			} `json:"fileSystem"`
		} `json:"permissions"`
	}
	decode(t, req.Params, &p)
	if p.ThreadID != th.Thread.ID || p.ItemID != "call_fake_1_1" || p.Cwd != work || p.Reason != "Write granted.txt" || !slices.Equal(p.Permissions.FileSystem.Write, []string{work}) {
		t.Errorf("permissions approval: %s", req.Line)
	}
	var asked struct{ Permissions json.RawMessage }
	decode(t, req.Params, &asked)
	if err := c.Send(map[string]any{"id": req.ID, "result": map[string]any{"permissions": asked.Permissions, "scope": "turn"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExpectTurnCompleted(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(work, "granted.txt")); err != nil {
		t.Errorf("the granted write did not happen: %v", err)
	}
	body, err := fake.Served()[1].ResponsesBody()
	if err != nil {
		t.Fatal(err)
	}
	if out, ok := body.CallOutput("call_fake_1_1"); !ok || !strings.Contains(out.Output, `"scope":"turn"`) || !strings.Contains(out.Output, work) {
		t.Errorf("the model got %+v for its request", out)
	}
}

// TestCodexExecReconnects: `codex exec --json` whose first model stream
// is cut says it reconnects in an error event, asks again, and ends the
// turn well with exit status 0.
func TestCodexExecReconnects(t *testing.T) {
	b := pinned(t)
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTime)
	defer cancel()
	run, err := CodexExecReconnectScenario(ctx, b, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if run.Exit != nil {
		t.Errorf("exit: %v\n%s", run.Exit, run.Stderr)
	}
	if !hasLine(run.Stdout, `"type":"error"`, "Reconnecting") {
		t.Errorf("no reconnect notice:\n%s", run.StdoutText())
	}
	if !hasLine(run.Stdout, `"type":"turn.completed"`) || !hasLine(run.Stdout, `"type":"item.completed"`, CodexExecReply) {
		t.Errorf("the turn did not end well:\n%s", run.StdoutText())
	}
	if len(run.Requests) != 2 {
		t.Errorf("%d model requests, want 2 (the cut one and its retry)", len(run.Requests))
	}
}

// TestCodexExecOutsideGitSaysWhy: without --skip-git-repo-check, `codex
// exec` in a directory that is not a git repository exits 1 before it
// asks the model anything, and says why only on stderr.
func TestCodexExecOutsideGitSaysWhy(t *testing.T) {
	b := pinned(t)
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTime)
	defer cancel()
	run, err := CodexExecNoGitScenario(ctx, b, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if run.Exit == nil || !strings.Contains(run.Stderr, "--skip-git-repo-check") || len(run.Requests) != 0 {
		t.Errorf("exit %v, %d model requests, stderr:\n%s\nstdout:\n%s", run.Exit, len(run.Requests), run.Stderr, run.StdoutText())
	}
	t.Logf("stderr: %q", run.Stderr)
}

// TestCodexExecResumeUsageIsTheThreads: each `codex exec` run reports its
// turn's usage in turn.completed; on a resumed thread that usage is the
// thread's running total, not the run's own.
func TestCodexExecResumeUsageIsTheThreads(t *testing.T) {
	b := pinned(t)
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTime)
	defer cancel()
	run, err := CodexExecResumeScenario(ctx, b, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var in []int64
	for _, l := range run.Stdout {
		var ev struct {
			Type  string
			Usage struct {
				InputTokens int64 `json:"input_tokens"`
			}
		}
		if json.Unmarshal(l, &ev) == nil && ev.Type == "turn.completed" {
			in = append(in, ev.Usage.InputTokens)
		}
	}
	t.Logf("turn.completed input_tokens: %v (each turn billed %d)", in, CodexScenarioUsage.InputTokens)
	if len(in) != 2 || in[0] != CodexScenarioUsage.InputTokens || in[1] != 2*CodexScenarioUsage.InputTokens {
		t.Errorf("input tokens %v, want [%d %d]", in, CodexScenarioUsage.InputTokens, 2*CodexScenarioUsage.InputTokens)
	}
}
