package cli

import (
	"strings"
	"testing"
)

// TestAgentArguments: each agent takes its own flags, and a wrong command
// line is one usage line and exit 2; a binary that is not there is one
// failure line naming it and exit 1.
func TestAgentArguments(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"agent"}, ExitUsage, "huddle: agent: an agent (echo, claude or codex) is required (run 'huddle help agent')"},
		{[]string{"agent", "gemini", "--task", "x"}, ExitUsage, `huddle: agent: no agent "gemini": want echo, claude or codex`},
		{[]string{"agent", "claude"}, ExitUsage, "huddle: agent: --task is required (run 'huddle help agent')"},
		{[]string{"agent", "codex", "--task", " "}, ExitUsage, "huddle: agent: --task is required"},
		{[]string{"agent", "claude", "--task", "x", "--misbehave", "2"}, ExitUsage, "huddle: agent: --misbehave is for echo, not claude"},
		{[]string{"agent", "echo", "--task", "x"}, ExitUsage, "huddle: agent: --task and --bin are for claude and codex, not echo"},
		{[]string{"agent", "echo", "extra"}, ExitUsage, `huddle: agent: unexpected argument "extra"`},
		{[]string{"agent", "codex", "--task", "x", "--bin", "/nonexistent/codex", "--", "--model", "o3"}, ExitFail,
			`huddle: agent: codex binary "/nonexistent/codex" (from --bin): not found; install codex or name it with --bin or HUDDLE_CODEX_BIN`},
	} {
		r := huddleIn(t, t.TempDir(), []string{"PATH=/nonexistent", "HUDDLE_CLAUDE_BIN=", "HUDDLE_CODEX_BIN="}, tc.args...)
		if r.code != tc.code || !strings.HasPrefix(r.stderr, tc.want) || strings.Count(r.stderr, "\n") != 1 || r.stdout != "" {
			t.Errorf("huddle %q: exit %d, stdout %q, stderr %q; want exit %d and one line starting %q", tc.args, r.code, r.stdout, r.stderr, tc.code, tc.want)
		}
	}
	r := huddleIn(t, t.TempDir(), []string{"PATH=/nonexistent", "HUDDLE_CLAUDE_BIN="}, "agent", "claude", "--task", "x")
	if r.code != ExitFail || !strings.Contains(r.stderr, `claude binary "claude" (from PATH): not found on PATH`) {
		t.Errorf("claude not on PATH: exit %d, %q", r.code, r.stderr)
	}
	if h := huddle(t, "help", "agent"); !strings.Contains(h.stdout, "claude|codex --task TEXT [--bin PATH] [-- CLI-ARGS...]") || !strings.Contains(h.stdout, "--bin PATH") {
		t.Errorf("help agent:\n%s", h.stdout)
	}
}
