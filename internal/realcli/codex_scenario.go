package realcli

import (
	"context"
	"encoding/json"
	"fmt"

	"huddle/internal/fakeapi"
)

// What the Codex approvals scenario says and does.
const (
	CodexTask           = "Make made.txt and notes.txt, then tidy up."
	CodexPlanExplain    = "Two files, then tidy up."
	CodexTouch          = "touch made.txt"
	CodexRemove         = "rm made.txt"
	CodexNotes          = "hello from a patch\n"
	CodexDone           = "Done: made.txt and notes.txt are there."
	CodexSecondTask     = "Touch second.txt twice."
	CodexSecondTouch    = "touch second.txt"
	CodexSecondDone     = "Touched it twice."
	CodexNotesPatch     = "*** Begin Patch\n*** Add File: notes.txt\n+hello from a patch\n*** End Patch\n"
	CodexDeclinedPatch  = "*** Begin Patch\n*** Add File: declined.txt\n+never written\n*** End Patch\n"
	CodexTouchReason    = "Create made.txt?"
	CodexRemoveReason   = "Remove made.txt?"
	CodexSecondReason   = "Create second.txt?"
	codexApprovalPolicy = "on-request"
	codexSandbox        = "read-only"
)

// CodexScenarioUsage is what every turn of the scenario's model reports.
var CodexScenarioUsage = fakeapi.Usage{InputTokens: 1000, OutputTokens: 50, CacheReadInputTokens: 400}

// CodexRun is what the approvals scenario saw.
type CodexRun struct {
	Transcript
	Init      json.RawMessage // initialize's result
	Thread    CodexThreadStarted
	Approvals []RPCMessage // the server's requests, in order
	Decisions []string     // the answer to each
	Completed []RPCMessage // each turn/completed
}

// CodexThreadStarted is the part of thread/start's result the scenario
// reads.
type CodexThreadStarted struct {
	Thread struct {
		ID string `json:"id"`
	} `json:"thread"`
	ApprovalPolicy json.RawMessage `json:"approvalPolicy"`
	Sandbox        json.RawMessage `json:"sandbox"`
	Model          string          `json:"model"`
	ModelProvider  string          `json:"modelProvider"`
	Cwd            string          `json:"cwd"`
}

// CodexApprovalsScenario runs one `codex app-server` through initialize,
// thread/start (approvals on request, a read-only sandbox) and two turns
// against a fake whose model follows the script below:
//
//  1. updates its plan (turn/plan/updated), runs `touch made.txt` outside
//     the sandbox (accepted), adds notes.txt with apply_patch (accepted),
//     asks to run `rm made.txt` (declined), adds declined.txt (declined),
//     and ends the turn;
//  2. a second turn runs `touch second.txt` outside the sandbox twice: the
//     first is accepted for the session, so the second is not asked.
//
// Any approval out of this order, or any request the fake refused, is an
// error. root is an empty directory the scenario owns.
func CodexApprovalsScenario(ctx context.Context, b Bins, root string) (*CodexRun, error) {
	run := &CodexRun{Transcript: Transcript{CLI: "codex", Name: "approvals"}}
	u := CodexScenarioUsage
	call := func(c fakeapi.Call) fakeapi.Turn { return fakeapi.Turn{Calls: []fakeapi.Call{c}, Usage: u} }
	escalated := func(cmd, why string) fakeapi.Call {
		return fakeapi.Call{Name: "exec_command", Input: map[string]any{"cmd": cmd, "sandbox_permissions": "require_escalated", "justification": why}}
	}
	fake := fakeapi.Responses(
		call(fakeapi.Call{Name: "update_plan", Input: map[string]any{"explanation": CodexPlanExplain, "plan": []any{
			map[string]any{"step": "Make made.txt", "status": "in_progress"},
			map[string]any{"step": "Add notes.txt", "status": "pending"},
		}}}),
		call(escalated(CodexTouch, CodexTouchReason)),
		call(fakeapi.Call{Name: "apply_patch", Custom: true, Input: CodexNotesPatch}),
		call(escalated(CodexRemove, CodexRemoveReason)),
		call(fakeapi.Call{Name: "apply_patch", Custom: true, Input: CodexDeclinedPatch}),
		fakeapi.Turn{Text: CodexDone, Usage: u},
		call(escalated(CodexSecondTouch, CodexSecondReason)),
		call(escalated(CodexSecondTouch, CodexSecondReason)),
		fakeapi.Turn{Text: CodexSecondDone, Usage: u},
	)
	defer fake.Close()
	e, err := CodexEnv(root, fake.URL())
	if err != nil {
		return nil, err
	}
	run.Env = e
	c, err := StartCodex(b, e)
	if err != nil {
		return nil, err
	}
	err = run.drive(ctx, c)
	if stopErr := c.Stop(); err == nil {
		err = stopErr
	}
	run.keep(c.Proc, fake)
	if err == nil {
		err = refusal(fake)
	}
	return run, err
}

func (run *CodexRun) drive(ctx context.Context, c *Codex) error {
	err := c.Call(ctx, "initialize", map[string]any{
		"clientInfo": map[string]any{"name": "huddle", "title": "huddle", "version": "0.0.0"},
	}, &run.Init)
	if err != nil {
		return err
	}
	if err := c.Notify("initialized", nil); err != nil {
		return err
	}
	err = c.Call(ctx, "thread/start", map[string]any{
		"cwd": run.Env.Work, "approvalPolicy": codexApprovalPolicy, "sandbox": codexSandbox,
	}, &run.Thread)
	if err != nil {
		return err
	}
	approve := func(method, decision string) error {
		req, err := c.ExpectRequest(ctx, method)
		if err != nil {
			return err
		}
		run.Approvals, run.Decisions = append(run.Approvals, req), append(run.Decisions, decision)
		return c.Decide(req, decision)
	}
	turn := func(text string) error {
		return c.Call(ctx, "turn/start", map[string]any{
			"threadId": run.Thread.Thread.ID,
			"input":    []any{map[string]any{"type": "text", "text": text}},
		}, nil)
	}
	completed := func() error {
		m, err := c.ExpectTurnCompleted(ctx)
		run.Completed = append(run.Completed, m)
		return err
	}
	const command, file = "item/commandExecution/requestApproval", "item/fileChange/requestApproval"
	steps := []func() error{
		func() error { return turn(CodexTask) },
		func() error { return approve(command, "accept") },
		func() error { return approve(file, "accept") },
		func() error { return approve(command, "decline") },
		func() error { return approve(file, "decline") },
		completed,
		func() error { return turn(CodexSecondTask) },
		func() error { return approve(command, "acceptForSession") },
		completed,
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// CodexExecReply is what the model answers in the exec scenarios.
const CodexExecReply = "Hello from the fake."

// CodexExecReconnectScenario runs `codex exec --json` (Codex's one-shot
// mode) on one prompt whose first model
// stream the fake cuts before any event: the CLI says it reconnects,
// sends the request again, and ends the turn well. Its transcript is the
// fixture codex/exec-reconnect.
func CodexExecReconnectScenario(ctx context.Context, b Bins, root string) (*Transcript, error) {
	return codexExec(ctx, b, root, "exec-reconnect", []string{"--skip-git-repo-check"},
		fakeapi.Turn{Drop: true}, fakeapi.Turn{Text: CodexExecReply, Usage: CodexScenarioUsage})
}

// CodexExecNoGitScenario runs `codex exec --json` without
// --skip-git-repo-check in a directory that is not a git repository: the
// CLI refuses before it asks the model anything, saying why on stderr
// (Transcript.Stderr). Its transcript is the fixture codex/exec-no-git.
func CodexExecNoGitScenario(ctx context.Context, b Bins, root string) (*Transcript, error) {
	return codexExec(ctx, b, root, "exec-no-git", nil)
}

// codexExec runs one `codex exec --json --sandbox read-only` turn with
// extra flags against a fake scripted by turns, until the CLI exits.
func codexExec(ctx context.Context, b Bins, root, name string, extra []string, turns ...fakeapi.Turn) (*Transcript, error) {
	t := &Transcript{CLI: "codex", Name: name}
	fake := fakeapi.Responses(turns...)
	defer fake.Close()
	e, err := CodexEnv(root, fake.URL())
	if err != nil {
		return nil, err
	}
	t.Env = e
	return t, t.runOnce(ctx, b.Codex, append(append([]string{"exec", "--json", "--sandbox", "read-only"}, extra...), "Say hello."), fake)
}

// CodexExecResumeScenario runs two `codex exec --json` turns on one
// thread, the second through `exec resume`,
// each answered with CodexScenarioUsage: the transcript holds both runs'
// stdout, the first's then the second's. Its fixture is
// codex/exec-resume.
func CodexExecResumeScenario(ctx context.Context, b Bins, root string) (*Transcript, error) {
	t := &Transcript{CLI: "codex", Name: "exec-resume"}
	u := CodexScenarioUsage
	fake := fakeapi.Responses(fakeapi.Turn{Text: CodexExecReply, Usage: u}, fakeapi.Turn{Text: CodexExecReply, Usage: u})
	defer fake.Close()
	e, err := CodexEnv(root, fake.URL())
	if err != nil {
		return nil, err
	}
	t.Env = e
	run := func(args ...string) (*Proc, error) {
		p, exit, err := runToEnd(ctx, "codex", b.Codex, args, e)
		if err == nil && exit != nil {
			err = fmt.Errorf("realcli: codex %s: %v: %s", args[len(args)-1], exit, p.Stderr())
		}
		return p, err
	}
	first, err := run("exec", "--json", "--sandbox", "read-only", "--skip-git-repo-check", "Say hello.")
	if err != nil {
		return t, err
	}
	var thread string
	for _, l := range first.Lines() {
		var ev struct {
			Type     string `json:"type"`
			ThreadID string `json:"thread_id"`
		}
		if json.Unmarshal(l, &ev) == nil && ev.Type == "thread.started" {
			thread = ev.ThreadID
		}
	}
	if thread == "" {
		return t, fmt.Errorf("realcli: the first run started no thread")
	}
	second, err := run("exec", "--json", "-c", `sandbox_mode="read-only"`, "--skip-git-repo-check", "resume", thread, "Again.")
	if err != nil {
		return t, err
	}
	t.Args = second.cmd.Args[1:]
	t.Stdout = append(first.Lines(), second.Lines()...)
	t.Requests = fake.Requests()
	return t, refusal(fake)
}
