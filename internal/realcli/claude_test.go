package realcli

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"huddle/internal/fakeapi"
)

// installOnce installs the pinned CLIs once per test binary. A failure
// fails the test that asked, saying why: these tests are never skipped.
var installOnce = sync.OnceValues(func() (Bins, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	return Install(ctx)
})

func pinned(t *testing.T) Bins {
	t.Helper()
	b, err := installOnce()
	if err != nil {
		t.Fatalf("installing the pinned CLIs: %v", err)
	}
	return b
}

// scenarioTime bounds one scenario on the real binaries.
const scenarioTime = 90 * time.Second

// TestClaudePlanDenyReviseAllowWork runs Claude Code 2.1.328 through the
// plan gate over the stream-json control protocol and checks every field
// of it huddle's adapter will rely on.
func TestClaudePlanDenyReviseAllowWork(t *testing.T) {
	b := pinned(t)
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTime)
	defer cancel()
	run, err := ClaudePlanScenario(ctx, b, t.TempDir())
	if err != nil {
		if run != nil {
			t.Logf("stdout:\n%s", run.StdoutText())
		}
		t.Fatal(err)
	}
	work := run.Env.Work
	plans := filepath.Join(run.Env.Root, "claude-config", "plans") + "/"

	// The session starts in plan mode, with ExitPlanMode among its tools.
	init, ok := ClaudeInitOf(run.Stdout)
	if !ok {
		t.Fatal("no system/init event")
	}
	if init.PermissionMode != "plan" || init.Version != ClaudeVersion || init.Cwd != work || init.APIKeySource != "ANTHROPIC_API_KEY" || !slices.Contains(init.Tools, "ExitPlanMode") {
		t.Errorf("init: %+v", init)
	}
	// The model is told it is in plan mode and where the plan goes; the
	// plan file is under CLAUDE_CONFIG_DIR.
	first := run.Requests[0]
	if first.Path != "/v1/messages" || first.RawQuery != "beta=true" || !strings.Contains(string(first.Body), "Plan mode is active") {
		t.Errorf("first request %s?%s does not say plan mode is active", first.Path, first.RawQuery)
	}
	if !strings.HasPrefix(run.PlanFile, plans) {
		t.Errorf("plan file %s is not under %s", run.PlanFile, plans)
	}
	// ExitPlanMode is deferred: offered through ToolSearch, not in tools.
	if m := messages(t, first); slices.Contains(m.ToolNames(), "ExitPlanMode") || !slices.Contains(m.ToolNames(), "ToolSearch") ||
		!slices.Contains(deferredTools(t, first), "ExitPlanMode") {
		t.Errorf("first request's tools %v, deferred %v", m.ToolNames(), deferredTools(t, first))
	}

	if len(run.Prompts) != 5 {
		t.Fatalf("%d prompts", len(run.Prompts))
	}
	// The first ExitPlanMode prompt carries the plan file's text and path
	// (the model's input was {}); the denial reaches the model as an error
	// tool result with the host's message.
	p := run.Prompts[0].Request
	var planIn struct{ Plan, PlanFilePath string }
	decode(t, p.Input, &planIn)
	if p.ToolName != "ExitPlanMode" || p.ToolUseID != "toolu_fake_3_1" || planIn.Plan != ClaudePlanV1 || planIn.PlanFilePath != run.PlanFile || !p.RequiresUserInteraction || run.Prompts[0].RequestID == "" {
		t.Errorf("first ExitPlanMode prompt: %s", run.Prompts[0].Line)
	}
	res := toolResult(t, run.Requests, "toolu_fake_3_1")
	if !res.IsError || res.Content != ClaudePlanDenial {
		t.Errorf("the denied plan's tool result: %+v", res)
	}
	// The second carries the revised plan; once allowed the session leaves
	// plan mode and the model is told the plan was approved.
	decode(t, run.Prompts[1].Request.Input, &planIn)
	if planIn.Plan != ClaudePlanV2 || planIn.PlanFilePath != run.PlanFile {
		t.Errorf("second ExitPlanMode prompt: %s", run.Prompts[1].Line)
	}
	res = toolResult(t, run.Requests, "toolu_fake_5_1")
	if res.IsError || !strings.Contains(res.Content, "User has approved your plan") || !strings.Contains(res.Content, ClaudePlanV2) {
		t.Errorf("the approved plan's tool result: %+v", res)
	}
	if !hasLine(run.Stdout, `"type":"system","subtype":"status"`, `"permissionMode":"default"`) {
		t.Error("no system/status event with permissionMode default after the plan was allowed")
	}
	if !strings.Contains(string(run.Requests[5].Body), "## Exited Plan Mode") {
		t.Error("the request after the approval does not tell the model it exited plan mode")
	}

	// Write asks, with the path made absolute and a suggestion to accept
	// edits; the host's updatedInput is what gets written.
	w := run.Prompts[2].Request
	var writeIn struct {
		FilePath string `json:"file_path"`
		Content  string `json:"content"`
	}
	decode(t, w.Input, &writeIn)
	if w.ToolName != "Write" || writeIn.FilePath != filepath.Join(work, "hello.txt") || writeIn.Content != ClaudeModelHello ||
		w.Description != "hello.txt" || !strings.Contains(string(w.PermissionSuggestions), `"mode":"acceptEdits"`) {
		t.Errorf("Write prompt: %s", run.Prompts[2].Line)
	}
	if got := readFile(t, filepath.Join(work, "hello.txt")); got != ClaudeHostHello {
		t.Errorf("hello.txt holds %q, want the host's %q", got, ClaudeHostHello)
	}
	// An allowed Bash command runs; a denied one does not, and the model
	// gets the host's message.
	var bashIn struct{ Command string }
	decode(t, run.Prompts[3].Request.Input, &bashIn)
	if run.Prompts[3].Request.ToolName != "Bash" || bashIn.Command != ClaudeShowCommand {
		t.Errorf("first Bash prompt: %s", run.Prompts[3].Line)
	}
	if got := readFile(t, filepath.Join(work, "out", "shown.txt")); got != ClaudeHostHello {
		t.Errorf("out/shown.txt holds %q", got)
	}
	decode(t, run.Prompts[4].Request.Input, &bashIn)
	if bashIn.Command != ClaudeRmCommand || run.Prompts[4].Request.BlockedPath != filepath.Join(work, "out") {
		t.Errorf("second Bash prompt: %s", run.Prompts[4].Line)
	}
	res = toolResult(t, run.Requests, "toolu_fake_8_1")
	if !res.IsError || res.Content != ClaudeRmDenial {
		t.Errorf("the denied command's tool result: %+v", res)
	}

	// Each run ends in a result: usage is the run's own, as is
	// model_usage_since_last_result; total_cost_usd and modelUsage add up
	// over the process.
	if len(run.Results) != 2 {
		t.Fatalf("%d results", len(run.Results))
	}
	r1, r2 := run.Results[0], run.Results[1]
	u := ClaudeScenarioUsage
	if r1.Subtype != "success" || r1.IsError || r1.Result != ClaudeDone || r1.NumTurns != 9 || r1.ResultIndex != 0 || r1.SessionID != init.SessionID ||
		r1.Usage.InputTokens != 9*u.InputTokens || r1.Usage.OutputTokens != 9*u.OutputTokens ||
		r1.Usage.CacheReadInputTokens != 9*u.CacheReadInputTokens || r1.Usage.CacheCreationInputTokens != 9*u.CacheCreationInputTokens {
		t.Errorf("first result: %s", r1.Line)
	}
	var denied []string
	for _, d := range r1.PermissionDenials {
		denied = append(denied, d.ToolName+" "+d.ToolUseID)
	}
	if strings.Join(denied, ", ") != "ExitPlanMode toolu_fake_3_1, Bash toolu_fake_8_1" {
		t.Errorf("first result's permission_denials: %v", denied)
	}
	if r2.Result != ClaudeWelcome || r2.ResultIndex != 1 || r2.NumTurns != 1 || len(r2.PermissionDenials) != 0 ||
		r2.Usage.InputTokens != ClaudeSecondRunUsage.InputTokens || r2.Usage.OutputTokens != ClaudeSecondRunUsage.OutputTokens {
		t.Errorf("second result: %s", r2.Line)
	}
	since1, since2, total2 := costOf(r1.ModelUsageSinceLastResult), costOf(r2.ModelUsageSinceLastResult), costOf(r2.ModelUsage)
	if since1 <= 0 || since2 <= 0 || math.Abs(r1.TotalCostUSD-since1) > 1e-9 || math.Abs(r2.TotalCostUSD-(since1+since2)) > 1e-9 || math.Abs(total2-r2.TotalCostUSD) > 1e-9 {
		t.Errorf("costs: run 1 %v (total %v), run 2 %v (total %v, modelUsage %v)", since1, r1.TotalCostUSD, since2, r2.TotalCostUSD, total2)
	}
	// Closing stdin ends the process cleanly.
	if run.Exit != nil {
		t.Errorf("claude exited with %v once its stdin closed", run.Exit)
	}
	if len(run.Requests) != 10 {
		t.Errorf("the fake got %d requests, want the script's 10", len(run.Requests))
	}
}

// TestClaudeOffersExitPlanModeOnlyWithAPromptTool: without
// --permission-prompt-tool a headless session in plan mode has no
// ExitPlanMode at all, so a plan could never be put to the host.
func TestClaudeOffersExitPlanModeOnlyWithAPromptTool(t *testing.T) {
	b := pinned(t)
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTime)
	defer cancel()
	fake := fakeapi.Anthropic(fakeapi.Turn{Text: "A plan needs a prompt tool."})
	defer fake.Close()
	defer noneRefused(t, fake)
	e, err := ClaudeEnv(t.TempDir(), fake.URL())
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start("claude", b.Claude, []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose", "--permission-mode", "plan"}, e)
	if err != nil {
		t.Fatal(err)
	}
	c := &Claude{Proc: p}
	defer func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	}()
	if err := c.SendUser("Plan something."); err != nil {
		t.Fatal(err)
	}
	r, err := c.ExpectResult(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r.Result != "A plan needs a prompt tool." {
		t.Errorf("result: %s", r.Line)
	}
	init, ok := ClaudeInitOf(c.Lines())
	if !ok || init.PermissionMode != "plan" || slices.Contains(init.Tools, "ExitPlanMode") || !slices.Contains(init.Tools, "Write") {
		t.Errorf("init: %+v", init)
	}
	req := fake.Served()[0]
	// Named neither as a tool nor among the deferred ones (the plan-mode
	// prompt still mentions it in prose).
	deferred := deferredTools(t, req)
	if m := messages(t, req); slices.Contains(m.ToolNames(), "ExitPlanMode") || slices.Contains(deferred, "ExitPlanMode") || !slices.Contains(deferred, "WebFetch") {
		t.Errorf("without a prompt tool: tools %v, deferred %v", m.ToolNames(), deferred)
	}
}

// deferredTools reads the list of tools the system text says ToolSearch
// loads ("… to load tool schemas before calling them:\nA\nB\n\n").
func deferredTools(t *testing.T, r fakeapi.Request) []string {
	t.Helper()
	for _, text := range messages(t, r).Texts("system") {
		if _, after, ok := strings.Cut(text, "to load tool schemas before calling them:\n"); ok {
			list, _, _ := strings.Cut(after, "\n\n")
			return strings.Split(list, "\n")
		}
	}
	t.Fatalf("request %d lists no deferred tools", r.N)
	return nil
}

// TestClaudeHostSetsThePermissionMode: the host can put a running session
// (back) into plan mode with a set_permission_mode control_request; the
// CLI answers it, says so in a system/status, and the next turn's model
// is told plan mode is active.
func TestClaudeHostSetsThePermissionMode(t *testing.T) {
	b := pinned(t)
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTime)
	defer cancel()
	fake := fakeapi.Anthropic(fakeapi.Turn{Text: "Working."}, fakeapi.Turn{Text: "Planning."})
	defer fake.Close()
	defer noneRefused(t, fake)
	e, err := ClaudeEnv(t.TempDir(), fake.URL())
	if err != nil {
		t.Fatal(err)
	}
	c, err := StartClaude(b, e, "default")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	}()
	if err := c.SendUser("Work."); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExpectResult(ctx); err != nil {
		t.Fatal(err)
	}
	from := c.Len()
	if err := c.SetMode(ctx, "plan"); err != nil {
		t.Fatal(err)
	}
	if err := c.SendUser("Plan the next step."); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExpectResult(ctx); err != nil {
		t.Fatal(err)
	}
	after := c.Lines()[from:]
	if !hasLine(after, `"type":"control_response"`, `"request_id":"huddle-set-mode-1"`, `"response":{"mode":"plan"}`) ||
		!hasLine(after, `"subtype":"status"`, `"permissionMode":"plan"`) {
		t.Errorf("after set_permission_mode:\n%s", bytes.Join(after, []byte("\n")))
	}
	if init, ok := ClaudeInitOf(after); !ok || init.PermissionMode != "plan" {
		t.Errorf("the next turn's init: %+v", init)
	}
	reqs := fake.Served()
	if strings.Contains(string(reqs[0].Body), "Plan mode is active") || !strings.Contains(string(reqs[1].Body), "Plan mode is active") {
		t.Error("plan mode is not active in the second turn alone")
	}
}

// noneRefused fails the test if the fake (also the CLI's proxy) refused a
// request: a request off the script, or one for a host but loopback.
func noneRefused(t *testing.T, fake *fakeapi.Server) {
	t.Helper()
	for _, r := range fake.Refused() {
		t.Errorf("the fake refused request %d: %s", r.N, r.Refused)
	}
}

func messages(t *testing.T, r fakeapi.Request) fakeapi.MessagesRequest {
	t.Helper()
	m, err := r.Messages()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// toolResult finds the tool_result for id in the first request that
// carries it.
func toolResult(t *testing.T, reqs []fakeapi.Request, id string) fakeapi.Block {
	t.Helper()
	for _, r := range reqs {
		if b, ok := messages(t, r).ToolResult(id); ok {
			return b
		}
	}
	t.Fatalf("no request carries a tool_result for %s", id)
	return fakeapi.Block{}
}

func decode(t *testing.T, raw json.RawMessage, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Error(err)
	}
	return string(b)
}

// hasLine says some line holds every one of parts.
func hasLine(lines [][]byte, parts ...string) bool {
	for _, l := range lines {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(string(l), p)
		}
		if all {
			return true
		}
	}
	return false
}

func costOf(m map[string]ClaudeModelUsage) float64 {
	var c float64
	for _, u := range m {
		c += u.CostUSD
	}
	return c
}

// TestClaudeAPIErrorEndsTheRunSuccess: a 400 from the API ends the run
// with a result whose subtype is "success" and is_error true, its result
// naming the API's message: an adapter must read is_error, not the
// subtype, and show the result.
func TestClaudeAPIErrorEndsTheRunSuccess(t *testing.T) {
	b := pinned(t)
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTime)
	defer cancel()
	run, err := ClaudeAPIErrorScenario(ctx, b, t.TempDir())
	if err != nil {
		if run != nil {
			t.Logf("stdout:\n%s", run.StdoutText())
		}
		t.Fatal(err)
	}
	if len(run.Results) != 1 {
		t.Fatalf("%d results, want 1", len(run.Results))
	}
	r := run.Results[0]
	if r.Subtype != "success" || !r.IsError || !strings.Contains(r.Result, ClaudeAPIErrorText) || !strings.Contains(r.Result, "400") {
		t.Errorf("result: subtype %q, is_error %v, result %q, terminal_reason %q", r.Subtype, r.IsError, r.Result, r.TerminalReason)
	}
	t.Logf("result %q, terminal_reason %q, %d model requests", r.Result, r.TerminalReason, len(run.Requests))
}

// TestClaudePrintPlanWritesThePlanFile: in -p plan mode without a
// permission prompt tool, ExitPlanMode is not offered; the model writes its
// plan to the file the CLI names under CLAUDE_CONFIG_DIR/plans/, which
// the CLI lets it do, and the run ends with its words about it.
func TestClaudePrintPlanWritesThePlanFile(t *testing.T) {
	b := pinned(t)
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTime)
	defer cancel()
	run, err := ClaudePrintPlanScenario(ctx, b, t.TempDir())
	if err != nil {
		if run != nil {
			t.Logf("stdout:\n%s", run.StdoutText())
		}
		t.Fatal(err)
	}
	if run.Exit != nil {
		t.Errorf("exit: %v", run.Exit)
	}
	init, ok := ClaudeInitOf(run.Stdout)
	if !ok || slices.Contains(init.Tools, "ExitPlanMode") {
		t.Errorf("init tools %v: want no ExitPlanMode", init.Tools)
	}
	plans, _ := filepath.Glob(filepath.Join(run.Env.Root, "claude-config", "plans", "*.md"))
	if len(plans) != 1 {
		t.Fatalf("plan files %v, want one", plans)
	}
	if b, _ := os.ReadFile(plans[0]); string(b) != ClaudePlanV1 {
		t.Errorf("the plan file holds %q", b)
	}
	if !hasLine(run.Stdout, `"type":"result"`, ClaudePlanFileReply) {
		t.Errorf("no result with the model's words:\n%s", run.StdoutText())
	}
}

// TestClaudePermissionRequestHook: a PermissionRequest hook in Claude
// Code's settings.json is asked, in -p mode too, before each tool use the
// CLI would put to a person, with the session, its cwd, the tool, its
// input and the CLI's suggestions on stdin; the hook's answer on stdout,
// {"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":
// {"behavior":"allow"}}} or a deny with a message, is the CLI's decision,
// and the model reads the deny's message. This is what `huddle hook
// claude` is to be built on.
func TestClaudePermissionRequestHook(t *testing.T) {
	b := pinned(t)
	ctx, cancel := context.WithTimeout(context.Background(), scenarioTime)
	defer cancel()
	const why = "the desk denies this"
	u := fakeapi.Usage{InputTokens: 10, OutputTokens: 5}
	fake := fakeapi.Anthropic(
		fakeapi.Turn{Calls: []fakeapi.Call{{Name: "Write", Input: map[string]any{"file_path": "hello.txt", "content": "hi\n"}}}, Usage: u},
		fakeapi.Turn{Calls: []fakeapi.Call{{Name: "Bash", Input: map[string]any{"command": "touch bashed.txt", "description": "Touch a file"}}}, Usage: u},
		fakeapi.Turn{Text: "done", Usage: u},
	)
	defer fake.Close()
	root := t.TempDir()
	e, err := ClaudeEnv(root, fake.URL())
	if err != nil {
		t.Fatal(err)
	}
	hook, asked := scriptHook(t, root, `*'"tool_name":"Bash"'*`, why)
	settings, _ := json.Marshal(map[string]any{"hooks": map[string]any{"PermissionRequest": []any{map[string]any{
		"matcher": "*", "hooks": []any{map[string]any{"type": "command", "command": hook, "timeout": 60}}}}}})
	if err := os.WriteFile(filepath.Join(root, "claude-config", "settings.json"), settings, 0o644); err != nil {
		t.Fatal(err)
	}
	tr := &Transcript{CLI: "claude", Name: "permission-hook", Env: e}
	if err := tr.runOnce(ctx, b.Claude, []string{"-p", "Write hello.txt, then touch bashed.txt.", "--output-format", "stream-json", "--verbose", "--permission-mode", "default"}, fake); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(asked)
	if err != nil {
		t.Fatalf("the hook was never asked: %v", err)
	}
	type hookInput struct {
		SessionID   string          `json:"session_id"`
		Cwd         string          `json:"cwd"`
		Event       string          `json:"hook_event_name"`
		Mode        string          `json:"permission_mode"`
		Tool        string          `json:"tool_name"`
		Input       json.RawMessage `json:"tool_input"`
		Suggestions []any           `json:"permission_suggestions"`
	}
	got := askedOf[hookInput](t, raw)
	if len(got) != 2 || got[0].Tool != "Write" || got[1].Tool != "Bash" {
		t.Fatalf("the hook was asked %d times: %s", len(got), raw)
	}
	for _, a := range got {
		if a.SessionID == "" || a.Cwd != e.Work || a.Event != "PermissionRequest" || a.Mode != "default" || len(a.Suggestions) == 0 {
			t.Errorf("the hook's input: %+v", a)
		}
	}
	if !strings.Contains(string(got[0].Input), `"file_path":"`+filepath.Join(e.Work, "hello.txt")+`"`) || !strings.Contains(string(got[1].Input), `"command":"touch bashed.txt"`) {
		t.Errorf("tool inputs: %s, %s", got[0].Input, got[1].Input)
	}
	if _, err := os.Stat(filepath.Join(e.Work, "hello.txt")); err != nil {
		t.Errorf("the allowed Write did not write: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.Work, "bashed.txt")); err == nil {
		t.Error("the denied Bash ran")
	}
	var bodies strings.Builder
	for _, r := range fake.Served() {
		bodies.Write(r.Body)
	}
	if !strings.Contains(bodies.String(), why) {
		t.Errorf("the model never read the deny's message %q", why)
	}
}

// scriptHook writes a PermissionRequest hook under root, the same for
// both CLIs: it logs each input to asked (one JSON line each) and denies
// with why what matches the shell pattern deny, allowing the rest.
func scriptHook(t *testing.T, root, deny, why string) (hook, asked string) {
	t.Helper()
	asked, hook = filepath.Join(root, "asked.jsonl"), filepath.Join(root, "hook")
	script := `#!/bin/bash
in=$(cat)
printf '%s\n' "$in" >> ` + asked + `
case "$in" in
` + deny + `) echo '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"` + why + `"}}}' ;;
*) echo '{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow"}}}' ;;
esac
`
	if err := os.WriteFile(hook, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return hook, asked
}

// askedOf decodes each line a scriptHook logged.
func askedOf[T any](t *testing.T, raw []byte) []T {
	t.Helper()
	var got []T
	for l := range bytes.Lines(bytes.TrimSpace(raw)) {
		var one T
		if err := json.Unmarshal(l, &one); err != nil {
			t.Fatalf("the hook's input %q: %v", l, err)
		}
		got = append(got, one)
	}
	return got
}
