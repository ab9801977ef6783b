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

// CLI is what differs between the coding agents huddle drives: how its
// session runs (a driver of one long-lived process on the CLI's own
// protocol) and how its plan is put forward.
type CLI struct {
	Name      string // the command's name on PATH: claude, codex
	BinEnv    string // the variable that names its binary
	newDriver func(r *runner) driver
	// exitPlan: the CLI puts its plan forward with ExitPlanMode (Claude
	// Code), which the plan prompt names.
	exitPlan bool
}

// CLIs are the agents huddle drives, by name.
var CLIs = map[string]*CLI{
	"claude": {Name: "claude", BinEnv: "HUDDLE_CLAUDE_BIN", newDriver: newClaudeSession, exitPlan: true},
	"codex":  {Name: "codex", BinEnv: "HUDDLE_CODEX_BIN", newDriver: newCodexSession},
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
