package realcli

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sync"

	"huddle/internal/fakeapi"
)

// What the Claude Code plan scenario says and does; its test checks each
// of them arrived where the protocol says.
const (
	ClaudeTask        = "Write hello.txt with a greeting, then show it."
	ClaudePlanV1      = "# Plan\n\n1. Write hello.txt with a greeting.\n"
	ClaudePlanDenial  = "Also show the file once it is written."
	ClaudePlanV2      = "# Plan\n\n1. Write hello.txt with a greeting.\n2. Copy it to out/shown.txt to show it.\n"
	ClaudeModelHello  = "hello\n"
	ClaudeHostHello   = "hello, huddle\n" // the host's updatedInput replaces the model's content
	ClaudeShowCommand = "mkdir -p out && cat hello.txt > out/shown.txt"
	ClaudeRmCommand   = "rm -rf out"
	ClaudeRmDenial    = "Keep out/: the lead wants to read it."
	ClaudeDone        = "Done: hello.txt is written and shown in out/shown.txt."
	ClaudeThanks      = "Thanks."
	ClaudeWelcome     = "You're welcome."
)

// ClaudeScenarioUsage is what every turn of the first run reports; the
// second run's one turn reports ClaudeSecondRunUsage.
var (
	ClaudeScenarioUsage  = fakeapi.Usage{InputTokens: 1000, OutputTokens: 50, CacheReadInputTokens: 300, CacheCreationInputTokens: 100}
	ClaudeSecondRunUsage = fakeapi.Usage{InputTokens: 7, OutputTokens: 3}
)

// planPathRE finds the plan file Claude Code tells the model to write in
// plan mode ("You should create your plan at PATH using the Write tool").
var planPathRE = regexp.MustCompile(`create your plan at (\S+\.md)`)

// ClaudeRun is what the plan scenario saw.
type ClaudeRun struct {
	Transcript
	PlanFile string // the path Claude Code chose for the plan
	Prompts  []*CanUseTool
	Results  []*ClaudeResult
	Exit     error // how the CLI exited once its stdin closed
}

// ClaudePlanScenario runs one Claude Code session, started in plan mode,
// through a plan gate and the work after it, against a fake whose model
// follows the script below:
//
//  1. writes a plan file and calls ExitPlanMode: the host denies it;
//  2. revises the plan and calls ExitPlanMode again: the host allows it;
//  3. writes hello.txt (allowed, with content the host changes), runs a
//     Bash command that writes out/shown.txt (allowed) and one that removes
//     out/ (denied), and ends the run;
//  4. a second user turn gets a one-line answer (a second result, so the
//     per-run usage shows), and closing stdin ends the process.
//
// Any prompt out of this order, or any request the fake refused, is an
// error. root is an empty directory the scenario owns.
func ClaudePlanScenario(ctx context.Context, b Bins, root string) (*ClaudeRun, error) {
	run := &ClaudeRun{Transcript: Transcript{CLI: "claude", Name: "plan-deny-revise-work"}}
	var mu sync.Mutex
	planFile := func() string {
		mu.Lock()
		defer mu.Unlock()
		return run.PlanFile
	}
	u := ClaudeScenarioUsage
	call := func(name string, input any) fakeapi.Turn {
		return fakeapi.Turn{Calls: []fakeapi.Call{{Name: name, Input: input}}, Usage: u}
	}
	fake := fakeapi.Anthropic(
		fakeapi.Turn{Make: func(r fakeapi.Request) (fakeapi.Turn, error) {
			m := planPathRE.FindSubmatch(r.Body)
			if m == nil {
				return fakeapi.Turn{}, fmt.Errorf("the first request names no plan file (is plan mode on?)")
			}
			mu.Lock()
			run.PlanFile = string(m[1])
			mu.Unlock()
			t := call("Write", map[string]any{"file_path": string(m[1]), "content": ClaudePlanV1})
			t.Text = "I will write the plan first."
			return t, nil
		}},
		// ExitPlanMode is a deferred tool: a model loads it first.
		call("ToolSearch", map[string]any{"query": "select:ExitPlanMode", "max_results": 1}),
		call("ExitPlanMode", map[string]any{}),
		fakeapi.Turn{Make: func(fakeapi.Request) (fakeapi.Turn, error) {
			return call("Write", map[string]any{"file_path": planFile(), "content": ClaudePlanV2}), nil
		}},
		call("ExitPlanMode", map[string]any{}),
		call("Write", map[string]any{"file_path": "hello.txt", "content": ClaudeModelHello}),
		call("Bash", map[string]any{"command": ClaudeShowCommand, "description": "Show hello.txt in out/shown.txt"}),
		call("Bash", map[string]any{"command": ClaudeRmCommand, "description": "Remove out/"}),
		fakeapi.Turn{Text: ClaudeDone, Usage: u},
		fakeapi.Turn{Text: ClaudeWelcome, Usage: ClaudeSecondRunUsage},
	)
	defer fake.Close()
	e, err := ClaudeEnv(root, fake.URL())
	if err != nil {
		return nil, err
	}
	run.Env = e
	c, err := StartClaude(b, e, "plan")
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

func (run *ClaudeRun) drive(ctx context.Context, c *Claude) error {
	prompt := func(tool string, answer func(*CanUseTool) error) error {
		p, err := c.ExpectPrompt(ctx, tool)
		if err != nil {
			return err
		}
		run.Prompts = append(run.Prompts, p)
		return answer(p)
	}
	allow := func(p *CanUseTool) error { return c.Allow(p, nil) }
	result := func() error {
		r, err := c.ExpectResult(ctx)
		if err != nil {
			return err
		}
		run.Results = append(run.Results, r)
		return nil
	}
	steps := []func() error{
		func() error { return c.SendUser(ClaudeTask) },
		func() error {
			return prompt("ExitPlanMode", func(p *CanUseTool) error { return c.Deny(p, ClaudePlanDenial) })
		},
		func() error { return prompt("ExitPlanMode", allow) },
		func() error {
			return prompt("Write", func(p *CanUseTool) error {
				var in map[string]any
				if err := json.Unmarshal(p.Request.Input, &in); err != nil {
					return fmt.Errorf("realcli: the Write prompt's input: %w", err)
				}
				in["content"] = ClaudeHostHello
				return c.Allow(p, in)
			})
		},
		func() error { return prompt("Bash", allow) },
		func() error {
			return prompt("Bash", func(p *CanUseTool) error { return c.Deny(p, ClaudeRmDenial) })
		},
		result,
		func() error { return c.SendUser(ClaudeThanks) },
		result,
		c.CloseStdin,
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	run.Exit = c.Wait(ctx)
	return nil
}

// ClaudeInit is the system/init event that opens a session.
type ClaudeInit struct {
	Type           string   `json:"type"`
	Subtype        string   `json:"subtype"`
	SessionID      string   `json:"session_id"`
	Tools          []string `json:"tools"`
	PermissionMode string   `json:"permissionMode"`
	Model          string   `json:"model"`
	Version        string   `json:"claude_code_version"`
	Cwd            string   `json:"cwd"`
	APIKeySource   string   `json:"apiKeySource"`
}

// ClaudeInitOf finds the session's system/init event in lines.
func ClaudeInitOf(lines [][]byte) (ClaudeInit, bool) {
	for _, l := range lines {
		var i ClaudeInit
		if json.Unmarshal(l, &i) == nil && i.Type == "system" && i.Subtype == "init" {
			return i, true
		}
	}
	return ClaudeInit{}, false
}

// ClaudeAPIErrorText is the message of the API error the API-error
// scenario's fake answers with.
const ClaudeAPIErrorText = "tools.3.input_schema: JSON schema is invalid"

// ClaudeAPIErrorScenario sends Claude Code one user turn whose model
// request the API refuses with a 400 invalid_request_error, which the
// CLI does not retry: the run ends with a result. Its transcript is the
// fixture claude/api-error.
func ClaudeAPIErrorScenario(ctx context.Context, b Bins, root string) (*ClaudeRun, error) {
	run := &ClaudeRun{Transcript: Transcript{CLI: "claude", Name: "api-error"}}
	refuse := fakeapi.Turn{Error: &fakeapi.APIError{Status: 400, Type: "invalid_request_error", Message: ClaudeAPIErrorText}}
	fake := fakeapi.Anthropic(slices.Repeat([]fakeapi.Turn{refuse}, 30)...)
	defer fake.Close()
	e, err := ClaudeEnv(root, fake.URL())
	if err != nil {
		return nil, err
	}
	run.Env = e
	c, err := StartClaude(b, e, "plan")
	if err != nil {
		return nil, err
	}
	err = c.SendUser("Say hello.")
	if err == nil {
		var r *ClaudeResult
		if r, err = c.ExpectResult(ctx); err == nil {
			run.Results = append(run.Results, r)
		}
	}
	if stopErr := c.Stop(); err == nil {
		err = stopErr
	}
	run.keep(c.Proc, fake)
	if err == nil {
		err = refusal(fake)
	}
	return run, err
}

// ClaudePlanFileReply is the model's last words in the plan-file scenario.
const ClaudePlanFileReply = "I wrote the plan to the plan file; it is ready for review."

// ClaudePrintPlanScenario runs `claude -p PROMPT --output-format
// stream-json --verbose --permission-mode plan`, Claude Code's one-shot
// mode, which huddle does not drive (no permission prompt tool, so no
// ExitPlanMode): the model writes its plan to the plan file the CLI names,
// then says so and ends the run. Its transcript is the fixture
// claude/print-plan.
func ClaudePrintPlanScenario(ctx context.Context, b Bins, root string) (*Transcript, error) {
	t := &Transcript{CLI: "claude", Name: "print-plan"}
	u := ClaudeScenarioUsage
	fake := fakeapi.Anthropic(
		fakeapi.Turn{Make: func(r fakeapi.Request) (fakeapi.Turn, error) {
			m := planPathRE.FindSubmatch(r.Body)
			if m == nil {
				return fakeapi.Turn{}, fmt.Errorf("the first request names no plan file (is plan mode on?)")
			}
			return fakeapi.Turn{Calls: []fakeapi.Call{{Name: "Write", Input: map[string]any{"file_path": string(m[1]), "content": ClaudePlanV1}}}, Usage: u}, nil
		}},
		fakeapi.Turn{Text: ClaudePlanFileReply, Usage: u},
	)
	defer fake.Close()
	e, err := ClaudeEnv(root, fake.URL())
	if err != nil {
		return nil, err
	}
	t.Env = e
	return t, t.runOnce(ctx, b.Claude, []string{"-p", "Plan a greeting in hello.txt.", "--output-format", "stream-json", "--verbose", "--permission-mode", "plan"}, fake)
}
