package agents

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
)

// claudeEvent is the part of a Claude Code stream-json line the adapter
// reads; every other field and event type is ignored.
type claudeEvent struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	SessionID string `json:"session_id"`
	Message   *struct {
		Content []claudeBlock `json:"content"`
	} `json:"message"`
	// The result event's.
	IsError        bool         `json:"is_error"`
	Result         string       `json:"result"`
	TotalCostUSD   float64      `json:"total_cost_usd"`
	Errors         []string     `json:"errors"`
	Usage          *claudeUsage `json:"usage"`
	TerminalReason string       `json:"terminal_reason"`
	// SinceLast is the run's use of each model since the process's last
	// result: its costUSD is the run's cost, where total_cost_usd adds
	// up every run of the session, resumed ones too.
	SinceLast map[string]struct {
		CostUSD float64 `json:"costUSD"`
	} `json:"model_usage_since_last_result"`
	PermissionDenials []struct {
		ToolName  string          `json:"tool_name"`
		ToolInput json.RawMessage `json:"tool_input"`
	} `json:"permission_denials"`
}

type claudeUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
}

type claudeBlock struct {
	Type  string          `json:"type"` // text | tool_use | thinking | …
	Text  string          `json:"text"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// claudeToolInput is the part of a tool's input an activity names.
type claudeToolInput struct {
	FilePath     string `json:"file_path"`
	NotebookPath string `json:"notebook_path"`
	Path         string `json:"path"`
	Command      string `json:"command"`
	Pattern      string `json:"pattern"`
	URL          string `json:"url"`
	Query        string `json:"query"`
	Description  string `json:"description"`
	Plan         string `json:"plan"`
	Content      string `json:"content"`
}

type claudeStream struct {
	cwd   string
	out   Outcome
	total float64 // total_cost_usd of the last result
	// plans is Claude Code's plans directory (CLAUDE_CONFIG_DIR/plans/);
	// planFile the text the run last wrote to a file there: in plan mode
	// the CLI has the model write its plan there, and ExitPlanMode's own
	// input holds none.
	plans, planFile string
	// session: the stream of a session process, whose ExitPlanMode
	// requests the host answered (a denied one is a rejected plan, not
	// the plan to put forward).
	session bool
}

func newClaudeStream(cwd string) *claudeStream {
	return &claudeStream{cwd: cwd, plans: filepath.Join(claudeConfigDir(), "plans") + string(filepath.Separator)}
}

// claudeConfigDir is where Claude Code keeps its configuration:
// $CLAUDE_CONFIG_DIR, else ~/.claude.
func claudeConfigDir() string {
	if d := os.Getenv("CLAUDE_CONFIG_DIR"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".claude")
}

func (s *claudeStream) outcome() Outcome { return s.out }

func (s *claudeStream) feed(line []byte) (string, error) {
	typ, err := eventType(line)
	if err != nil {
		return "", err
	}
	var ev claudeEvent
	if !decodes(line, &ev) {
		return "", nil // a known type in a shape this adapter does not know: ignored
	}
	ev.Type = typ
	if ev.SessionID != "" {
		s.out.Session = ev.SessionID
	}
	switch ev.Type {
	case "assistant":
		if ev.Message == nil {
			return "", nil
		}
		activity := ""
		for _, b := range ev.Message.Content {
			if a := s.block(b); a != "" {
				activity = a
			}
		}
		return activity, nil
	case "result":
		s.result(ev)
	}
	return "", nil
}

// block reads one content block of an assistant message and returns the
// activity it shows.
func (s *claudeStream) block(b claudeBlock) string {
	switch b.Type {
	case "text":
		if strings.TrimSpace(b.Text) != "" {
			s.out.Final = b.Text
		}
		return ""
	case "thinking":
		return "thinking"
	case "tool_use":
		var in claudeToolInput
		_ = json.Unmarshal(b.Input, &in) // a tool whose input is not an object still has a name
		if b.Name == "ExitPlanMode" && in.Plan != "" {
			s.out.Plan = in.Plan
		}
		if b.Name == "Write" && strings.HasPrefix(filepath.Clean(in.FilePath), s.plans) && strings.TrimSpace(in.Content) != "" {
			s.planFile = in.Content
		}
		return claudeActivity(b.Name, in, s.cwd)
	}
	return ""
}

// claudeActivity says what a tool call does: the tool and what it works on.
func claudeActivity(name string, in claudeToolInput, cwd string) string {
	var what string
	switch name {
	case "Bash":
		return oneLine("running: "+in.Command, maxActivity)
	case "ExitPlanMode":
		return "putting forward the plan"
	case "TodoWrite":
		return "updating its todo list"
	case "Read", "Edit", "MultiEdit", "Write":
		what = shortPath(in.FilePath, cwd)
	case "NotebookEdit", "NotebookRead":
		what = shortPath(in.NotebookPath, cwd)
	case "Grep", "Glob":
		what = in.Pattern
	case "LS":
		what = shortPath(in.Path, cwd)
	case "WebFetch":
		what = in.URL
	case "WebSearch":
		what = in.Query
	case "Task", "Agent":
		what = in.Description
	}
	return oneLine(strings.TrimSpace(name+" "+what), maxActivity)
}

// result reads an event that ends a run: the final answer, the session,
// tokens and cost, and whether it failed. A process may end several runs
// (a background task finishing after the answer ends one more): each
// result's usage and cost are its own run's, and are added up. A plan
// denied in headless plan mode (ExitPlanMode has nobody to approve it) is
// listed in permission_denials with its input.
func (s *claudeStream) result(ev claudeEvent) {
	s.out.Completed = true
	if ev.Result != "" {
		s.out.Final = ev.Result
	}
	if ev.SinceLast != nil {
		for _, m := range ev.SinceLast {
			s.out.CostUSD += m.CostUSD
		}
	} else if ev.TotalCostUSD > s.total {
		s.out.CostUSD += ev.TotalCostUSD - s.total // a CLI too old for the per-run field
	}
	s.total = ev.TotalCostUSD
	if u := ev.Usage; u != nil {
		s.out.TokensIn += u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
		s.out.TokensOut += u.OutputTokens
	}
	for _, d := range ev.PermissionDenials {
		var in claudeToolInput
		if !s.session && d.ToolName == "ExitPlanMode" && json.Unmarshal(d.ToolInput, &in) == nil && in.Plan != "" {
			s.out.Plan = in.Plan
		}
	}
	if s.out.Plan == "" && s.planFile != "" {
		s.out.Plan = s.planFile // the plan file the run wrote, when ExitPlanMode named none
	}
	// An API error ends a run "success" with is_error set: the subtype
	// then says nothing, the result says what failed.
	var why []string
	if ev.Subtype != "" && ev.Subtype != "success" {
		why = append(why, ev.Subtype)
	}
	if ev.IsError || len(why) > 0 {
		if ev.Result != "" {
			why = append(why, ev.Result)
		}
		why = append(why, ev.Errors...)
		if len(why) == 0 {
			why = append(why, "the run failed")
		}
		failure := strings.Join(why, ": ")
		if r := ev.TerminalReason; r != "" && r != "completed" {
			failure += " (" + strings.ReplaceAll(r, "_", " ") + ")"
		}
		s.out.Failure = oneLine(failure, 300)
	}
}
