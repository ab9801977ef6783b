package agents

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// feedFile feeds a recorded stream (testdata, the fake's directives
// skipped) to s and returns the activities it showed and the lines it
// refused.
func feedFile(t *testing.T, s *claudeStream, name string) (activities []string, refused int) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "#") {
			continue
		}
		a, err := s.feed(sc.Bytes())
		if err != nil {
			refused++
			continue
		}
		if a != "" {
			activities = append(activities, a)
		}
	}
	return activities, refused
}

// TestClaudeStream reads the real session (testdata/real): its tools are
// the activities, paths under the working directory short; the session,
// the last answer and each run's figures are the outcome. Read alone, the
// plan is the one ExitPlanMode was denied with (headless plan mode has
// nobody to approve it); in a session, whose host answered the denial,
// it is the plan file the run wrote last.
func TestClaudeStream(t *testing.T) {
	const plans = "/tmp/huddle-realcli/claude-config/plans/write-hello-txt-with-a-lazy-backus.md"
	const acts = "Write " + plans + " | ToolSearch | putting forward the plan | Write " + plans + " | putting forward the plan | " +
		"Write hello.txt | running: mkdir -p out && cat hello.txt > out/shown.txt | running: rm -rf out"
	for _, session := range []bool{false, true} {
		s := newClaudeStream("/tmp/huddle-realcli/work")
		s.session = session
		got, refused := feedFile(t, s, "real/claude/plan-deny-revise-work.jsonl")
		if refused != 0 {
			t.Errorf("%d lines refused", refused)
		}
		if strings.Join(got, " | ") != acts {
			t.Errorf("activities %q, want %q", strings.Join(got, " | "), acts)
		}
		want := Outcome{Session: "f61c25d1-e085-447e-b2ee-170b3a9ac900", Final: "You're welcome.", Plan: "# Plan\n\n1. Write hello.txt with a greeting.\n",
			TokensIn: 12607, TokensOut: 453, CostUSD: s.outcome().CostUSD, Completed: true}
		if session {
			want.Plan += "2. Copy it to out/shown.txt to show it.\n"
		}
		if o := s.outcome(); o != want || math.Abs(o.CostUSD-0.050128) > 1e-9 {
			t.Errorf("session %v: outcome\n%+v\nwant\n%+v (cost 0.050128)", session, o, want)
		}
	}
}

// TestStreamsTolerateUnknownEvents: an event of a type or with fields the
// adapter does not know is no error and changes nothing; a line that is not
// a JSON object with a type is refused.
func TestStreamsTolerateUnknownEvents(t *testing.T) {
	for name, s := range map[string]*claudeStream{"claude": newClaudeStream("")} {
		for _, l := range []string{
			`{"type":"future_event","payload":{"x":[1,2]}}`,
			`{"type":"assistant","message":{"content":[{"type":"server_tool_use","name":"web","input":"not an object"}]}}`,
			`{"type":"item.completed","item":{"id":"i","type":"collab_tool_call","tool":"spawn_agent"}}`,
			`{"type":"item.started"}`,
			`{"type":"system","subtype":"compact_boundary","compact_metadata":{"trigger":"auto"}}`,
		} {
			if _, err := s.feed([]byte(l)); err != nil {
				t.Errorf("%s: %s refused: %v", name, l, err)
			}
		}
		if got := s.outcome(); got != (Outcome{}) {
			t.Errorf("%s: unknown events made %+v", name, got)
		}
		for _, l := range []string{`not json`, `[1]`, `{"no_type":1}`, `{"type":"result"`} {
			if _, err := s.feed([]byte(l)); err == nil {
				t.Errorf("%s: %q accepted", name, l)
			}
		}
	}
}

func TestClaudeSessionArgs(t *testing.T) {
	base := "-p --input-format stream-json --output-format stream-json --verbose --permission-prompt-tool stdio"
	for _, tc := range []struct {
		mode, session, want string
	}{
		{"plan", "", base + " --permission-mode plan --model sonnet"},
		{"default", "S", base + " --permission-mode default --resume S --model sonnet"},
	} {
		if got := strings.Join(claudeSessionArgs(tc.mode, tc.session, []string{"--model", "sonnet"}), " "); got != tc.want {
			t.Errorf("%s %q: %s, want %s", tc.mode, tc.session, got, tc.want)
		}
	}
	if claudeMode(Turn{}) != "plan" || claudeMode(Turn{Edits: true}) != "default" {
		t.Errorf("modes: %s before the approval, %s after", claudeMode(Turn{}), claudeMode(Turn{Edits: true}))
	}
}

// TestBinNamesTheBinary: a binary that cannot be found or run is one error
// naming it and where it came from.
func TestBinNamesTheBinary(t *testing.T) {
	c := CLIs["claude"]
	t.Setenv("PATH", t.TempDir())
	t.Setenv("HUDDLE_CLAUDE_BIN", "")
	if _, err := c.Bin(""); err == nil || !strings.Contains(err.Error(), `claude binary "claude" (from PATH): not found on PATH`) {
		t.Errorf("Bin without claude on PATH: %v", err)
	}
	if _, err := c.Bin("/nonexistent/claude"); err == nil || !strings.Contains(err.Error(), `claude binary "/nonexistent/claude" (from --bin): not found`) {
		t.Errorf("Bin(/nonexistent/claude): %v", err)
	}
	notExec := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HUDDLE_CLAUDE_BIN", notExec)
	if _, err := c.Bin(""); err == nil || !strings.Contains(err.Error(), "(from $HUDDLE_CLAUDE_BIN): not executable") {
		t.Errorf("Bin of a file that is not executable: %v", err)
	}
	if err := os.Chmod(notExec, 0o700); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Bin(""); err != nil || got != notExec {
		t.Errorf("Bin from $HUDDLE_CLAUDE_BIN = %q, %v", got, err)
	}
}

func TestActivityIsOneShortLine(t *testing.T) {
	got := claudeActivity("Bash", claudeToolInput{Command: "for f in *.go; do\n  gofmt -l \"$f\"\ndone " + strings.Repeat("x", 200)}, "")
	if strings.Contains(got, "\n") || len([]rune(got)) != maxActivity || !strings.HasSuffix(got, "…") || !strings.HasPrefix(got, "running: for f in *.go; do gofmt") {
		t.Errorf("activity %q", got)
	}
	if got := claudeActivity("Write", claudeToolInput{FilePath: "/elsewhere/x.go"}, "/work/repo"); got != "Write /elsewhere/x.go" {
		t.Errorf("a path outside the directory: %q", got)
	}
	if got := claudeActivity("mcp__github__create_pr", claudeToolInput{}, ""); got != "mcp__github__create_pr" {
		t.Errorf("an unknown tool: %q", got)
	}
}

// TestClaudeStreamCountsEveryRun reads what the real Claude Code 2.1.328
// printed (testdata/real): a process that ends several runs has each
// result's usage and cost counted once, adding up to the CLI's own
// totals for the process (the last result's modelUsage and
// total_cost_usd); a stream that starts after a first run, as a resumed
// session's does, counts only what came after it, though its
// total_cost_usd still holds the first.
func TestClaudeStreamCountsEveryRun(t *testing.T) {
	lines := realLines(t, "real/claude/plan-deny-revise-work.jsonl")
	var totals []float64
	var tokens [][2]int64 // the CLI's cumulative tokens in and out at each result
	var firstEnd int      // the index after the first result
	for i, l := range lines {
		var r struct {
			Type       string  `json:"type"`
			Total      float64 `json:"total_cost_usd"`
			ModelUsage map[string]struct {
				In     int64 `json:"inputTokens"`
				Out    int64 `json:"outputTokens"`
				Read   int64 `json:"cacheReadInputTokens"`
				Create int64 `json:"cacheCreationInputTokens"`
			} `json:"modelUsage"`
		}
		if json.Unmarshal(l, &r) != nil || r.Type != "result" {
			continue
		}
		var in, out int64
		for _, m := range r.ModelUsage {
			in, out = in+m.In+m.Read+m.Create, out+m.Out
		}
		totals, tokens = append(totals, r.Total), append(tokens, [2]int64{in, out})
		if firstEnd == 0 {
			firstEnd = i + 1
		}
	}
	if len(totals) < 2 {
		t.Fatalf("the recording ends %d runs; the test needs two or more", len(totals))
	}
	last := len(totals) - 1
	for _, tc := range []struct {
		name    string
		from    int
		cost    float64
		in, out int64
	}{
		{"the whole process", 0, totals[last], tokens[last][0], tokens[last][1]},
		{"after its first run", firstEnd, totals[last] - totals[0], tokens[last][0] - tokens[0][0], tokens[last][1] - tokens[0][1]},
	} {
		s := newClaudeStream("/work")
		for _, l := range lines[tc.from:] {
			if _, err := s.feed(l); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
		}
		got := s.outcome()
		if math.Abs(got.CostUSD-tc.cost) > 1e-9 || got.TokensIn != tc.in || got.TokensOut != tc.out {
			t.Errorf("%s: cost %.6f, tokens %d in %d out; the CLI says %.6f, %d in %d out", tc.name, got.CostUSD, got.TokensIn, got.TokensOut, tc.cost, tc.in, tc.out)
		}
	}
}

// realLines reads a recording of a real CLI under testdata, one event a
// line.
func realLines(t *testing.T, name string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for l := range bytes.Lines(b) {
		if l = bytes.TrimSpace(l); len(l) > 0 {
			out = append(out, l)
		}
	}
	return out
}

// TestClaudeAPIErrorIsTheFailure: the real CLI ends a run the API refused
// with a "success" result that has is_error set (testdata/real): the
// failure is the API's error and why the run ended, not "success".
func TestClaudeAPIErrorIsTheFailure(t *testing.T) {
	s := newClaudeStream("/work")
	for _, l := range realLines(t, "real/claude/api-error.jsonl") {
		if _, err := s.feed(l); err != nil {
			t.Fatal(err)
		}
	}
	const want = "API Error: 400 tools.3.input_schema: JSON schema is invalid (api error)"
	if got := s.outcome().Failure; got != want {
		t.Errorf("failure %q, want %q", got, want)
	}
}

// TestClaudePlanFromItsPlanFile reads what the real Claude Code 2.1.328
// printed run as the adapter runs it, -p in plan mode (testdata/real,
// recorded with CLAUDE_CONFIG_DIR=/tmp/huddle-realcli/claude-config): no
// ExitPlanMode is offered, the model writes its plan to a file under
// CLAUDE_CONFIG_DIR/plans/ and says so, and the run's plan is that file's
// text as written, not its words about it.
func TestClaudePlanFromItsPlanFile(t *testing.T) {
	feed := func() Outcome {
		s := newClaudeStream("/tmp/huddle-realcli/work")
		for _, l := range realLines(t, "real/claude/print-plan.jsonl") {
			if _, err := s.feed(l); err != nil {
				t.Fatal(err)
			}
		}
		return s.outcome()
	}
	t.Setenv("CLAUDE_CONFIG_DIR", "/tmp/huddle-realcli/claude-config")
	out := feed()
	if want := "# Plan\n\n1. Write hello.txt with a greeting.\n"; out.Plan != want || !out.Completed {
		t.Errorf("plan %q (completed %v), want %q", out.Plan, out.Completed, want)
	}
	// A Write anywhere else is no plan.
	t.Setenv("CLAUDE_CONFIG_DIR", "/elsewhere")
	if out := feed(); out.Plan != "" {
		t.Errorf("a file outside the plans directory became the plan %q", out.Plan)
	}
}
