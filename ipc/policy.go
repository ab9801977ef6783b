package ipc

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"huddle/protocol"
)

// ConfigFile is the name of a Puruto's IPC configuration.
const ConfigFile = ".puruto-ipc.json"

// Defaults of docs/ARCHITECTURE.md, "Invocation (Puruto IPC)"
const (
	DefaultMaxHops    = 2
	DefaultTimeoutSec = 120
)

// Policy is a caller's .puruto-ipc.json with the settled semantics of
// docs/ARCHITECTURE.md, "Invocation (Puruto IPC)"
type Policy struct {
	Enabled           bool
	Owner             string
	MaxHops           int
	DefaultTimeoutSec int
	AllowedTargets    []string
	// AllowedActions restricts only the targets it names.
	AllowedActions map[string][]string
}

// rawConfig is the file as written; pointers tell absent from zero.
type rawConfig struct {
	Enabled           *bool               `json:"enabled"`
	Owner             *string             `json:"owner"`
	MaxHops           *int                `json:"max_hops"`
	DefaultTimeoutSec *int                `json:"default_timeout_sec"`
	AllowedTargets    []string            `json:"allowed_targets"`
	AllowedActions    map[string][]string `json:"allowed_actions"`
}

// LoadPolicy reads a .puruto-ipc.json. A file that is missing, unreadable,
// not JSON or of the wrong types is an error that says which.
func LoadPolicy(path string) (*Policy, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("ipc config: %w", err)
	}
	return ParsePolicy(b)
}

// ParsePolicy decodes the content of a .puruto-ipc.json.
func ParsePolicy(b []byte) (*Policy, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return nil, fmt.Errorf("ipc config: not a JSON object: %v", err)
	}
	var raw rawConfig
	for key, dst := range map[string]any{
		"enabled": &raw.Enabled, "owner": &raw.Owner, "max_hops": &raw.MaxHops,
		"default_timeout_sec": &raw.DefaultTimeoutSec, "allowed_targets": &raw.AllowedTargets,
		"allowed_actions": &raw.AllowedActions,
	} {
		v, ok := fields[key]
		if !ok || string(v) == "null" {
			continue
		}
		if err := json.Unmarshal(v, dst); err != nil {
			return nil, fmt.Errorf("ipc config: %s: %s", key, typeWanted(key))
		}
	}
	p := &Policy{Enabled: true, MaxHops: DefaultMaxHops, DefaultTimeoutSec: DefaultTimeoutSec,
		AllowedTargets: raw.AllowedTargets, AllowedActions: raw.AllowedActions}
	if raw.Enabled != nil {
		p.Enabled = *raw.Enabled
	}
	if raw.Owner != nil {
		p.Owner = *raw.Owner
	}
	if raw.MaxHops != nil {
		if *raw.MaxHops < 0 {
			return nil, errors.New("ipc config: max_hops: must not be negative")
		}
		p.MaxHops = *raw.MaxHops
	}
	if raw.DefaultTimeoutSec != nil {
		if *raw.DefaultTimeoutSec <= 0 {
			return nil, errors.New("ipc config: default_timeout_sec: must be positive")
		}
		p.DefaultTimeoutSec = *raw.DefaultTimeoutSec
	}
	return p, nil
}

// typeWanted says what type a key of .puruto-ipc.json takes.
func typeWanted(key string) string {
	switch key {
	case "enabled":
		return "want true or false"
	case "owner":
		return "want a string"
	case "max_hops", "default_timeout_sec":
		return "want a whole number"
	case "allowed_targets":
		return "want a list of target names"
	case "allowed_actions":
		return "want an object mapping a target to a list of actions"
	}
	return "wrong type"
}

// Denial says why a call is refused: details.reason of a DENIED result.
type Denial struct {
	Reason  string `json:"reason"`
	Message string `json:"-"`
}

// Check applies the policy to a call to target.action at hop, in the order
// docs/ARCHITECTURE.md, "Invocation (Puruto IPC)" lists: disabled, hops, target, action. nil means allowed.
func (p *Policy) Check(target, action string, hop int) *Denial {
	switch {
	case !p.Enabled:
		return &Denial{protocol.DeniedDisabled, "DENIED: IPC is disabled (enabled: false)"}
	case hop >= p.MaxHops:
		return &Denial{protocol.DeniedMaxHops, fmt.Sprintf("DENIED: hop %d is not below max_hops %d", hop, p.MaxHops)}
	case !slices.Contains(p.AllowedTargets, target):
		return &Denial{protocol.DeniedNotAllowedTarget, fmt.Sprintf("DENIED: target `%s` is not in allowed_targets", target)}
	}
	if actions, ok := p.AllowedActions[target]; ok && !slices.Contains(actions, action) {
		return &Denial{protocol.DeniedNotAllowedAction, fmt.Sprintf("DENIED: action `%s` of `%s` is not in allowed_actions", action, target)}
	}
	return nil
}

// Timeout is the deadline of a call that asked for timeoutSec (0: the
// policy's default).
func (p *Policy) Timeout(timeoutSec int) time.Duration {
	if timeoutSec <= 0 {
		timeoutSec = p.DefaultTimeoutSec
	}
	return time.Duration(timeoutSec) * time.Second
}
