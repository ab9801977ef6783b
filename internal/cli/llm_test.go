package cli

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"huddle/internal/testkit/dirrecords"
	"huddle/protocol"
	"huddle/team"
	"huddle/teamdir"
)

func TestInitTemplateLLMValidates(t *testing.T) {
	cwd := t.TempDir()
	dir := filepath.Join(cwd, "team")
	env := []string{"HUDDLE_LLM_BASE_URL=https://openrouter.ai/api/v1", "HUDDLE_LLM_MODEL=qwen/qwen3-coder", "HUDDLE_LLM_API_KEY_ENV=OPENROUTER_API_KEY", "OPENROUTER_API_KEY=sk-or-test-NOT-WRITTEN"}
	r := huddleIn(t, cwd, env, "init", "--template", "llm", "--dir", dir).wantOK(t, "init --template llm")
	if !strings.Contains(r.stdout, "qwen/qwen3-coder") || !strings.Contains(r.stdout, "$OPENROUTER_API_KEY") {
		t.Errorf("init said %q", r.stdout)
	}
	tm, err := team.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range tm.Members {
		rt := m.Runtime
		if rt.Kind != team.RuntimeLLM || rt.Provider != team.ProviderOpenAI || rt.BaseURL != "https://openrouter.ai/api/v1" ||
			rt.Model != "qwen/qwen3-coder" || rt.APIKeyEnv != "OPENROUTER_API_KEY" {
			t.Errorf("member %s: runtime %+v", m.Name, rt)
		}
	}
	v := huddleIn(t, cwd, env, "validate", dir).wantOK(t, "validate")
	if strings.Contains(v.stdout, "warning") {
		t.Errorf("validate warns on the template: %s", v.stdout)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "team.json"))
	if strings.Contains(string(b), "sk-or-test-NOT-WRITTEN") {
		t.Error("the key's value was written into team.json")
	}
	// Run again: nothing is overwritten.
	huddleIn(t, cwd, env, "init", "--template", "llm", "--dir", dir).wantError(t, ExitFail, "already exists", "init again")
}

func TestInitTemplateLLMDefaultsAndRefusals(t *testing.T) {
	cwd := t.TempDir()
	dir := filepath.Join(cwd, "team")
	huddleIn(t, cwd, nil, "init", "--template", "llm", "--dir", dir).wantOK(t, "init --template llm")
	tm, err := team.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	coder, _ := tm.Member("coder")
	if coder.Runtime.BaseURL != team.DefaultLLMBaseURL || coder.Runtime.Model != team.DefaultLLMModel || coder.Runtime.APIKeyEnv != "" || !coder.Runtime.PlanGate() {
		t.Errorf("coder: %+v", coder.Runtime)
	}
	huddleIn(t, cwd, nil, "validate", dir).wantOK(t, "validate")

	const pasted = "sk-proj-PASTED-KEY-abc"
	bad := filepath.Join(cwd, "bad")
	r := huddleIn(t, cwd, []string{"HUDDLE_LLM_API_KEY_ENV=" + pasted}, "init", "--template", "llm", "--dir", bad)
	r.wantError(t, ExitFail, "api_key_env", "init with a key as the name")
	if strings.Contains(r.stderr, pasted) {
		t.Errorf("the error repeats the value: %q", r.stderr)
	}
	if _, err := os.Stat(filepath.Join(bad, "team.json")); err == nil {
		t.Error("a team that does not validate was written")
	}
	huddleIn(t, cwd, nil, "init", "--template", "nope", "--dir", bad).wantError(t, ExitUsage, `"nope"`, "init --template nope")
}

// logsTeam is a team directory with one llm member, coder, and its files.
func logsTeam(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	team := `{"name":"t","members":[{"name":"coder","runtime":{"kind":"llm","provider":"openai","model":"m"}}]}`
	if err := os.WriteFile(filepath.Join(dir, "team.json"), []byte(team), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(teamdir.MembersDirPath(dir), 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestLogsPrintsTheLogAndTheTranscript(t *testing.T) {
	dir := logsTeam(t)
	logPath, _ := teamdir.MemberLogPath(dir, "coder")
	if err := os.WriteFile(logPath, []byte("agent: starting\nagent: done\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := mustHuddle(t, "logs", "coder", "--dir", dir)
	if r.stdout != "agent: starting\nagent: done\n" {
		t.Errorf("logs printed %q", r.stdout)
	}

	tr, _ := teamdir.TranscriptPath(dir, "coder")
	ts := time.Now().UTC().Format(time.RFC3339Nano)
	lines := `{"ts":"` + ts + `","kind":"model","text":"I will read main.go\u001b[2J","turn":1,"usage":{"in":120,"out":30}}
{"ts":"` + ts + `","kind":"tool_call","tool":"read_file","call_id":"c1","args":{"path": "main.go"},"conv":"inv-7"}
{"ts":"` + ts + `","kind":"tool_result","tool":"write_file","call_id":"c2","is_error":true,"text":"refused: no approved plan"}
`
	if err := os.WriteFile(tr, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	r = mustHuddle(t, "logs", "coder", "--transcript", "--dir", dir)
	out := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(out) != 3 {
		t.Fatalf("transcript printed %q", r.stdout)
	}
	for i, want := range [][]string{
		{"model #1: I will read main.go", "(tokens in 120, out 30)"},
		{"tool_call [inv-7] read_file", `{"path":"main.go"}`},
		{"tool_result write_file", "ERROR", "→ refused: no approved plan"},
	} {
		for _, w := range want {
			if !strings.Contains(out[i], w) {
				t.Errorf("line %d %q does not say %q", i, out[i], w)
			}
		}
	}
	if strings.ContainsRune(r.stdout, 0x1b) {
		t.Error("an escape sequence from the model reached the terminal")
	}
	raw := mustHuddle(t, "logs", "coder", "--transcript", "--json", "--dir", dir)
	if raw.stdout != lines {
		t.Errorf("--json printed %q", raw.stdout)
	}
}

func TestLogsRefusals(t *testing.T) {
	dir := logsTeam(t)
	huddle(t, "logs", "nobody", "--dir", dir).wantError(t, ExitFail, `no member "nobody"`, "logs nobody")
	huddle(t, "logs", "coder", "--dir", dir).wantError(t, ExitFail, "no log", "logs coder")
	logPath, _ := teamdir.MemberLogPath(dir, "coder")
	if err := os.WriteFile(logPath, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	huddle(t, "logs", "coder", "--dir", dir).wantError(t, ExitFail, "coder's log (an exec member's stderr) is empty: it has written nothing yet", "logs of an empty log")
	if err := os.Remove(logPath); err != nil {
		t.Fatal(err)
	}
	huddle(t, "logs", "coder", "--transcript", "--dir", dir).wantError(t, ExitFail, "no transcript", "logs coder --transcript")
	huddle(t, "logs", "coder", "--json", "--dir", dir).wantError(t, ExitUsage, "--transcript", "logs --json")
	huddle(t, "logs", "--dir", dir).wantError(t, ExitUsage, "MEMBER", "logs")
}

func TestStatusShowsTokensAndCost(t *testing.T) {
	dir := logsTeam(t)
	rec := protocol.Member{Name: "coder", Runtime: "llm", Status: protocol.MemberIdle, Since: time.Now().UTC(),
		Counters: protocol.Counters{TokensIn: 12_300, TokensOut: 4_100, CostUSD: 0.098}}
	if err := dirrecords.WriteMember(dir, &rec); err != nil {
		t.Fatal(err)
	}
	r := mustHuddle(t, "status", "--dir", dir)
	if !strings.Contains(r.stdout, "TOKENS") || !strings.Contains(r.stdout, "in 12.3k out 4.1k $0.10") || !strings.Contains(r.stdout, "team tokens: in 12.3k out 4.1k $0.10") {
		t.Errorf("status printed %q", r.stdout)
	}
	r = mustHuddle(t, "status", "--json", "--dir", dir)
	var rows []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || len(rows) != 1 || rows[0]["tokens_in"] != 12300.0 || rows[0]["cost_usd"] != 0.098 {
		t.Errorf("status --json: %s (%v)", r.stdout, err)
	}
}

// TestLogsFollowPrintsWhatIsAppended: logs --transcript -f prints what was
// there, then each entry appended, as it is appended.
func TestLogsFollowPrintsWhatIsAppended(t *testing.T) {
	dir := logsTeam(t)
	tr, _ := teamdir.TranscriptPath(dir, "coder")
	entry := func(text string) []byte {
		b, _ := json.Marshal(map[string]any{"ts": time.Now().UTC(), "kind": "model", "text": text})
		return append(b, '\n')
	}
	if err := teamdir.AppendLine(tr, entry("first turn")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(huddleBinary(t), "logs", "coder", "--transcript", "-f", "--dir", dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 16)
	defer func() {
		_ = cmd.Process.Kill()
		for range lines { // the reader ends at EOF; then Wait may close the pipe
		}
		_ = cmd.Wait()
	}()
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	next := func(want string) {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok || !strings.Contains(l, want) {
				t.Fatalf("got %q (open %v), want a line with %q", l, ok, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no line with %q within 10s", want)
		}
	}
	next("model: first turn")
	if err := teamdir.AppendLine(tr, entry("second turn")); err != nil {
		t.Fatal(err)
	}
	next("model: second turn")
}
