package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	"huddle/protocol"
	"huddle/store/filestore"
	"huddle/team"
)

// The desk: a team of the agent sessions a person runs themselves, which
// ask through `huddle hook claude` or `huddle hook codex` (team/desk.go).

const deskAbout = "Open the desk: a huddle team whose members are the Claude Code and Codex sessions you run\n" +
	"yourself, each asking through 'huddle hook claude' or 'huddle hook codex' before a tool use the\n" +
	"CLI would put to you. Each question is a permission request on this screen: a allows it once, A\n" +
	"for the rest of that session, r denies it with a message the model reads. The desk is --desk,\n" +
	"else DESK in the user's configuration directory ($XDG_CONFIG_HOME/huddle/desk, else\n" +
	"~/.config/huddle/desk); it is made on first use. With --settings, print what to add to Claude\n" +
	"Code's settings.json (with --codex, to Codex's ~/.codex/hooks.json) and exit.\n" +
	"The other commands work on it with --dir DESK (huddle requests, approve, reject).\n" +
	"docs/agents.md, \"The desk\", has the whole setup."

const hookAbout = "Answer one PermissionRequest hook of Claude Code (huddle hook claude) or Codex (huddle hook\n" +
	"codex): read the hook's JSON on stdin, put the question to the desk (--desk, else the default\n" +
	"desk: 'huddle help desk') as a permission request of the session's member (claude- or codex-\n" +
	"<last 8 of its session id>), and print the decision for the CLI: allowed, or denied with the\n" +
	"lead's words. What the lead allowed for the session before is allowed at once. Nobody answering\n" +
	"within --wait (default 5m) cancels the request and prints nothing, so the CLI asks in its own\n" +
	"prompt: huddle never allows by itself. Set the hook's timeout above --wait. Bad input is one\n" +
	"line on stderr and exit status 1: a failed hook to the CLI, never a decision."

// defaultDesk is the desk in the user's configuration directory.
func defaultDesk() (string, error) {
	base, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no configuration directory for the desk (name one with --desk): %w", err)
	}
	return filepath.Join(base, "huddle", "desk"), nil
}

// openDesk makes the desk at dir if it is not there ("" is the default
// desk) and returns its path.
func openDesk(dir string) (string, error) {
	if dir == "" {
		var err error
		if dir, err = defaultDesk(); err != nil {
			return "", err
		}
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if err := team.MakeDesk(dir); err != nil {
		return "", err
	}
	return dir, nil
}

func deskFlags(fs *flag.FlagSet) runFunc {
	var dir string
	var settings, codex bool
	fs.StringVar(&dir, "desk", "", "the desk `directory` (default: DESK in the user's configuration directory)")
	fs.BoolVar(&settings, "settings", false, "print the hook for Claude Code's settings.json and exit")
	fs.BoolVar(&codex, "codex", false, "with --settings: the hook for Codex's hooks.json")
	no := addNotifyFlags(fs)
	return func(cl *Cmdline) int {
		if code, ok := cl.WantArgs(0, 0, ""); !ok {
			return code
		}
		if codex && !settings {
			return cl.UsageError("--codex goes with --settings")
		}
		desk, err := openDesk(dir)
		if err != nil {
			return cl.Fail(err)
		}
		if settings {
			agent := "claude"
			if codex {
				agent = "codex"
			}
			return cl.PrintJSON(hookSettings(agent, desk, dir != ""))
		}
		cl.Dir = desk
		return cl.full.Attach(cl, no)
	}
}

// hookSettings is what Claude Code's settings.json (or Codex's
// hooks.json, of the same shape) needs for the desk: a PermissionRequest
// command hook for every tool, its timeout (seconds, for both) above the
// hook's own wait.
func hookSettings(agent, desk string, named bool) any {
	command := "huddle hook " + agent
	if named {
		command += " --desk " + shellQuote(desk)
	}
	group := map[string]any{"hooks": []any{map[string]any{"type": "command", "command": command, "timeout": 600}}}
	if agent == "claude" {
		group["matcher"] = "*" // Codex's matcher is a regular expression; none matches every tool
	}
	return map[string]any{"hooks": map[string]any{"PermissionRequest": []any{group}}}
}

// shellQuote quotes s for a shell when it needs it.
func shellQuote(s string) string {
	for _, c := range s {
		if !strings.ContainsRune("/.-_", c) && !unicode.IsLetter(c) && !unicode.IsDigit(c) {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}

// maxHookInput bounds what the hook reads on stdin.
const maxHookInput = 4 << 20

// hookInput is the part of a PermissionRequest hook's input the desk
// reads, the same for Claude Code and Codex but for Claude Code's
// suggestions (TestClaudePermissionRequestHook and
// TestCodexPermissionRequestHook, internal/realcli, have it from the real
// CLIs).
type hookInput struct {
	SessionID   string          `json:"session_id"`
	Cwd         string          `json:"cwd"`
	Event       string          `json:"hook_event_name"`
	Tool        string          `json:"tool_name"`
	Input       json.RawMessage `json:"tool_input"`
	Suggestions json.RawMessage `json:"permission_suggestions"`
}

func hookFlags(fs *flag.FlagSet) runFunc {
	var desk string
	var wait time.Duration
	fs.StringVar(&desk, "desk", "", "the desk `directory` (default: the default desk, 'huddle help desk')")
	fs.DurationVar(&wait, "wait", 5*time.Minute, "how long to wait for the lead before leaving the question to Claude Code's own prompt")
	return func(cl *Cmdline) int {
		if code, ok := cl.WantArgs(1, 1, "the agent (claude or codex)"); !ok {
			return code
		}
		agent := cl.Args[0]
		if agent != "claude" && agent != "codex" {
			return cl.UsageError("no hook for %q: want claude or codex", agent)
		}
		if wait <= 0 {
			return cl.UsageError("--wait must be positive")
		}
		return runHook(cl, os.Stdin, agent, desk, wait)
	}
}

// runHook answers one PermissionRequest hook of agent (claude or codex).
// Both CLIs read the same answer: a decision to allow, or to deny with a
// message; nothing printed leaves the question to their own prompt.
func runHook(cl *Cmdline, stdin io.Reader, agent, desk string, wait time.Duration) int {
	raw, err := io.ReadAll(io.LimitReader(stdin, maxHookInput+1))
	if err != nil {
		return cl.Fail(fmt.Errorf("reading the hook's input: %w", err))
	}
	if len(raw) > maxHookInput {
		return cl.Fail(fmt.Errorf("the hook's input is over %d bytes", maxHookInput))
	}
	var in hookInput
	if err := json.Unmarshal(raw, &in); err != nil {
		return cl.Fail(fmt.Errorf("the hook's input is not JSON: %w", err))
	}
	if in.Event != "PermissionRequest" {
		return cl.Fail(fmt.Errorf("hook_event_name is %q: huddle hook %s answers PermissionRequest", in.Event, agent))
	}
	if in.SessionID == "" || in.Tool == "" {
		return cl.Fail(errors.New("the hook's input has no session_id or tool_name"))
	}
	dir, err := openDesk(desk)
	if err != nil {
		return cl.Fail(err)
	}
	st, err := filestore.Open(dir)
	if err != nil {
		return cl.Fail(err)
	}
	defer st.Close()
	ctx, stop := SignalContext()
	defer stop()
	r, err := team.AskDesk(ctx, st, team.DeskAsk{Agent: agent, Session: in.SessionID, Cwd: in.Cwd, Tool: in.Tool, Input: in.Input, Suggestions: in.Suggestions}, wait)
	if err != nil {
		return cl.Fail(err)
	}
	decision := map[string]any{}
	switch r.Status {
	case protocol.RequestAllowed:
		decision["behavior"] = "allow"
	case protocol.RequestDenied:
		why := r.Feedback
		if why == "" {
			why = r.ResponseReason
		}
		if why == "" {
			why = "no reason given"
		}
		decision["behavior"], decision["message"] = "deny", "Denied on huddle's desk: "+why
	default:
		fmt.Fprintf(cl.Stderr, "huddle: hook: %s is %s: %s\n", r.ID, r.Status, r.ResponseReason)
		return ExitOK // nothing on stdout: the CLI's own prompt asks
	}
	return cl.PrintJSON(map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": "PermissionRequest", "decision": decision}})
}
