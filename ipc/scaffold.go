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
description: Delegate a task to another agent (a Puruto or a huddle teammate) through huddle's policy-checked IPC. Use for /call TARGET ACTION "PROMPT", or when work belongs to another agent.
---

# /call — delegate to another agent

    /call TARGET ACTION "PROMPT"

for example:

    /call puruto-finanzas pagar_factura "Paga la factura #123 por 50 EUR"

## How

Run, from this repository's root (the directory that holds .puruto-ipc.json):

    huddle call --target TARGET --action ACTION --prompt "PROMPT"

huddle call reads ./.puruto-ipc.json (owner {{owner}}, the caller) and
enforces it before anything is sent:

- enabled must be true;
- TARGET must be in allowed_targets (an empty list denies every target);
- if allowed_actions names TARGET, ACTION must be in its list;
- the call's hop must be below max_hops;
- the call waits default_timeout_sec seconds unless --timeout SECONDS says
  otherwise.

The targets are the members of the huddle team in --dir (default $HUDDLE_DIR,
else .huddle); every call is recorded in that team's traces.jsonl.

huddle call makes the request_id and the correlation_id. When you were
invoked yourself (a request with correlation_id C at hop H), pass the chain
on: --correlation-id C --hop H+1. Never invent ids or lower the hop.

## What it prints

One JSON object on stdout: the request sent and the InvocationResult.

    {"request": {"request_id": "…", "correlation_id": "…", "caller": "{{owner}}",
                 "target": "…", "action": "…", "prompt": "…", "timeout_sec": 120, "hop": 0},
     "response": {"request_id": "…", "correlation_id": "…", "status": "ok",
                  "duration_ms": 824, "result": {"summary": "…"}}}

When the call failed, response.status is "error" and response.error is
{"code", "message", "details"}. Codes: TARGET_NOT_FOUND, DENIED
(details.reason: not_allowed_target, not_allowed_action, max_hops, disabled),
TIMEOUT, INVALID_RESPONSE, IPC_ERROR (e.g. no readable ./.puruto-ipc.json).

## Exit codes

- 0: response.status is ok; use response.result.
- 1: response.status is error; tell the user the code and message. Do not
  retry a DENIED call: the fix is in .puruto-ipc.json, if the user agrees.
- 2: bad arguments (a flag missing or malformed); one line on stderr.

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
