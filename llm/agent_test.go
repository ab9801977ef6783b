package llm

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestWriteRefusedBeforeApprovalDoneAfter(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			f := newFakeServer(t, d,
				d.tools(call("c1", "write_file", `{"path":"out.txt","content":"early"}`)),
				d.tools(call("c2", "submit_plan", `{"plan":"write out.txt"}`)),
				d.tools(call("c3", "write_file", `{"path":"out.txt","content":"done"}`)),
				d.text("finished"),
			)
			env := &fakeEnv{decisions: []bool{true}, feedback: []string{"go ahead"}}
			a, tr := newTestAgent(t, f, env, func(c *Config) { c.PlanRequired = true })
			answer, err := a.Answer(context.Background(), "req-1", "write out.txt")
			noKey(t, err)
			if err != nil {
				t.Fatal(err)
			}
			if answer != "finished" {
				t.Errorf("answer = %q", answer)
			}
			reqs := f.requests()
			if len(reqs) != 4 {
				t.Fatalf("%d requests, want 4", len(reqs))
			}
			refused := toolResult(t, reqs[1].msgs, "c1")
			if !refused.IsError || !strings.Contains(refused.Text, "approved plan") {
				t.Errorf("write before approval: %+v, want a refusal naming the approved plan", refused)
			}
			if got := toolResult(t, reqs[2].msgs, "c2"); !strings.HasPrefix(got.Text, "approved") {
				t.Errorf("plan result = %q", got.Text)
			}
			if got := toolResult(t, reqs[3].msgs, "c3"); got.IsError {
				t.Errorf("write after approval refused: %q", got.Text)
			}
			b, err := os.ReadFile(filepath.Join(a.cfg.Dir, "out.txt"))
			if err != nil || string(b) != "done" {
				t.Errorf("out.txt = %q, %v; want done", b, err)
			}
			for _, r := range reqs {
				if r.auth != "Bearer "+testKey && r.auth != testKey {
					t.Errorf("auth header %q does not carry the key", r.auth)
				}
			}
			if kinds := strings.Join(tr.kinds(), " "); !strings.HasPrefix(kinds, "prompt model tool_call tool_result") || !strings.HasSuffix(kinds, "model end") {
				t.Errorf("transcript kinds: %s", kinds)
			}
		})
	}
}

func TestRejectReviseApprove(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			f := newFakeServer(t, d,
				d.tools(call("p1", "submit_plan", `{"plan":"rewrite everything"}`)),
				d.tools(call("w1", "edit_file", `{"path":"a.txt","old_text":"x","new_text":"y"}`)),
				d.tools(call("p2", "submit_plan", `{"plan":"change x to y in a.txt"}`)),
				d.tools(call("w2", "edit_file", `{"path":"a.txt","old_text":"x","new_text":"y"}`)),
				d.text("done"),
			)
			env := &fakeEnv{decisions: []bool{false, true}, feedback: []string{"too broad", ""}}
			a, _ := newTestAgent(t, f, env, func(c *Config) { c.PlanRequired = true })
			if err := os.WriteFile(filepath.Join(a.cfg.Dir, "a.txt"), []byte("x\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := a.Answer(context.Background(), "r", "fix a.txt"); err != nil {
				t.Fatal(err)
			}
			reqs := f.requests()
			if got := toolResult(t, reqs[1].msgs, "p1"); !got.IsError || !strings.Contains(got.Text, "too broad") {
				t.Errorf("rejection result = %+v", got)
			}
			if got := toolResult(t, reqs[2].msgs, "w1"); !got.IsError || !strings.Contains(got.Text, "approved plan") {
				t.Errorf("edit after rejection = %+v, want refused", got)
			}
			if got := toolResult(t, reqs[4].msgs, "w2"); got.IsError {
				t.Errorf("edit after approval = %+v", got)
			}
			if b, _ := os.ReadFile(filepath.Join(a.cfg.Dir, "a.txt")); string(b) != "y\n" {
				t.Errorf("a.txt = %q", b)
			}
			if len(env.plans) != 2 || env.plans[1] != "change x to y in a.txt" {
				t.Errorf("plans = %q", env.plans)
			}
		})
	}
}

func TestRejectedPlanClosesTheGateAgain(t *testing.T) {
	a := newToolAgent(t, func(c *Config) { c.PlanRequired = true })
	env := a.cfg.Env.(*fakeEnv)
	env.decisions, env.feedback = []bool{true, false}, []string{"", "no"}
	ctx := context.Background()
	run := func(name, args string) (string, bool) {
		text, isErr, _ := a.runTool(ctx, call("x", name, args))
		return text, isErr
	}
	run("submit_plan", `{"plan":"a"}`)
	if text, isErr := run("bash", `{"command":"true"}`); isErr {
		t.Fatalf("bash after approval: %s", text)
	}
	run("submit_plan", `{"plan":"b"}`)
	if text, isErr := run("write_file", `{"path":"f","content":"c"}`); !isErr || !strings.Contains(text, "approved plan") {
		t.Errorf("write after a rejection: %q, want refused", text)
	}
}

// newToolAgent builds an agent whose tools are called directly (no model).
func newToolAgent(t *testing.T, tune func(*Config)) *Agent {
	t.Helper()
	cfg := Config{Model: zeroModel{}, Tools: KnownTools, Dir: t.TempDir(), Env: &fakeEnv{}}
	if tune != nil {
		tune(&cfg)
	}
	a, err := NewAgent(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestPathEscapeRefused(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := newToolAgent(t, nil)
	if err := os.Symlink(outside, filepath.Join(a.cfg.Dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(a.cfg.Dir, "file-link")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cases := []struct{ tool, args string }{
		{"read_file", `{"path":"../secret.txt"}`},
		{"read_file", `{"path":"` + secret + `"}`},
		{"read_file", `{"path":"link/secret.txt"}`},
		{"read_file", `{"path":"file-link"}`},
		{"read_file", `{"path":"a/../../x"}`},
		{"write_file", `{"path":"link/new.txt","content":"x"}`},
		{"write_file", `{"path":"../new.txt","content":"x"}`},
		{"write_file", `{"path":"/tmp/huddle-escape.txt","content":"x"}`},
		{"edit_file", `{"path":"file-link","old_text":"secret","new_text":"gone"}`},
		{"list_files", `{"path":".."}`},
		{"list_files", `{"path":"link"}`},
	}
	for _, c := range cases {
		text, isErr, _ := a.runTool(ctx, call("x", c.tool, c.args))
		if !isErr || !strings.Contains(text, "refused") {
			t.Errorf("%s %s = %q, want refused", c.tool, c.args, text)
		}
		if strings.Contains(text, "secret\n") || text == "secret" {
			t.Errorf("%s %s leaked the file: %q", c.tool, c.args, text)
		}
	}
	if b, _ := os.ReadFile(secret); string(b) != "secret" {
		t.Errorf("the outside file changed: %q", b)
	}
	entries, _ := os.ReadDir(outside)
	if len(entries) != 1 {
		t.Errorf("files appeared outside: %v", entries)
	}
	if _, err := os.Stat("/tmp/huddle-escape.txt"); err == nil {
		t.Errorf("an absolute write escaped")
	}
	// Inside is fine, relative or absolute.
	if text, isErr, _ := a.runTool(ctx, call("x", "write_file", `{"path":"sub/in.txt","content":"ok"}`)); isErr {
		t.Errorf("write inside: %s", text)
	}
	abs := filepath.Join(a.cfg.Dir, "sub", "in.txt")
	if text, isErr, _ := a.runTool(ctx, call("x", "read_file", `{"path":"`+abs+`"}`)); isErr || text != "ok" {
		t.Errorf("read inside by absolute path = %q", text)
	}
}

func TestBashTimeoutAndOutputCap(t *testing.T) {
	ctx := context.Background()
	// A short timeout on a command that never ends on its own: what it
	// printed before is not asserted, since when bash gets to run is the
	// scheduler's business.
	slow := newToolAgent(t, func(c *Config) { c.ToolTimeout = 300 * time.Millisecond })
	text, isErr, _ := slow.runTool(ctx, call("x", "bash", `{"command":"sleep 30 & wait"}`))
	if !isErr || !strings.Contains(text, "[killed: timed out after 300ms]") {
		t.Errorf("sleep 30 = %q, want a timeout", text)
	}
	a := newToolAgent(t, func(c *Config) { c.OutputCap = 1000 })
	text, isErr, _ = a.runTool(ctx, call("x", "bash", `{"command":"head -c 100000 /dev/zero | tr '\\0' a"}`))
	if isErr || !strings.Contains(text, "[truncated: 99000 more bytes]") || strings.Count(text, "a") != 1000+strings.Count("[truncated: 99000 more bytes]", "a") {
		t.Errorf("100000 bytes of output kept %d bytes: %.80q…", len(text), text)
	}
	text, isErr, _ = a.runTool(ctx, call("x", "bash", `{"command":"pwd; exit 3"}`))
	if !isErr || !strings.Contains(text, "[exit status 3]") || !strings.Contains(text, a.dir) {
		t.Errorf("pwd; exit 3 = %q", text)
	}
	t.Setenv("HUDDLE_TEST_SECRET", testKey)
	text, _, _ = a.runTool(ctx, call("x", "bash", `{"command":"env"}`))
	if strings.Contains(text, testKey) {
		t.Errorf("bash sees the huddle process's environment: %q", text)
	}
}

func TestMalformedArgumentsAreAToolError(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			bad := call("b1", "send_message", `{"to": "lead", "content": `) // cut off
			if d.name == "anthropic" {
				// The Messages API always sends an input object; what a
				// model gets wrong there is its shape.
				bad = call("b1", "send_message", `{"to": "lead", "content": ["x"]}`)
			}
			f := newFakeServer(t, d,
				d.tools(bad, call("b2", "send_message", `{"to": 3}`), call("b3", "no_such_tool", `{}`)),
				d.text("ok"),
			)
			env := &fakeEnv{}
			a, _ := newTestAgent(t, f, env, nil)
			if _, err := a.Answer(context.Background(), "r", "go"); err != nil {
				t.Fatal(err)
			}
			msgs := f.requests()[1].msgs
			for _, id := range []string{"b1", "b2", "b3"} {
				if got := toolResult(t, msgs, id); !got.IsError {
					t.Errorf("%s: %+v, want an error result", id, got)
				}
			}
			if got := toolResult(t, msgs, "b1"); !strings.HasPrefix(got.Text, "invalid arguments for send_message") {
				t.Errorf("b1 = %q", got.Text)
			}
			if len(env.sent) != 0 {
				t.Errorf("sent %q from malformed calls", env.sent)
			}
		})
	}
}

func TestShutdownApprovedEndsRunStopped(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			f := newFakeServer(t, d,
				d.tools(call("s1", "shutdown_response", `{"request_id":"sd-7","approve":true,"reason":"done"}`)),
			)
			env := &fakeEnv{}
			a, tr := newTestAgent(t, f, env, nil)
			a.Deliver("shutdown_request sd-7 from lead: wrap up")
			err := a.Run(context.Background())
			if !errors.Is(err, ErrStopped) {
				t.Fatalf("Run = %v, want ErrStopped", err)
			}
			if len(env.shutdowns) != 1 || env.shutdowns[0] != "sd-7 true done" {
				t.Errorf("shutdown responses = %q", env.shutdowns)
			}
			if k := tr.kinds(); k[len(k)-1] != "end" {
				t.Errorf("transcript ends with %v", k)
			}
		})
	}
}

func TestMessageDeliveredMidRunIsAUserTurnBeforeTheNextCall(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			f := newFakeServer(t, d,
				d.tools(call("m1", "send_message", `{"to":"lead","content":"starting"}`)),
				d.text("waiting for the lead"),
				d.tools(call("s1", "shutdown_response", `{"request_id":"sd","approve":true}`)),
			)
			env := &fakeEnv{}
			a, _ := newTestAgent(t, f, env, func(c *Config) { c.Prompt = "begin" })
			// The message arrives while the model's tool runs: it must be
			// in the very next request, after the tool result.
			env.onSend = func(string, string) { a.Deliver("lead: the answer is 42") }
			errc := make(chan error, 1)
			go func() { errc <- a.Run(context.Background()) }()
			// After the final answer the loop waits; a delivery wakes it.
			for n := range f.got {
				if n == 2 {
					break
				}
			}
			env.mu.Lock()
			env.onSend = nil
			env.mu.Unlock()
			a.Deliver("lead: please stop")
			if err := <-errc; !errors.Is(err, ErrStopped) {
				t.Fatalf("Run = %v", err)
			}
			reqs := f.requests()
			second := reqs[1].msgs
			last := second[len(second)-1]
			if last.Role != RoleUser || last.Text != "lead: the answer is 42" {
				t.Errorf("second request ends with %+v, want the delivered message", last)
			}
			if prev := second[len(second)-2]; prev.Role != RoleTool || prev.ToolCallID != "m1" {
				t.Errorf("before the message: %+v, want m1's result", prev)
			}
			third := reqs[2].msgs
			if last := third[len(third)-1]; last.Role != RoleUser || last.Text != "lead: please stop" {
				t.Errorf("third request ends with %+v", last)
			}
		})
	}
}

func TestRetriesHonourRetryAfter(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			limited := d.apiErr(http.StatusTooManyRequests, "slow down")
			limited.header = map[string]string{"Retry-After": "1"}
			f := newFakeServer(t, d, limited, d.apiErr(http.StatusInternalServerError, "boom"), d.text("ok"))
			env := &fakeEnv{}
			a, tr := newTestAgent(t, f, env, nil)
			answer, err := a.Answer(context.Background(), "r", "go")
			if err != nil || answer != "ok" {
				t.Fatalf("Answer = %q, %v", answer, err)
			}
			reqs := f.requests()
			if len(reqs) != 3 {
				t.Fatalf("%d attempts, want 3", len(reqs))
			}
			if gap := reqs[1].at.Sub(reqs[0].at); gap < time.Second {
				t.Errorf("retried after %s, Retry-After asked 1s", gap)
			}
			errs := 0
			for _, e := range tr.entries {
				if e.Kind == "error" {
					errs++
				}
			}
			if errs != 2 {
				t.Errorf("%d error entries, want 2", errs)
			}
		})
	}
}

func TestRetriesAreCapped(t *testing.T) {
	d := openaiDialect
	f := newFakeServer(t, d, d.apiErr(500, "a"), d.apiErr(502, "b"), d.apiErr(503, "c"), d.apiErr(500, "d"), d.text("never"))
	a, _ := newTestAgent(t, f, &fakeEnv{}, nil)
	_, err := a.Answer(context.Background(), "r", "go")
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 500 {
		t.Fatalf("Answer = %v, want the last APIError", err)
	}
	if n := len(f.requests()); n != 4 {
		t.Errorf("%d attempts, want 4 (Backoff.Attempts)", n)
	}
}

func TestKeyAndModelErrorsEndTheRun(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			for _, c := range []struct {
				status int
				want   string
			}{{401, "API key"}, {404, `model "test-model" not found`}} {
				// The server echoes the key back: it must not reach the error.
				f := newFakeServer(t, d, d.apiErr(c.status, "Incorrect API key provided: "+testKey))
				a, _ := newTestAgent(t, f, &fakeEnv{}, nil)
				a.Deliver("hello")
				err := a.Run(context.Background())
				noKey(t, err)
				var ae *APIError
				if !errors.As(err, &ae) || ae.Status != c.status || !strings.Contains(err.Error(), c.want) {
					t.Errorf("%d: Run = %v, want an APIError naming %q", c.status, err, c.want)
				}
				if n := len(f.requests()); n != 1 {
					t.Errorf("%d: %d attempts, want 1", c.status, n)
				}
			}
		})
	}
}

func TestContextFullDropsTheOldestToolResults(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			f := newFakeServer(t, d,
				d.tools(call("r1", "list_files", `{"path":"."}`)),
				d.tools(call("r2", "list_files", `{"path":"."}`)),
				d.contextFull(),
				d.text("done"),
			)
			a, _ := newTestAgent(t, f, &fakeEnv{}, nil)
			if _, err := a.Answer(context.Background(), "r", "go"); err != nil {
				t.Fatal(err)
			}
			last := f.requests()[3].msgs
			if got := toolResult(t, last, "r1"); got.Text != droppedMarker {
				t.Errorf("r1 = %q, want dropped", got.Text)
			}
			if got := toolResult(t, last, "r2"); got.Text == droppedMarker {
				t.Errorf("r2 was dropped too; only the oldest half goes")
			}
		})
	}
}

func TestContextFullWithNothingToDropEnds(t *testing.T) {
	d := anthropicDialect
	f := newFakeServer(t, d, d.contextFull())
	a, _ := newTestAgent(t, f, &fakeEnv{}, nil)
	_, err := a.Answer(context.Background(), "r", "go")
	var ae *APIError
	if !errors.As(err, &ae) || !ae.ContextFull {
		t.Fatalf("Answer = %v, want a ContextFull APIError", err)
	}
}

func TestLimitsEndTheLoop(t *testing.T) {
	d := openaiDialect
	loop := d.tools(call("l", "list_files", `{"path":"."}`))
	f := newFakeServer(t, d, loop, loop, loop, loop)
	a, _ := newTestAgent(t, f, &fakeEnv{}, func(c *Config) { c.MaxTurns = 2; c.Prompt = "go" })
	var le *LimitError
	if err := a.Run(context.Background()); !errors.As(err, &le) || le.Limit != "max_turns" {
		t.Errorf("Run = %v, want max_turns", err)
	}
	f = newFakeServer(t, d, loop, loop, loop, loop)
	a, _ = newTestAgent(t, f, &fakeEnv{}, func(c *Config) { c.MaxTokens = 20; c.Prompt = "go" })
	if err := a.Run(context.Background()); !errors.As(err, &le) || le.Limit != "max_tokens" {
		t.Errorf("Run = %v, want max_tokens", err)
	}
	if n := len(f.requests()); n != 2 {
		t.Errorf("%d requests with 15 tokens a turn and a bound of 20, want 2", n)
	}
}

func TestCancelCancelsTheCallInFlight(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			f := newFakeServer(t, d, reply{hang: true})
			a, _ := newTestAgent(t, f, &fakeEnv{}, func(c *Config) { c.Prompt = "go" })
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() { errc <- a.Run(ctx) }()
			<-f.got
			cancel()
			if err := <-errc; !errors.Is(err, context.Canceled) {
				t.Errorf("Run = %v, want context.Canceled", err)
			}
		})
	}
}

func TestActivityAndUsage(t *testing.T) {
	d := openaiDialect
	f := newFakeServer(t, d,
		d.tools(call("a", "read_file", `{"path":"nope.txt"}`), call("b", "submit_plan", `{"plan":"p"}`), call("c", "call_teammate", `{"target":"reviewer","action":"review","prompt":"look"}`)),
		d.text("ok"),
	)
	env := &fakeEnv{decisions: []bool{true}, feedback: []string{""}}
	a, _ := newTestAgent(t, f, env, nil)
	if _, err := a.Answer(context.Background(), "r", "go"); err != nil {
		t.Fatal(err)
	}
	want := []string{"thinking", "read_file nope.txt", "waiting for approval", "calling reviewer.review", "thinking"}
	if strings.Join(env.activity, "|") != strings.Join(want, "|") {
		t.Errorf("activity = %q, want %q", env.activity, want)
	}
	if env.usage != (Usage{In: 20, Out: 10}) {
		t.Errorf("usage = %+v", env.usage)
	}
}

func TestNewModelRefusesUnknownProvider(t *testing.T) {
	if _, err := NewModel(ProviderConfig{Provider: "gemini", Model: "m"}); err == nil {
		t.Error("unknown provider accepted")
	}
	if _, err := NewAgent(Config{Model: zeroModel{}, Env: &fakeEnv{}, Tools: []string{"rm_rf"}, Dir: t.TempDir()}); err == nil {
		t.Error("unknown tool accepted")
	}
}

func TestRetryAfterParsing(t *testing.T) {
	now := time.Now()
	h := http.Header{}
	h.Set("Retry-After", "2")
	if got := retryAfter(h, now); got != 2*time.Second {
		t.Errorf("seconds: %s", got)
	}
	h.Set("Retry-After-Ms", "1500")
	if got := retryAfter(h, now); got != 1500*time.Millisecond {
		t.Errorf("ms: %s", got)
	}
	h = http.Header{}
	h.Set("Retry-After", now.Add(time.Hour).UTC().Format(http.TimeFormat))
	if got := retryAfter(h, now); got < 59*time.Minute {
		t.Errorf("date: %s", got)
	}
}

// zeroModel answers at once with a final text: the overhead benchmark's
// model, and a placeholder for tests that call tools directly.
type zeroModel struct{}

func (zeroModel) Turn(context.Context, Request) (Response, error) {
	return Response{Text: "ok", Usage: Usage{In: 1, Out: 1}}, nil
}

func TestSystemPromptAndToolsOffered(t *testing.T) {
	d := openaiDialect
	f := newFakeServer(t, d, d.text("ok"))
	a, _ := newTestAgent(t, f, &fakeEnv{}, func(c *Config) {
		c.PlanRequired = true
		c.Tools = []string{"read_file", "write_file"}
		c.System = "Prefer small diffs."
	})
	if _, err := a.Answer(context.Background(), "r", "go"); err != nil {
		t.Fatal(err)
	}
	var req struct {
		Messages []struct{ Role, Content string }
		Tools    []struct {
			Function struct{ Name string }
		}
	}
	if err := json.Unmarshal(f.requests()[0].raw, &req); err != nil {
		t.Fatal(err)
	}
	system := req.Messages[0].Content
	for _, want := range []string{"You are coder", "writes the change", "lead, reviewer", "submit_plan", "approves", "Prefer small diffs."} {
		if req.Messages[0].Role != "system" || !strings.Contains(system, want) {
			t.Errorf("system prompt lacks %q: %q", want, system)
		}
	}
	var names []string
	for _, tool := range req.Tools {
		names = append(names, tool.Function.Name)
	}
	if got := strings.Join(names, " "); got != "submit_plan send_message broadcast call_teammate shutdown_response read_file write_file" {
		t.Errorf("tools offered: %s", got)
	}
}

func TestAnswerBesideRunHasItsOwnConversation(t *testing.T) {
	d := anthropicDialect
	f := newFakeServer(t, d, d.tools(call("c1", "call_teammate", `{"target":"reviewer","action":"review","prompt":"x","timeout_sec":5}`)), d.text("reviewed: fine"))
	a, tr := newTestAgent(t, f, &fakeEnv{}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- a.Run(ctx) }()
	answer, err := a.Answer(context.Background(), "req-9", "review this")
	if err != nil || answer != "reviewed: fine" {
		t.Fatalf("Answer = %q, %v", answer, err)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v", err)
	}
	if got := toolResult(t, f.requests()[1].msgs, "c1"); got.IsError || !strings.Contains(got.Text, `"status":"ok"`) {
		t.Errorf("call result = %+v", got)
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, e := range tr.entries {
		if e.Conv != "req-9" && e.Conv != "main" {
			t.Errorf("entry of conversation %q", e.Conv)
		}
		if e.Kind == "prompt" && e.Conv != "req-9" {
			t.Errorf("the invocation's prompt is in %q", e.Conv)
		}
	}
}

func TestTransportFailureIsRetried(t *testing.T) {
	d := openaiDialect
	f := newFakeServer(t, d, d.text("ok"))
	url := f.srv.URL
	f.srv.Close() // nothing listens: every attempt fails without an answer
	m, err := NewModel(ProviderConfig{Provider: "openai", BaseURL: url + "/v1", Model: "m", APIKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	tr := &transcript{t: t}
	a, err := NewAgent(Config{Model: m, Env: &fakeEnv{}, Transcript: tr.add, Retry: Backoff{Base: time.Millisecond, Max: time.Millisecond, Attempts: 3}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Answer(context.Background(), "r", "go")
	noKey(t, err)
	if err == nil || !strings.Contains(err.Error(), "gave up after 3 attempts") {
		t.Errorf("Answer = %v, want a give-up after 3 attempts", err)
	}
}

func TestSpecialFilesRefused(t *testing.T) {
	a := newToolAgent(t, nil)
	if err := syscall.Mkfifo(filepath.Join(a.cfg.Dir, "pipe"), 0o644); err != nil {
		t.Skip("no mkfifo:", err)
	}
	ctx := context.Background()
	for _, c := range []struct{ tool, args string }{
		{"read_file", `{"path":"pipe"}`},
		{"write_file", `{"path":"pipe","content":"x"}`},
		{"edit_file", `{"path":"pipe","old_text":"a","new_text":"b"}`},
		{"read_file", `{"path":"."}`},
	} {
		if text, isErr, _ := a.runTool(ctx, call("x", c.tool, c.args)); !isErr || !strings.Contains(text, "not a regular file") {
			t.Errorf("%s %s = %q, want refused", c.tool, c.args, text)
		}
	}
}

// TestFileToolsRefuseAFileTooBig: write_file and edit_file refuse to leave
// more than MaxFile bytes in a file, saying so, and the file stays as it
// was; at the limit they write.
func TestFileToolsRefuseAFileTooBig(t *testing.T) {
	ctx := context.Background()
	a := newToolAgent(t, func(c *Config) { c.MaxFile = 100 })
	at := filepath.Join(a.cfg.Dir, "a.txt")
	full := strings.Repeat("a", 96) + "tail" // 100 bytes
	if text, isErr, _ := a.runTool(ctx, call("x", "write_file", `{"path":"a.txt","content":"`+full+`"}`)); isErr {
		t.Fatalf("a write at the limit: %s", text)
	}
	for _, c := range []struct{ tool, args string }{
		{"write_file", `{"path":"a.txt","content":"` + strings.Repeat("b", 101) + `"}`},
		{"edit_file", `{"path":"a.txt","old_text":"tail","new_text":"tails"}`},
	} {
		text, isErr, _ := a.runTool(ctx, call("x", c.tool, c.args))
		if !isErr || !strings.Contains(text, "refused: a.txt would hold 101 bytes, over the 100") {
			t.Errorf("%s past the limit = %q, want refused", c.tool, text)
		}
		if b, _ := os.ReadFile(at); string(b) != full {
			t.Errorf("%s past the limit changed the file: %d bytes", c.tool, len(b))
		}
	}
	if d := newToolAgent(t, nil); d.cfg.MaxFile != 1<<20 {
		t.Errorf("the default MaxFile is %d, want 1 MiB", d.cfg.MaxFile)
	}
}

// TestBigWriteRecordedOnceAndNotResent: a write_file of 32 MiB is refused
// unread, saying why, and neither kept in the conversation (the next
// request is small) nor recorded; a write under the limit is recorded
// once, in its tool_call entry, not again in the model's.
func TestBigWriteRecordedOnceAndNotResent(t *testing.T) {
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			huge := strings.Repeat("h", 32<<20)
			fits := "FITS-" + strings.Repeat("f", 256<<10)
			f := newFakeServer(t, d,
				d.tools(call("w1", "write_file", mustJSON(map[string]string{"path": "huge.txt", "content": huge}))),
				d.tools(call("w2", "write_file", mustJSON(map[string]string{"path": "fits.txt", "content": fits}))),
				d.text("done"),
			)
			var size int
			a, tr := newTestAgent(t, f, &fakeEnv{}, nil)
			if _, err := a.Answer(context.Background(), "r", "write"); err != nil {
				t.Fatal(err)
			}
			reqs := f.requests()
			refused := toolResult(t, reqs[1].msgs, "w1")
			if !refused.IsError || !strings.Contains(refused.Text, "refused") || !strings.Contains(refused.Text, "33554") {
				t.Errorf("the 32 MiB write = %.200q, want refused, saying its size", refused.Text)
			}
			if _, err := os.Stat(filepath.Join(a.dir, "huge.txt")); err == nil {
				t.Error("the 32 MiB write was written")
			}
			if n := len(reqs[1].raw); n > 64<<10 {
				t.Errorf("the request after the refused write sent %d bytes: the content was kept in the conversation", n)
			}
			tr.mu.Lock()
			var fitsCopies int
			for _, e := range tr.entries {
				b, _ := json.Marshal(e)
				size += len(b)
				fitsCopies += strings.Count(string(b), "FITS-")
			}
			tr.mu.Unlock()
			t.Logf("transcript: %d bytes; the 256 KiB write recorded %d times; requests: %d, %d, %d bytes", size, fitsCopies, len(reqs[0].raw), len(reqs[1].raw), len(reqs[2].raw))
			if size > 1<<20 {
				t.Errorf("the transcript holds %d bytes: the refused content was recorded", size)
			}
			if fitsCopies != 1 {
				t.Errorf("the 256 KiB write is recorded %d times, want once", fitsCopies)
			}
		})
	}
}

// TestReadFileSaysTheSizeOfWhatItCut: read_file of a file larger than a
// tool result returns its first bytes and says how large the file is,
// without reading the rest (a 4 GiB sparse file).
func TestReadFileSaysTheSizeOfWhatItCut(t *testing.T) {
	a := newToolAgent(t, func(c *Config) { c.OutputCap = 1000 })
	big := filepath.Join(a.dir, "big.bin")
	fh, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteString(strings.Repeat("a", 2000)); err != nil {
		t.Fatal(err)
	}
	if err := fh.Truncate(4 << 30); err != nil {
		t.Skip("no sparse file here:", err)
	}
	fh.Close()
	text, isErr, _ := a.runTool(context.Background(), call("x", "read_file", `{"path":"big.bin"}`))
	if isErr || !strings.HasPrefix(text, strings.Repeat("a", 1000)+"\n") || !strings.Contains(text, "big.bin holds 4294967296 bytes; read_file returns the first 1000") {
		t.Errorf("read_file of 4 GiB = %.80q…%q", text, text[max(0, len(text)-120):])
	}
}
