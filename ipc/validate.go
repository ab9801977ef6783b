package ipc

// The IPC checks of Puruto's validate.py, with huddle's additions. A Puruto
// repo keeps .puruto-ipc.json, the /call skill and a runtime together; the
// validator says, finding by finding, what is missing or of the wrong type.
//
// Which runtime counts: Puruto's scaffold ships ipc.py and invoker.py; a repo
// made by `huddle init --ipc` has neither, because its /call skill runs
// `huddle call`. So a repo has a runtime when ipc.py and invoker.py are both
// there, or when its SKILL.md mentions `huddle call`.
//
// A team directory (team.json) is checked by the CLI, which combines these
// checks with package team's: ipc sits below team and cannot read team.json.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Levels of a finding.
const (
	LevelError   = "error"
	LevelWarning = "warning"
)

// Kinds of validated path.
const (
	KindPuruto = "puruto" // a repo directory
	KindTeam   = "team"   // a huddle team directory (has team.json)
	KindFile   = "file"   // an IPC config file
)

// Finding codes. The first six are validate.py's; the rest are huddle's.
const (
	CodeInvalidConfig  = "invalid-ipc-config"      // error: not a JSON object
	CodeInvalidType    = "ipc-config-invalid-type" // error: a key of the wrong type
	CodeMissingKey     = "ipc-config-missing-key"  // warning: a recommended key is absent
	CodeMissingSkill   = "missing-ipc-skill"       // error: no .claude/skills/call/SKILL.md
	CodeMissingRuntime = "missing-ipc-runtime"     // error: no ipc.py + invoker.py, no `huddle call`
	CodeMissingConfig  = "missing-ipc-config"      // warning: a Puruto repo without .puruto-ipc.json

	CodeInvalidValue   = "ipc-config-invalid-value" // error: a value huddle refuses to load (max_hops < 0, …)
	CodeConfigNotFound = "ipc-config-not-found"     // error: a config named (PATH, a member's ipc) is not there
	CodeEmptyAllowlist = "ipc-empty-allowlist"      // warning: allowed_targets is empty: every call is denied
	CodeUnknownTarget  = "unknown-ipc-target"       // warning: an allowed target is not a member of the team
	CodeInvalidTeam    = "invalid-team"             // error: team.json does not load
)

// Files a Puruto repo keeps with its .puruto-ipc.json.
var (
	SkillPath    = filepath.Join(".claude", "skills", "call", "SKILL.md")
	RuntimeFiles = []string{"ipc.py", "invoker.py"}
)

// huddleRuntime is what a /call skill says when huddle is its runtime.
const huddleRuntime = "huddle call"

// Finding is one thing the validator found. Path is relative to the path
// validated (to a file's directory when a file was validated).
type Finding struct {
	Level   string `json:"level"`
	Code    string `json:"code"`
	Path    string `json:"path"`
	Message string `json:"message"`
}

// Report is the validator's answer for one path; OK means no errors.
type Report struct {
	Path     string    `json:"path"`
	Kind     string    `json:"kind"`
	OK       bool      `json:"ok"`
	Errors   int       `json:"errors"`
	Warnings int       `json:"warnings"`
	Findings []Finding `json:"findings"`
}

// NewReport counts findings into a report.
func NewReport(path, kind string, findings []Finding) Report {
	r := Report{Path: path, Kind: kind, Findings: findings}
	if r.Findings == nil {
		r.Findings = []Finding{}
	}
	for _, f := range r.Findings {
		if f.Level == LevelError {
			r.Errors++
		} else {
			r.Warnings++
		}
	}
	r.OK = r.Errors == 0
	return r
}

// Validate checks path: a directory as a Puruto repo (kind puruto), a file
// as an IPC config (kind file). A file named .puruto-ipc.json is a repo's
// config, so the skill and runtime beside it are checked too; a file by any
// other name is a policy huddle loads itself, checked alone.
func Validate(path string) Report {
	info, err := os.Stat(path)
	if err != nil {
		return NewReport(path, KindFile, []Finding{notFound(filepath.Base(path), err)})
	}
	if info.IsDir() {
		fs := ValidateDir(path, "")
		if len(fs) == 0 && !exists(filepath.Join(path, ConfigFile)) && !isDir(filepath.Join(path, ".claude")) {
			fs = append(fs, Finding{LevelWarning, CodeMissingConfig, ConfigFile,
				"no .puruto-ipc.json and no .claude/: nothing to check (is this a Puruto repo?)"})
		}
		return NewReport(path, KindPuruto, fs)
	}
	fs := ValidateConfig(path, filepath.Base(path))
	if filepath.Base(path) == ConfigFile {
		fs = append(fs, ValidateCompanions(filepath.Dir(path), "")...)
	}
	return NewReport(path, KindFile, fs)
}

// ValidateDir checks the IPC of a Puruto repo in dir: its .puruto-ipc.json
// and the files kept with it; without one, a repo (it has .claude/) gets a
// warning and any other directory nothing. rel is dir as findings name it
// ("" for the validated path itself).
func ValidateDir(dir, rel string) []Finding {
	cfg := filepath.Join(dir, ConfigFile)
	if !exists(cfg) {
		if isDir(filepath.Join(dir, ".claude")) {
			return []Finding{{LevelWarning, CodeMissingConfig, join(rel, ConfigFile),
				"a Puruto repo without .puruto-ipc.json: it cannot delegate (write one with 'huddle init --ipc')"}}
		}
		return nil
	}
	return append(ValidateConfig(cfg, join(rel, ConfigFile)), ValidateCompanions(dir, rel)...)
}

// ValidateCompanions checks that the /call skill and a runtime are in dir,
// next to its .puruto-ipc.json. rel is dir as findings name it.
func ValidateCompanions(dir, rel string) []Finding {
	var fs []Finding
	skill, err := readCapped(filepath.Join(dir, SkillPath))
	if err != nil {
		msg := "the /call skill is missing; it is kept with .puruto-ipc.json"
		if !errors.Is(err, os.ErrNotExist) {
			msg = "the /call skill cannot be read: " + short(err)
		}
		fs = append(fs, Finding{LevelError, CodeMissingSkill, join(rel, SkillPath), msg})
	}
	var missing []string
	for _, f := range RuntimeFiles {
		if !exists(filepath.Join(dir, f)) {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 && !bytes.Contains(skill, []byte(huddleRuntime)) {
		what := strings.Join(missing, " and ")
		verb := "is"
		if len(missing) > 1 {
			verb = "are"
		}
		why := "the /call skill does not run `huddle call`"
		if err != nil {
			why = "there is no /call skill running `huddle call`"
		}
		fs = append(fs, Finding{LevelError, CodeMissingRuntime, join(rel, missing[0]),
			fmt.Sprintf("no IPC runtime: %s %s missing and %s", what, verb, why)})
	}
	return fs
}

// ValidateConfig checks the IPC config file at path; rel is the path as
// findings name it. Whatever LoadPolicy refuses is an error here.
func ValidateConfig(path, rel string) []Finding {
	b, err := readCapped(path)
	if errors.Is(err, os.ErrNotExist) {
		return []Finding{notFound(rel, err)}
	}
	if err != nil {
		return []Finding{{LevelError, CodeInvalidConfig, rel, "cannot be read: " + short(err)}}
	}
	return checkConfig(b, rel)
}

// checkConfig checks the content of an IPC config.
func checkConfig(b []byte, rel string) []Finding {
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return []Finding{{LevelError, CodeInvalidConfig, rel, "not valid JSON: " + syntaxError(b, err)}}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return []Finding{{LevelError, CodeInvalidConfig, rel, "not valid JSON: more after the object"}}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return []Finding{{LevelError, CodeInvalidConfig, rel, "not a JSON object: it is " + jsonKind(v)}}
	}
	var fs []Finding
	bad := func(code, format string, a ...any) {
		fs = append(fs, Finding{LevelError, code, rel, fmt.Sprintf(format, a...)})
	}
	for _, key := range configKeys {
		val, ok := obj[key]
		if !ok {
			msg := key + " is missing"
			switch key {
			case "enabled":
				msg += " (taken as true)"
			case "max_hops":
				msg += fmt.Sprintf(" (taken as %d)", DefaultMaxHops)
			case "default_timeout_sec":
				msg += fmt.Sprintf(" (taken as %d)", DefaultTimeoutSec)
			case "allowed_targets":
				msg += ": every call is denied"
			case "allowed_actions":
				msg += " (any action of an allowed target)"
			}
			fs = append(fs, Finding{LevelWarning, CodeMissingKey, rel, msg})
			continue
		}
		if where, got, wanted := badType(key, val); where != "" {
			bad(CodeInvalidType, "%s is %s; %s", where, got, wanted)
			continue
		}
		switch key {
		case "max_hops":
			if n, _ := val.(json.Number).Int64(); n < 0 {
				bad(CodeInvalidValue, "max_hops is %d; it must not be negative", n)
			}
		case "default_timeout_sec":
			if n, _ := val.(json.Number).Int64(); n <= 0 {
				bad(CodeInvalidValue, "default_timeout_sec is %d; it must be positive", n)
			}
		case "allowed_targets":
			if len(val.([]any)) == 0 {
				fs = append(fs, Finding{LevelWarning, CodeEmptyAllowlist, rel,
					"allowed_targets is empty: every call is denied"})
			}
		}
	}
	return fs
}

// configKeys are the keys of .puruto-ipc.json, in the order they are checked.
var configKeys = []string{"enabled", "owner", "max_hops", "default_timeout_sec", "allowed_targets", "allowed_actions"}

// badType says where val, the value of key, is not of key's type (the key,
// or the element in it), what it is instead and what is wanted there; where
// is "" when it is fine. null is never fine: a key not wanted is left out.
func badType(key string, val any) (where, got, wanted string) {
	whole := func() (string, string, string) { return key, jsonKind(val), typeWanted(key) }
	switch key {
	case "enabled":
		if _, ok := val.(bool); !ok {
			return whole()
		}
	case "owner":
		if _, ok := val.(string); !ok {
			return whole()
		}
	case "max_hops", "default_timeout_sec":
		n, ok := val.(json.Number)
		if !ok {
			return whole()
		}
		if _, err := n.Int64(); err != nil {
			return key, "the number " + n.String(), typeWanted(key)
		}
	case "allowed_targets":
		list, ok := val.([]any)
		if !ok {
			return whole()
		}
		for i, e := range list {
			if _, ok := e.(string); !ok {
				return fmt.Sprintf("%s[%d]", key, i), jsonKind(e), "want a target name (a string)"
			}
		}
	case "allowed_actions":
		m, ok := val.(map[string]any)
		if !ok {
			return whole()
		}
		for _, target := range slices.Sorted(maps.Keys(m)) {
			list, ok := m[target].([]any)
			if !ok {
				return fmt.Sprintf("%s[%q]", key, target), jsonKind(m[target]), "want a list of actions"
			}
			for i, e := range list {
				if _, ok := e.(string); !ok {
					return fmt.Sprintf("%s[%q][%d]", key, target, i), jsonKind(e), "want an action name (a string)"
				}
			}
		}
	}
	return "", "", ""
}

// jsonKind names the JSON type of a decoded value.
func jsonKind(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// syntaxError says where in b a decoding error is, when it knows.
func syntaxError(b []byte, err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line := 1 + bytes.Count(b[:min(int(se.Offset), len(b))], []byte("\n"))
		return fmt.Sprintf("line %d: %v", line, err)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "it ends too early"
	}
	return err.Error()
}

func notFound(rel string, err error) Finding {
	return Finding{LevelError, CodeConfigNotFound, rel, "not found: " + short(err)}
}

// readCapped reads a file of at most 1 MiB; larger is an error, not a
// memory bill.
func readCapped(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 1<<20+1))
	if err != nil {
		return nil, err
	}
	if len(b) > 1<<20 {
		return nil, errors.New("larger than 1 MiB")
	}
	return b, nil
}

// short is an error without the path it repeats (the finding names it).
func short(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func isDir(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.IsDir()
}

// join is rel/name, or name when rel is the validated path itself.
func join(rel, name string) string {
	if rel == "" || rel == "." {
		return name
	}
	return filepath.Join(rel, name)
}
