package agents

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// Turn is one run of a CLI: a prompt, on a new session or resuming one,
// read-only or with edits allowed.
type Turn struct {
	Prompt  string
	Session string // "" starts a new session
	Edits   bool   // false: read-only (Claude Code's plan mode, Codex's read-only sandbox)
}

// CLI is what differs between the coding agents huddle drives: how a turn
// becomes a command line, and how its output is read.
type CLI struct {
	Name   string // the command's name on PATH: claude, codex
	BinEnv string // the variable that names its binary
	// Args is the command line of turn t for a CLI run once per turn, with
	// extra (the arguments after `--` on huddle's command line) added where
	// the CLI takes options.
	Args      func(t Turn, extra []string) []string
	newStream func(cwd string) stream
	// newDriver, when set, runs the whole session in one process (Claude
	// Code on its control protocol) instead of Args once per turn.
	newDriver func(r *runner) driver
}

// CLIs are the agents huddle drives, by name.
var CLIs = map[string]*CLI{
	"claude": {Name: "claude", BinEnv: "HUDDLE_CLAUDE_BIN", newStream: newClaudeStream, newDriver: newClaudeSession},
	"codex":  {Name: "codex", BinEnv: "HUDDLE_CODEX_BIN", Args: codexArgs, newStream: newCodexStream},
}

// Bin finds the CLI's binary: flag if given, else $BinEnv, else Name on
// PATH. The error names the binary and how to choose another.
func (c *CLI) Bin(flag string) (string, error) {
	bin, from := flag, "--bin"
	if bin == "" {
		bin, from = os.Getenv(c.BinEnv), "$"+c.BinEnv
	}
	if bin == "" {
		bin, from = c.Name, "PATH"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		why := "not found"
		if errors.Is(err, exec.ErrNotFound) && from == "PATH" {
			why = "not found on PATH"
		} else if errors.Is(err, os.ErrPermission) {
			why = "not executable"
		}
		return "", fmt.Errorf("%s binary %q (from %s): %s; install %s or name it with --bin or %s", c.Name, bin, from, why, c.Name, c.BinEnv)
	}
	return path, nil
}
