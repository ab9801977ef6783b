// Package permit decides an agent's use of a tool from a member's rules,
// written in Claude Code's permission rule language
// (https://docs.anthropic.com/en/docs/claude-code/iam, "Permission rules"):
// `Tool` covers every use of a tool, `Tool(specifier)` some. Bash rules
// match the command (`Bash(go test:*)` a prefix ending at a word,
// `Bash(make)` exactly, `*` anywhere else a wildcard) part by part of a
// compound command; Read and Edit rules are gitignore-style globs on the
// file (`//abs`, `~/home`, `/root-relative`, `./` or bare cwd-relative);
// WebFetch(domain:host) a fetch's host. Deny wins over ask, ask over allow.
package permit

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/bmatcuk/doublestar/v4"
)

// Verdict is what the rules say of one use of a tool.
type Verdict string

const (
	Allow Verdict = "allow"
	Ask   Verdict = "ask"
	Deny  Verdict = "deny"
)

// Use is one use of a tool an agent asks for.
type Use struct {
	Tool  string          // Claude Code's tool name: Bash, Edit, Write, Read, WebFetch, …
	Input json.RawMessage // the tool's input object, as the agent sent it
	Cwd   string          // the agent's working directory, the root of the rules' paths
	Home  string          // the home directory for ~ ("": the user's)
}

// input is the part of a tool's input the rules and drawings read.
type input struct {
	Command      string `json:"command"`
	Description  string `json:"description"`
	FilePath     string `json:"file_path"`
	NotebookPath string `json:"notebook_path"`
	Path         string `json:"path"`
	Pattern      string `json:"pattern"`
	OldString    string `json:"old_string"`
	NewString    string `json:"new_string"`
	Content      string `json:"content"`
	URL          string `json:"url"`
	Prompt       string `json:"prompt"`
	Query        string `json:"query"`
	Edits        []struct {
		OldString string `json:"old_string"`
		NewString string `json:"new_string"`
	} `json:"edits"`
}

func (u Use) input() input {
	var in input
	_ = json.Unmarshal(u.Input, &in) // input that is no object reads as empty
	return in
}

// ReadOnly reports whether tool changes nothing (reading, searching, the
// agent's own todo list): what a plan gate lets through.
func ReadOnly(tool string) bool { return readTools[tool] || lookTools[tool] }

// lookTools change nothing but are not covered by Read rules.
var lookTools = map[string]bool{"WebFetch": true, "WebSearch": true, "TodoWrite": true, "ToolSearch": true}

// editTools are covered by Edit rules, readTools by Read rules.
var (
	editTools = map[string]bool{"Edit": true, "MultiEdit": true, "Write": true, "NotebookEdit": true}
	readTools = map[string]bool{"Read": true, "Grep": true, "Glob": true, "LS": true, "NotebookRead": true}
)

// Rule is one parsed rule.
type Rule struct {
	tool    string
	spec    string
	hasSpec bool
}

var toolRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_\-]*$`) })

// Parse reads one rule: Tool or Tool(specifier).
func Parse(s string) (Rule, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return Rule{}, fmt.Errorf("rule %q: empty", s)
	}
	name, spec, has := strings.Cut(t, "(")
	if has {
		if !strings.HasSuffix(spec, ")") {
			return Rule{}, fmt.Errorf("rule %q: no closing parenthesis", s)
		}
		spec = strings.TrimSuffix(spec, ")")
		if strings.TrimSpace(spec) == "" {
			return Rule{}, fmt.Errorf("rule %q: empty specifier (write %s alone for every use)", s, name)
		}
	} else if strings.Contains(t, ")") {
		return Rule{}, fmt.Errorf("rule %q: no opening parenthesis", s)
	}
	if !toolRE().MatchString(name) {
		return Rule{}, fmt.Errorf("rule %q: %q is not a tool name", s, name)
	}
	return Rule{tool: name, spec: spec, hasSpec: has}, nil
}

// String is the rule as written, canonically.
func (r Rule) String() string {
	if !r.hasSpec {
		return r.tool
	}
	return r.tool + "(" + r.spec + ")"
}

// Tool is the tool the rule names.
func (r Rule) Tool() string { return r.tool }

// covers reports whether r names u's tool: itself, every editing tool for
// Edit, every reading tool for Read, an MCP server's tools for mcp__server.
func (r Rule) covers(tool string) bool {
	switch {
	case r.tool == tool:
		return true
	case r.tool == "Edit" && editTools[tool]:
		return true
	case r.tool == "Read" && readTools[tool]:
		return true
	case strings.HasPrefix(r.tool, "mcp__") && strings.Count(r.tool, "__") == 1 && strings.HasPrefix(tool, r.tool+"__"):
		return !r.hasSpec
	}
	return false
}

// Match reports whether r covers u: for Bash, any part of the command.
func (r Rule) Match(u Use) bool {
	if !r.covers(u.Tool) {
		return false
	}
	if !r.hasSpec {
		return true
	}
	in := u.input()
	switch {
	case u.Tool == "Bash":
		if r.matchCommand(in.Command) {
			return true
		}
		parts, _ := splitCommand(in.Command)
		for _, p := range parts {
			if r.matchCommand(p) {
				return true
			}
		}
		return false
	case editTools[u.Tool] || readTools[u.Tool]:
		return r.matchPath(u, filePath(in))
	case u.Tool == "WebFetch":
		return r.matchDomain(in.URL)
	}
	return r.spec == string(u.Input)
}

// matchCommand matches one simple command.
func (r Rule) matchCommand(cmd string) bool {
	cmd = strings.Join(strings.Fields(cmd), " ")
	spec := strings.TrimSpace(r.spec)
	if prefix, ok := strings.CutSuffix(spec, ":*"); ok {
		return cmd == prefix || strings.HasPrefix(cmd, prefix+" ")
	}
	if strings.Contains(spec, "*") {
		re := "^" + strings.ReplaceAll(regexp.QuoteMeta(spec), `\*`, ".*") + "$"
		ok, _ := regexp.MatchString(re, cmd)
		return ok
	}
	return cmd == spec
}

// matchPath matches a file against a path glob.
func (r Rule) matchPath(u Use, file string) bool {
	if file == "" {
		return false
	}
	abs := absPath(u.Cwd, file)
	pat := r.spec
	home := u.Home
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	switch {
	case strings.HasPrefix(pat, "//"):
		pat = pat[1:]
	case strings.HasPrefix(pat, "~/"):
		pat = filepath.Join(home, pat[2:])
	case strings.HasPrefix(pat, "/"):
		pat = filepath.Join(u.Cwd, pat[1:])
	default:
		pat = filepath.Join(u.Cwd, strings.TrimPrefix(pat, "./"))
	}
	if strings.HasSuffix(r.spec, "/") {
		pat += "/**"
	}
	ok, _ := doublestar.Match(filepath.ToSlash(pat), filepath.ToSlash(abs))
	return ok
}

// matchDomain matches a URL's host against domain:HOST.
func (r Rule) matchDomain(raw string) bool {
	host, ok := strings.CutPrefix(r.spec, "domain:")
	if !ok {
		return false
	}
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return false
	}
	h := strings.ToLower(u.Hostname())
	host = strings.ToLower(host)
	return h == host || strings.HasSuffix(h, "."+host)
}

// Rules is a member's "permissions" in team.json.
type Rules struct {
	Allow []string `json:"allow,omitempty"`
	Ask   []string `json:"ask,omitempty"`
	Deny  []string `json:"deny,omitempty"`
}

// Validate checks that every rule parses.
func (rs Rules) Validate() error {
	for _, l := range []struct {
		name  string
		rules []string
	}{{"allow", rs.Allow}, {"ask", rs.Ask}, {"deny", rs.Deny}} {
		for _, s := range l.rules {
			if _, err := Parse(s); err != nil {
				return fmt.Errorf("%s: %v", l.name, err)
			}
		}
	}
	return nil
}

// Decide is what the rules say of u, and the rule that says it: deny
// wins, then ask, then allow; no rule: Ask and "". An allow rule allows a
// compound command only when every part is allowed, and never one that
// substitutes a command or redirects.
func (rs Rules) Decide(u Use) (Verdict, string) {
	if r, ok := first(rs.Deny, u); ok {
		return Deny, r
	}
	if r, ok := first(rs.Ask, u); ok {
		return Ask, r
	}
	if u.Tool != "Bash" {
		if r, ok := first(rs.Allow, u); ok {
			return Allow, r
		}
		return Ask, ""
	}
	cmd := u.input().Command
	for _, s := range rs.Allow {
		// A rule naming the whole command exactly allows it, operators
		// and all: the person wrote that very command.
		if r, err := Parse(s); err == nil && r.covers("Bash") && r.hasSpec && !strings.Contains(r.spec, "*") && r.matchCommand(cmd) {
			return Allow, r.String()
		}
	}
	parts, plain := splitCommand(cmd)
	if !plain || len(parts) == 0 {
		return Ask, ""
	}
	var by []string
	for _, p := range parts {
		one := u
		one.Input, _ = json.Marshal(map[string]string{"command": p})
		r, ok := first(rs.Allow, one)
		if !ok {
			return Ask, ""
		}
		if !slices.Contains(by, r) {
			by = append(by, r)
		}
	}
	return Allow, strings.Join(by, ", ")
}

func first(rules []string, u Use) (string, bool) {
	for _, s := range rules {
		r, err := Parse(s)
		if err == nil && r.Match(u) {
			return r.String(), true
		}
	}
	return "", false
}

// splitCommand cuts a shell command into its simple commands at &&, ||,
// ;, |, & and newlines outside quotes; plain is false when it substitutes
// a command or redirects (outside single quotes), which no allow rule
// allows.
func splitCommand(cmd string) (parts []string, plain bool) {
	plain = true
	var cur strings.Builder
	flush := func() {
		if p := strings.TrimSpace(cur.String()); p != "" {
			parts = append(parts, p)
		}
		cur.Reset()
	}
	var quote byte
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			}
			cur.WriteByte(c)
			continue
		case c == '\\' && i+1 < len(cmd):
			cur.WriteByte(c)
			cur.WriteByte(cmd[i+1])
			i++
			continue
		case c == '`' || (c == '$' && i+1 < len(cmd) && cmd[i+1] == '('):
			plain = false
		case quote == '"':
			if c == '"' {
				quote = 0
			}
			cur.WriteByte(c)
			continue
		case c == '\'' || c == '"':
			quote = c
		case c == '>' || c == '<':
			plain = false
		case c == ';' || c == '\n' || c == '|' || c == '&':
			flush()
			if i+1 < len(cmd) && (cmd[i+1] == c) && (c == '|' || c == '&') {
				i++
			}
			continue
		}
		cur.WriteByte(c)
	}
	if quote != 0 {
		plain = false
	}
	flush()
	return parts, plain
}

func filePath(in input) string {
	for _, p := range []string{in.FilePath, in.NotebookPath, in.Path} {
		if p != "" {
			return p
		}
	}
	return ""
}

// absPath is file made absolute against cwd and cleaned, so that ".."
// cannot walk out of what a rule names.
func absPath(cwd, file string) string {
	if !filepath.IsAbs(file) {
		file = filepath.Join(cwd, file)
	}
	return filepath.Clean(file)
}

// relPath shows file relative to cwd when it lies inside it.
func relPath(cwd, file string) string {
	if cwd == "" || file == "" {
		return file
	}
	abs := absPath(cwd, file)
	if rel, err := filepath.Rel(cwd, abs); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return abs
}
