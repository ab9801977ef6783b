package cli

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hookWith runs `huddle hook ARGS...` with stdin as the hook's input.
func hookWith(t *testing.T, stdin string, args ...string) cliResult {
	t.Helper()
	return huddleWith(t, t.TempDir(), nil, strings.NewReader(stdin), append([]string{"hook"}, args...)...)
}

// TestHookRefusesBadInput: a hook's input that is not JSON, not a
// PermissionRequest or without a session is one line on stderr and exit
// status 1 (a failed hook, never a decision), for both CLIs, and makes no
// desk; an agent huddle has no hook for is a usage error.
func TestHookRefusesBadInput(t *testing.T) {
	for _, agent := range []string{"claude", "codex"} {
		desk := filepath.Join(t.TempDir(), "desk")
		for _, c := range []struct{ in, want string }{
			{"not json", "not JSON"},
			{`{"hook_event_name":"PreToolUse","session_id":"s1","tool_name":"Bash"}`, "huddle hook " + agent + " answers PermissionRequest"},
			{`{"hook_event_name":"PermissionRequest","tool_name":"Bash"}`, "no session_id"},
		} {
			hookWith(t, c.in, agent, "--desk", desk).wantError(t, ExitFail, c.want, agent, c.in)
		}
		if _, err := os.Stat(desk); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("bad input to huddle hook %s made the desk: %v", agent, err)
		}
	}
	hookWith(t, "{}", "gemini").wantError(t, ExitUsage, "want claude or codex", "hook", "gemini")
}

// TestDeskSettings: `huddle desk --settings` prints the hook for Claude
// Code's settings.json, with --codex the one for Codex's hooks.json (no
// matcher: Codex reads one as a regular expression), each naming the
// desk it was given.
func TestDeskSettings(t *testing.T) {
	desk := filepath.Join(t.TempDir(), "my desk")
	for _, c := range []struct {
		args    []string
		command string
		matcher bool
	}{
		{[]string{"desk", "--settings", "--desk", desk}, "huddle hook claude --desk '" + desk + "'", true},
		{[]string{"desk", "--settings", "--codex", "--desk", desk}, "huddle hook codex --desk '" + desk + "'", false},
	} {
		out := mustHuddle(t, c.args...).stdout
		var s struct {
			Hooks struct {
				PermissionRequest []map[string]json.RawMessage
			}
		}
		if err := json.Unmarshal([]byte(out), &s); err != nil || len(s.Hooks.PermissionRequest) != 1 {
			t.Fatalf("huddle %v printed %q: %v", c.args, out, err)
		}
		g := s.Hooks.PermissionRequest[0]
		var hooks []struct {
			Type, Command string
			Timeout       int
		}
		if err := json.Unmarshal(g["hooks"], &hooks); err != nil || len(hooks) != 1 || hooks[0].Type != "command" || hooks[0].Command != c.command || hooks[0].Timeout != 600 {
			t.Errorf("huddle %v: hooks %s, want the command %q with timeout 600", c.args, g["hooks"], c.command)
		}
		if _, has := g["matcher"]; has != c.matcher {
			t.Errorf("huddle %v: matcher present %v, want %v", c.args, has, c.matcher)
		}
	}
	huddle(t, "desk", "--codex").wantError(t, ExitUsage, "--codex goes with --settings", "desk", "--codex")
}
