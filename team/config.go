package team

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"huddle/llm/record"
	"huddle/permit"
	"huddle/protocol"
	"huddle/teamdir"
)

// Runtime kinds of a member.
const (
	RuntimeScript   = "script"
	RuntimeExec     = "exec"
	RuntimeExternal = "external"
	RuntimeLLM      = "llm"
)

// Providers of an llm member.
const (
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
)

// LLMTools are the work tools an llm member may enable: package llm's.
var LLMTools = record.KnownTools

// Duration is a time.Duration written in JSON as "90s", "2m", "10m".
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return errors.New(`want a duration such as "90s" or "10m"`)
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return fmt.Errorf("%q is not a duration such as \"90s\" or \"10m\"", s)
	}
	*d = Duration(v)
	return nil
}

// Team is team.json.
type Team struct {
	// Schema names the JSON Schema an editor checks the file against
	// (docs/team.schema.json); huddle ignores it.
	Schema   string       `json:"$schema,omitempty"`
	Name     string       `json:"name" jsonschema:"required"`
	Members  []MemberSpec `json:"members"`
	Settings Settings     `json:"settings"`
	// Desk marks a desk (desk.go): its members are the agent sessions
	// that ask through a hook, and team.json need list none.
	Desk bool `json:"desk,omitempty"`
	// WorkspaceDefaults is team.json's "workspace": where every coding
	// teammate works, unless its own "workspace" says otherwise
	// (workspace.go).
	WorkspaceDefaults *WorkspaceSpec `json:"workspace,omitempty"`
}

// Settings are team-wide deadlines.
type Settings struct {
	ApprovalDeadline Duration `json:"approval_deadline,omitempty"`
	ShutdownDeadline Duration `json:"shutdown_deadline,omitempty"`
	// PermissionDeadline is how long an agent's permission request waits
	// for the lead before it is denied (default: the approval deadline).
	PermissionDeadline Duration `json:"permission_deadline,omitempty"`
	// ReviewDeadline is how long a coding teammate's change waits for the
	// lead's review before it expires (default 24h): nothing is merged.
	ReviewDeadline Duration `json:"review_deadline,omitempty"`
}

// DefaultReviewDeadline is how long a review waits by default.
const DefaultReviewDeadline = 24 * time.Hour

// Review returns the review deadline.
func (s Settings) Review() time.Duration {
	if s.ReviewDeadline == 0 {
		return DefaultReviewDeadline
	}
	return time.Duration(s.ReviewDeadline)
}

// Defaults for Settings: a plan waits 10 min for the lead, a shutdown 2 min.
const (
	DefaultApprovalDeadline = 10 * time.Minute
	DefaultShutdownDeadline = 2 * time.Minute
)

// Approval returns the plan approval deadline.
func (s Settings) Approval() time.Duration {
	if s.ApprovalDeadline == 0 {
		return DefaultApprovalDeadline
	}
	return time.Duration(s.ApprovalDeadline)
}

// Permission returns the permission answer deadline.
func (s Settings) Permission() time.Duration {
	if s.PermissionDeadline == 0 {
		return s.Approval()
	}
	return time.Duration(s.PermissionDeadline)
}

// Shutdown returns the shutdown answer deadline.
func (s Settings) Shutdown() time.Duration {
	if s.ShutdownDeadline == 0 {
		return DefaultShutdownDeadline
	}
	return time.Duration(s.ShutdownDeadline)
}

// MemberSpec is one member of team.json.
type MemberSpec struct {
	Name    string      `json:"name" jsonschema:"required"`
	Role    string      `json:"role"`
	Runtime RuntimeSpec `json:"runtime"`
	Dir     string      `json:"dir,omitempty"`
	// IPC names the member's .puruto-ipc.json (relative to the team
	// directory); without it, Dir/.puruto-ipc.json.
	IPC string `json:"ipc,omitempty"`
	// Actions are what a scripted member answers when invoked.
	Actions map[string]ActionSpec `json:"actions,omitempty"`
	// Target, when set, is where invocations of this member go instead of
	// its inbox (an external command); such a member needs no runtime.
	Target *TargetSpec `json:"target,omitempty"`
	// Permissions decide an exec member's permission requests without
	// asking, in Claude Code's rule language: deny wins, then ask, then
	// allow; what no rule covers is asked.
	Permissions *permit.Rules `json:"permissions,omitempty"`
	// Workspace overrides the team's workspace for this member
	// (workspace.go).
	Workspace *WorkspaceSpec `json:"workspace,omitempty"`
}

// ActionSpec is how a scripted member answers one action: a reply summary,
// after an optional delay, with an optional onward call whose answer is
// folded into the reply.
type ActionSpec struct {
	Reply string    `json:"reply"`
	Delay Duration  `json:"delay,omitempty"`
	Call  *CallSpec `json:"call,omitempty"`
}

// CallSpec is a call a member makes: a script step's or an action's onward
// call.
type CallSpec struct {
	Target     string `json:"target"`
	Action     string `json:"action"`
	Prompt     string `json:"prompt,omitempty"`
	TimeoutSec int    `json:"timeout_sec,omitempty"`
}

// Target kinds.
const (
	TargetExec = "exec"
	TargetHTTP = "http"
)

// The protocols of an http target.
const (
	ProtocolBlueprint = "blueprint"
	ProtocolA2A       = "a2a"
)

// TargetSpec is where invocations of a member go: an external command
// (exec), or an agent over HTTP (http): a skill of another huddle by the
// Blueprint (its url and skill), or with protocol "a2a" any A2A v1.0 agent
// (its url, whose card is at /.well-known/agent-card.json, and, for a
// huddle or any agent that reads it, the skill sent as metadata
// skill_id); the API key is read from the environment variable
// api_key_env.
type TargetSpec struct {
	Kind    string   `json:"kind"`
	Command []string `json:"command,omitempty"`
	URL     string   `json:"url,omitempty"`
	// Protocol is an http target's: blueprint (the default) or a2a.
	Protocol  string `json:"protocol,omitempty"`
	Skill     string `json:"skill,omitempty"`
	APIKeyEnv string `json:"api_key_env,omitempty"`
}

// PolicyPath is where the member's .puruto-ipc.json is, or "" when team.json
// names none.
func (m MemberSpec) PolicyPath(teamDir string) string {
	rel := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(teamDir, p)
	}
	switch {
	case m.IPC != "":
		return rel(m.IPC)
	case m.Dir != "":
		return filepath.Join(rel(m.Dir), ".puruto-ipc.json")
	}
	return ""
}

// RuntimeSpec says how a member runs.
type RuntimeSpec struct {
	Kind string `json:"kind" jsonschema:"required,enum=script,enum=exec,enum=external,enum=llm"`
	// script
	Steps      []Step `json:"steps,omitempty"`
	OnShutdown string `json:"on_shutdown,omitempty" jsonschema:"enum=approve,enum=reject_while_working"` // approve | reject_while_working
	Seed       int64  `json:"seed,omitempty"`
	// exec
	Command []string `json:"command,omitempty"`
	// llm
	Provider  string   `json:"provider,omitempty" jsonschema:"enum=openai,enum=anthropic"` // openai | anthropic
	BaseURL   string   `json:"base_url,omitempty"`
	Model     string   `json:"model,omitempty"`
	APIKeyEnv string   `json:"api_key_env,omitempty"` // the NAME of the variable; its value is never stored
	Prompt    string   `json:"prompt,omitempty"`
	System    string   `json:"system,omitempty"`
	Tools     []string `json:"tools,omitempty"`
	// PlanRequired gates write_file, edit_file and bash on an approved
	// plan; unset, it is on for a member with any work tool (PlanGate).
	PlanRequired *bool `json:"plan_required,omitempty"`
	// Sandbox is "on" (or unset): bash runs confined to the member's dir,
	// refused where the kernel offers no Landlock; "off" runs it as
	// huddle's user may (docs/llm-teams.md).
	Sandbox   string    `json:"sandbox,omitempty"`
	MaxTurns  int       `json:"max_turns,omitempty"`
	MaxTokens int64     `json:"max_tokens,omitempty"`
	Price     *LLMPrice `json:"price,omitempty"`
}

// LLMPrice is what a model costs, in dollars per million tokens.
type LLMPrice struct {
	InputPerMTok  float64 `json:"input_per_mtok"`
	OutputPerMTok float64 `json:"output_per_mtok"`
}

// Cost is the price of in and out tokens.
func (p *LLMPrice) Cost(in, out int64) float64 {
	if p == nil {
		return 0
	}
	return (float64(in)*p.InputPerMTok + float64(out)*p.OutputPerMTok) / 1e6
}

// Sandbox settings of an llm member.
const (
	SandboxOn  = "on"
	SandboxOff = "off"
)

// PlanGate says whether an llm member's work waits for an approved plan:
// as team.json says, or, unset, whenever it has a work tool.
func (r RuntimeSpec) PlanGate() bool {
	if r.PlanRequired != nil {
		return *r.PlanRequired
	}
	return len(r.Tools) > 0
}

// Shutdown policies of a scripted teammate.
const (
	OnShutdownApprove            = "approve"
	OnShutdownRejectWhileWorking = "reject_while_working"
)

// Step is one step of a scripted teammate.
type Step struct {
	Plan string `json:"plan,omitempty"`

	Work     Duration `json:"work,omitempty"`
	Activity string   `json:"activity,omitempty"`

	Say  string `json:"say,omitempty"` // recipient; "*" broadcasts
	Text string `json:"text,omitempty"`

	Call       string `json:"call,omitempty"` // target
	Action     string `json:"action,omitempty"`
	Prompt     string `json:"prompt,omitempty"`
	TimeoutSec int    `json:"timeout_sec,omitempty"`

	Wait Duration `json:"wait,omitempty"`

	Loop bool `json:"loop,omitempty"` // start the steps again
}

// Kind names what a step does; exactly one of its fields must be set.
func (s Step) Kind() (string, error) {
	var kinds []string
	if s.Plan != "" {
		kinds = append(kinds, "plan")
	}
	if s.Work != 0 {
		kinds = append(kinds, "work")
	}
	if s.Say != "" {
		kinds = append(kinds, "say")
	}
	if s.Call != "" {
		kinds = append(kinds, "call")
	}
	if s.Wait != 0 {
		kinds = append(kinds, "wait")
	}
	if s.Loop {
		kinds = append(kinds, "loop")
	}
	switch len(kinds) {
	case 0:
		return "", errors.New("step does nothing: set one of plan, work, say, call, wait, loop")
	case 1:
		return kinds[0], nil
	}
	return "", fmt.Errorf("step sets %v: one kind per step", kinds)
}

// Path of team.json under a team directory.
func ConfigPath(dir string) string { return teamdir.ConfigPath(dir) }

// Load reads and validates dir/team.json.
func Load(dir string) (*Team, error) {
	b, err := os.ReadFile(ConfigPath(dir))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no team in %s (run 'huddle init --dir %s')", dir, dir)
		}
		return nil, fmt.Errorf("team: %w", err)
	}
	return Parse(b)
}

// Parse decodes and validates team.json content.
func Parse(b []byte) (*Team, error) {
	t, ok := decodeStrict(b)
	if !ok {
		// Something is wrong: the slow walk names it, with its line:column
		// and the key meant.
		if err := checkKeys(b); err != nil {
			return nil, fmt.Errorf("team.json: %w", err)
		}
		t = Team{}
		if err := json.Unmarshal(b, &t); err != nil {
			return nil, fmt.Errorf("team.json: %v", locate(b, err))
		}
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return &t, nil
}

// decodeStrict decodes b in one pass, refusing a key no field takes and
// anything after the object: ok means checkKeys would find nothing wrong
// and json.Unmarshal would decode the same Team. It spares a good file
// the key walk, which costs ten times the decoding in a team of
// thousands of members.
func decodeStrict(b []byte) (t Team, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return Team{}, false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Team{}, false
	}
	return t, true
}

// locate says which member and field a decoding error of team.json is in:
// encoding/json passes on a field's own UnmarshalJSON error (a bad duration)
// without saying where it was.
func locate(b []byte, err error) error {
	var raw struct {
		Settings json.RawMessage   `json:"settings"`
		Members  []json.RawMessage `json:"members"`
	}
	if json.Unmarshal(b, &raw) != nil {
		return err
	}
	if f, ferr := badField[Settings](raw.Settings); ferr != nil {
		return fmt.Errorf("settings.%s: %v", f, ferr)
	}
	for i, m := range raw.Members {
		var head struct {
			Name    string `json:"name"`
			Runtime struct {
				Steps []json.RawMessage `json:"steps"`
			} `json:"runtime"`
		}
		_ = json.Unmarshal(m, &head) // best effort: it only names the place
		where := fmt.Sprintf("members[%d]", i)
		if head.Name != "" {
			where = fmt.Sprintf("member %q", head.Name)
		}
		for j, s := range head.Runtime.Steps {
			if f, ferr := badField[Step](s); ferr != nil {
				return fmt.Errorf("%s: runtime.steps[%d].%s: %v", where, j, f, ferr)
			}
		}
		if f, ferr := badField[MemberSpec](m); ferr != nil {
			return fmt.Errorf("%s: %s: %v", where, f, ferr)
		}
	}
	return err
}

// badField decodes the JSON object raw into a T one field at a time and
// returns the first field that fails, with its error.
func badField[T any](raw json.RawMessage) (string, error) {
	var fields map[string]json.RawMessage
	// Not an object: no field to blame, so the caller's own error stands
	// (fields stays empty).
	_ = json.Unmarshal(raw, &fields)
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		one, _ := json.Marshal(map[string]json.RawMessage{k: fields[k]})
		var v T
		if err := json.Unmarshal(one, &v); err != nil {
			return k, err
		}
	}
	return "", nil
}

// Validate checks team.json; errors name the member and the field. Every
// member's name and runtime are checked before what members refer to.
func (t *Team) Validate() error {
	if t.Name == "" {
		return errors.New("team.json: name is required")
	}
	if len(t.Members) == 0 && !t.Desk {
		return errors.New("team.json: members: at least one member is required")
	}
	names, err := validateMembers(t.Members)
	if err != nil {
		return err
	}
	for _, m := range t.Members {
		where := fmt.Sprintf("team.json: member %q", m.Name)
		if err := checkSteps(where, m.Runtime.Steps, names); err != nil {
			return err
		}
		if err := checkActions(where, m.Actions); err != nil {
			return err
		}
		if err := checkTarget(where, m.Target); err != nil {
			return err
		}
		// Workspace looks the member up by name: asked only where it
		// matters, so a team of thousands validates in linear time.
		if m.Runtime.Kind == RuntimeLLM && len(m.Runtime.Tools) > 0 && m.Dir == "" && !t.hasWorktree(m.Name) {
			return fmt.Errorf("%s: dir is required for an llm member with work tools (they are confined to it), or a workspace with a worktree", where)
		}
		if m.Permissions != nil {
			if err := m.Permissions.Validate(); err != nil {
				return fmt.Errorf("%s: permissions: %v", where, err)
			}
		}
	}
	return t.checkWorkspaces()
}

func (t *Team) hasWorktree(member string) bool {
	_, ok := t.Workspace(".", member)
	return ok
}

// validateMembers checks every member's name (valid, not taken twice) and
// runtime, and returns the set of names.
func validateMembers(members []MemberSpec) (map[string]bool, error) {
	seen := map[string]bool{}
	for i, m := range members {
		where := fmt.Sprintf("team.json: members[%d]", i)
		if m.Name != "" {
			where = fmt.Sprintf("team.json: member %q", m.Name)
		}
		if err := protocol.ValidateMemberName(m.Name); err != nil {
			return nil, fmt.Errorf("%s: name: %v", where, err)
		}
		if seen[m.Name] {
			return nil, fmt.Errorf("%s: name: duplicate member", where)
		}
		seen[m.Name] = true
		if err := checkRuntime(where, m); err != nil {
			return nil, err
		}
	}
	return seen, nil
}

// checkRuntime checks how a member runs: a script's steps and shutdown
// policy, an exec member's command; only a target-only member may have no
// runtime.
func checkRuntime(where string, m MemberSpec) error {
	if m.Runtime.Sandbox != "" && m.Runtime.Kind != RuntimeLLM {
		return fmt.Errorf("%s: runtime.sandbox: only an llm member's bash runs in huddle's sandbox", where)
	}
	switch m.Runtime.Kind {
	case RuntimeScript:
		return checkScript(where, m.Runtime)
	case RuntimeExec:
		if len(m.Runtime.Command) == 0 || m.Runtime.Command[0] == "" {
			return fmt.Errorf("%s: runtime.command is required for an exec member", where)
		}
	case RuntimeLLM:
		return checkLLM(where, m)
	case RuntimeExternal:
	case "":
		if m.Target == nil {
			return fmt.Errorf("%s: runtime.kind is required (script, exec, llm or external)", where)
		}
	default:
		return fmt.Errorf("%s: runtime.kind %q: want script, exec, llm or external", where, m.Runtime.Kind)
	}
	return nil
}

// envName is what a shell accepts as an environment variable's name.
var envName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// checkLLM checks an llm member: a known provider, a model, an http(s)
// base_url if any, the NAME of the key's variable (never its value), known
// work tools (with a dir to confine them to) and bounds that are not
// negative.
func checkLLM(where string, m MemberSpec) error {
	rt := m.Runtime
	switch rt.Provider {
	case ProviderOpenAI, ProviderAnthropic:
	case "":
		return fmt.Errorf("%s: runtime.provider is required for an llm member (openai or anthropic)", where)
	default:
		return fmt.Errorf("%s: runtime.provider %q: want openai or anthropic", where, rt.Provider)
	}
	if strings.TrimSpace(rt.Model) == "" {
		return fmt.Errorf("%s: runtime.model is required for an llm member", where)
	}
	if rt.BaseURL != "" {
		u, err := url.Parse(rt.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%s: runtime.base_url %q: want http(s)://host[:port][/path]", where, rt.BaseURL)
		}
	}
	if rt.APIKeyEnv != "" && !envName().MatchString(rt.APIKeyEnv) {
		// Someone may have pasted the key itself here: never echo it.
		return fmt.Errorf("%s: runtime.api_key_env: want the NAME of an environment variable (letters, digits, _), not a key", where)
	}
	seen := map[string]bool{}
	for i, tool := range rt.Tools {
		if !slices.Contains(LLMTools, tool) {
			return fmt.Errorf("%s: runtime.tools[%d]: unknown tool %q: want one of %s", where, i, tool, strings.Join(LLMTools, ", "))
		}
		if seen[tool] {
			return fmt.Errorf("%s: runtime.tools[%d]: %q listed twice", where, i, tool)
		}
		seen[tool] = true
	}
	switch rt.Sandbox {
	case "", SandboxOn, SandboxOff:
	default:
		return fmt.Errorf("%s: runtime.sandbox %q: want on or off", where, rt.Sandbox)
	}
	switch {
	case rt.MaxTurns < 0:
		return fmt.Errorf("%s: runtime.max_turns: must not be negative", where)
	case rt.MaxTokens < 0:
		return fmt.Errorf("%s: runtime.max_tokens: must not be negative", where)
	case rt.Price != nil && (rt.Price.InputPerMTok < 0 || rt.Price.OutputPerMTok < 0):
		return fmt.Errorf("%s: runtime.price: must not be negative", where)
	}
	return nil
}

// checkScript checks a scripted member's steps, each on its own, and its
// shutdown policy.
func checkScript(where string, rt RuntimeSpec) error {
	if len(rt.Steps) == 0 {
		return fmt.Errorf("%s: runtime.steps: a script needs at least one step", where)
	}
	for j, s := range rt.Steps {
		k, err := s.Kind()
		if err != nil {
			return fmt.Errorf("%s: runtime.steps[%d]: %v", where, j, err)
		}
		if k == "say" && s.Say != "*" {
			if err := protocol.ValidateName(s.Say); err != nil {
				return fmt.Errorf("%s: runtime.steps[%d].say: %v", where, j, err)
			}
		}
		if k == "say" && s.Text == "" {
			return fmt.Errorf("%s: runtime.steps[%d].text is required", where, j)
		}
		if k == "call" && s.Action == "" {
			return fmt.Errorf("%s: runtime.steps[%d].action is required", where, j)
		}
	}
	switch rt.OnShutdown {
	case "", OnShutdownApprove, OnShutdownRejectWhileWorking:
		return nil
	default:
		return fmt.Errorf("%s: runtime.on_shutdown: %q: want approve or reject_while_working", where, rt.OnShutdown)
	}
}

// checkSteps checks what a member's steps refer to: whom they say things
// to (names, the set of members) and how long their calls wait.
func checkSteps(where string, steps []Step, names map[string]bool) error {
	for j, s := range steps {
		if s.Say != "" && s.Say != "*" && s.Say != protocol.Lead && !names[s.Say] {
			return fmt.Errorf("%s: runtime.steps[%d].say: no member %q", where, j, s.Say)
		}
		if s.TimeoutSec < 0 {
			return fmt.Errorf("%s: runtime.steps[%d].timeout_sec: must not be negative", where, j)
		}
	}
	return nil
}

// checkActions checks a member's invocable actions: each has a name, and
// its onward call, if any, is a call that can be made.
func checkActions(where string, actions map[string]ActionSpec) error {
	for name, a := range actions {
		if name == "" {
			return fmt.Errorf("%s: actions: an action needs a name", where)
		}
		if a.Call != nil {
			if err := checkCallSpec(fmt.Sprintf("%s: actions.%s.call", where, name), a.Call); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkCallSpec checks an onward call; at names it in the errors.
func checkCallSpec(at string, c *CallSpec) error {
	if err := protocol.ValidateName(c.Target); err != nil {
		return fmt.Errorf("%s.target: %v", at, err)
	}
	if c.Action == "" {
		return fmt.Errorf("%s.action is required", at)
	}
	if c.TimeoutSec < 0 {
		return fmt.Errorf("%s.timeout_sec: must not be negative", at)
	}
	return nil
}

// checkTarget checks where a member's invocations go, if not to its inbox:
// an exec target's command, an http target's url and skill.
func checkTarget(where string, tg *TargetSpec) error {
	if tg == nil {
		return nil
	}
	switch tg.Kind {
	case TargetExec:
		if len(tg.Command) == 0 || tg.Command[0] == "" {
			return fmt.Errorf("%s: target.command is required for an exec target", where)
		}
	case TargetHTTP:
		u, err := url.Parse(tg.URL)
		if tg.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%s: target.url %q: want http(s)://host[:port]", where, tg.URL)
		}
		switch tg.Protocol {
		case "", ProtocolBlueprint:
			if m, a, ok := strings.Cut(tg.Skill, "."); !ok || m == "" || a == "" {
				return fmt.Errorf("%s: target.skill %q: want <member>.<action>", where, tg.Skill)
			}
		case ProtocolA2A: // the skill is optional: an agent may have one
		default:
			return fmt.Errorf("%s: target.protocol %q: want blueprint or a2a", where, tg.Protocol)
		}
	default:
		return fmt.Errorf("%s: target.kind %q: want exec or http", where, tg.Kind)
	}
	if tg.Protocol != "" && tg.Kind != TargetHTTP {
		return fmt.Errorf("%s: target.protocol is an http target's", where)
	}
	return nil
}

// InboxNames are the inboxes the team's config names: the lead's, then
// each member's in the config's order; the lead's alone for a nil team
// (its config not read yet).
func (t *Team) InboxNames() []string {
	names := []string{protocol.Lead}
	if t != nil {
		for _, m := range t.Members {
			names = append(names, m.Name)
		}
	}
	return names
}

// Member returns the spec of the named member.
func (t *Team) Member(name string) (MemberSpec, bool) {
	for _, m := range t.Members {
		if m.Name == name {
			return m, true
		}
	}
	return MemberSpec{}, false
}

//go:embed all:demo
var demoFS embed.FS

// DemoTeam returns the embedded demo team's team.json.
func DemoTeam() []byte {
	b, _ := demoFS.ReadFile("demo/team.json")
	return b
}

// Init writes the demo team into dir (DemoFiles). It refuses to
// overwrite any of them.
func Init(dir string) error {
	files, err := DemoFiles()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	return writeNew(dir, files)
}

// DemoFiles are the demo team's files: an editable team.json, the team's
// own .puruto-ipc.json for callers over HTTP, and the members'
// .puruto-ipc.json files under ipc/.
func DemoFiles() ([]InitFile, error) {
	// team.json first: it is what says a team lives here. The directory's
	// own .puruto-ipc.json governs callers from outside (huddle serve).
	files := []string{"team.json", ".puruto-ipc.json"}
	ents, _ := demoFS.ReadDir("demo/ipc")
	for _, e := range ents {
		files = append(files, "ipc/"+e.Name())
	}
	var out []InitFile
	for _, name := range files {
		b, err := demoFS.ReadFile("demo/" + name)
		if err != nil {
			return nil, fmt.Errorf("init: %w", err)
		}
		out = append(out, InitFile{name, b})
	}
	return out, nil
}

// InitFile is one file huddle init writes: its slash path under the team
// directory, a store.ValidateConfigName name, and its content.
type InitFile struct {
	Name string
	Data []byte
}

// writeNew writes files into dir in order, refusing to overwrite any.
func writeNew(dir string, files []InitFile) error {
	for _, fl := range files {
		name, b := fl.Name, fl.Data
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return fmt.Errorf("init: %w", err)
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			if errors.Is(err, os.ErrExist) {
				return fmt.Errorf("init: %s already exists; not overwriting it", path)
			}
			return fmt.Errorf("init: %w", err)
		}
		_, err = f.Write(b)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("init: %w", err)
		}
	}
	return nil
}

// RunByHuddle is whether huddle's runtime runs m (a script, exec or llm
// teammate) rather than m running itself and reporting its status.
func (m MemberSpec) RunByHuddle() bool {
	k := m.Runtime.Kind
	return k == RuntimeScript || k == RuntimeExec || k == RuntimeLLM
}
