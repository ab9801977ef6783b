package ipc

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"huddle/protocol"
)

// ScaffoldConfig is the .puruto-ipc.json of Puruto's template for owner:
// enabled, max_hops 2, default_timeout_sec 120, and empty allowlists, so
// nothing is allowed until someone says so.
func ScaffoldConfig(owner string) []byte {
	b, _ := json.MarshalIndent(struct {
		Enabled           bool                `json:"enabled"`
		Owner             string              `json:"owner"`
		MaxHops           int                 `json:"max_hops"`
		DefaultTimeoutSec int                 `json:"default_timeout_sec"`
		AllowedTargets    []string            `json:"allowed_targets"`
		AllowedActions    map[string][]string `json:"allowed_actions"`
	}{true, owner, DefaultMaxHops, DefaultTimeoutSec, []string{}, map[string][]string{}}, "", "  ")
	return append(b, '\n')
}

// ScaffoldSkill is the /call skill of a repo whose IPC runtime is huddle.
// It must mention `huddle call`: that is how the validator knows huddle is
// the runtime.
func ScaffoldSkill(owner string) []byte {
	return []byte(strings.ReplaceAll(skillTemplate, "{{owner}}", owner))
}

const skillTemplate = `---
name: call
description: Delegate a task to another agent (a Puruto or a huddle teammate) through huddle's policy-checked IPC. Use for "/call TARGET ACTION \"PROMPT\"", or when work belongs to another agent.
---

# /call — delegate to another agent

    /call TARGET ACTION "PROMPT"

for example:

    /call puruto-finanzas pagar_factura "Paga la factura #123 por 50 EUR"

## How

Run, from this repository's root (the directory that holds .puruto-ipc.json):

    huddle call --target TARGET --action ACTION --prompt "PROMPT"

huddle call reads ./.puruto-ipc.json (owner {{owner}}) and enforces it before
anything is sent:

- enabled must be true;
- TARGET must be in allowed_targets (an empty list denies every target);
- if allowed_actions names TARGET, ACTION must be in its list;
- the delegation depth must stay below max_hops;
- the call waits at most default_timeout_sec seconds.

huddle call makes the request_id and the correlation_id and records the call
in the team's traces; do not invent them.

## What it prints

One InvocationResult as JSON on stdout:

    {"request_id": "…", "correlation_id": "…", "status": "ok", "duration_ms": 824,
     "result": {"summary": "…"}}

or, when the call failed:

    {"request_id": "…", "correlation_id": "…", "status": "error", "duration_ms": 15,
     "error": {"code": "DENIED", "message": "…", "details": {"reason": "not_allowed_target"}}}

Error codes: TARGET_NOT_FOUND, DENIED (details.reason: not_allowed_target,
not_allowed_action, max_hops, disabled), TIMEOUT, INVALID_RESPONSE, IPC_ERROR.

## Exit codes

- 0: status ok; use result.
- 1: status error; tell the user the code and message, and do not retry a
  DENIED call: change .puruto-ipc.json instead, if the user agrees.
- 2: bad arguments (a flag is missing or malformed).

## Rules

- Never delegate to a target outside allowed_targets.
- Put no secrets in PROMPT; share sensitive data through a data agent.
- Check this setup with: huddle validate .
`

// Scaffold writes dir/.puruto-ipc.json and dir/.claude/skills/call/SKILL.md
// for owner, making dir if needed, and returns the paths written. It never
// overwrites: if either file exists, nothing is written.
func Scaffold(dir, owner string) ([]string, error) {
	if err := protocol.ValidateName(owner); err != nil {
		return nil, fmt.Errorf("owner: %w", err)
	}
	cfg, skill := filepath.Join(dir, ConfigFile), filepath.Join(dir, SkillPath)
	for _, p := range []string{cfg, skill} {
		if _, err := os.Lstat(p); err == nil {
			return nil, fmt.Errorf("%s already exists; not overwriting it", p)
		} else if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	if err := os.MkdirAll(filepath.Dir(skill), 0o755); err != nil {
		return nil, err
	}
	if err := writeNew(cfg, ScaffoldConfig(owner)); err != nil {
		return nil, err
	}
	if err := writeNew(skill, ScaffoldSkill(owner)); err != nil {
		os.Remove(cfg) // ours, just written: leave no half scaffold
		return nil, err
	}
	return []string{cfg, skill}, nil
}

// writeNew creates path with b; an existing file is an error, never
// overwritten.
func writeNew(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("%s already exists; not overwriting it", path)
		}
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	return f.Close()
}
