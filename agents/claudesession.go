package agents

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Claude Code runs as one process for a member's whole session, on its
// control protocol (agents/testdata/real/README.md has what the real CLI
// was seen to do; docs/agents.md cites the flags):
//
//	claude -p --input-format stream-json --output-format stream-json --verbose
//	       --permission-prompt-tool stdio --permission-mode plan|default
//
// A turn is a user message written to its stdin; it ends with the run's
// result. Each tool use the CLI wants permission for arrives as a
// control_request can_use_tool, which becomes an ask the agent's loop
// answers (ExitPlanMode's carries the plan), and the answer goes back as
// a control_response. Between turns the host changes the permission mode
// with set_permission_mode. If the process dies (or a turn is cut), the
// next turn starts a new one that resumes the session.
type claudeSession struct{ procSession }

func newClaudeSession(r *runner) driver { return &claudeSession{procSession{r: r}} }

// claudeLine is the part of a line of the control protocol the session
// reads itself: control requests and responses, and the permission mode
// that init and status events carry. Everything else is the stream's.
type claudeLine struct {
	Type           string `json:"type"`
	Subtype        string `json:"subtype"`
	RequestID      string `json:"request_id"`
	PermissionMode string `json:"permissionMode"`
	Request        *struct {
		Subtype     string          `json:"subtype"`
		ToolName    string          `json:"tool_name"`
		Input       json.RawMessage `json:"input"`
		ToolUseID   string          `json:"tool_use_id"`
		Suggestions json.RawMessage `json:"permission_suggestions"`
	} `json:"request"`
	Response *struct {
		Subtype   string `json:"subtype"`
		RequestID string `json:"request_id"`
		Error     string `json:"error"`
	} `json:"response"`
}

// claudeMode is the permission mode of turn t: plan (read-only) until the
// plan is approved, then default, where every edit and every command that
// may change something asks.
func claudeMode(t Turn) string {
	if t.Edits {
		return "default"
	}
	return "plan"
}

// claudeSessionArgs is the command line of a session process, resuming
// session if set; extra (after `--` on huddle's command line) is added.
func claudeSessionArgs(mode, session string, extra []string) []string {
	args := []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
		"--permission-prompt-tool", "stdio", "--permission-mode", mode}
	if session != "" {
		args = append(args, "--resume", session)
	}
	return append(args, extra...)
}

func (s *claudeSession) start(mode, session string) error {
	p, err := startProc(s.r, claudeSessionArgs(mode, session, s.r.extra))
	if err != nil {
		return err
	}
	p.mode = mode
	s.proc = p
	return nil
}

func (s *claudeSession) run(ctx context.Context, t Turn, h hooks) (Outcome, error) {
	mode := claudeMode(t)
	if s.live() == nil {
		if err := s.start(mode, t.Session); err != nil {
			return Outcome{}, err
		}
	}
	p := s.proc
	st := newClaudeStream(s.r.cwd)
	st.session = true
	if p.mode != mode {
		if err := s.setMode(ctx, p, st, mode, h); err != nil {
			return s.failed(ctx, st.outcome(), err)
		}
	}
	user := map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": t.Prompt},
		"parent_tool_use_id": nil, "session_id": ""}
	if err := p.send(user); err != nil {
		return s.failed(ctx, st.outcome(), errEnded) // it exited: its end says why
	}
	for {
		line, err := s.next(ctx)
		if err != nil {
			return s.failed(ctx, st.outcome(), err)
		}
		done, err := s.line(ctx, p, st, line, h)
		if err != nil {
			return s.failed(ctx, st.outcome(), err)
		}
		if done {
			out := st.outcome()
			if out.Failure != "" {
				return out, fmt.Errorf("%s reported a failure: %s", s.r.cli.Name, out.Failure)
			}
			return out, nil
		}
	}
}

// line acts on one line of the process's output during a turn: a control
// request is answered (through the agent's loop for can_use_tool), the
// rest is the stream's. done reports the run's result.
func (s *claudeSession) line(ctx context.Context, p *lineProc, st *claudeStream, line []byte, h hooks) (done bool, err error) {
	var l claudeLine
	if json.Unmarshal(line, &l) != nil || l.Type == "" {
		p.garbage++
		if p.garbage <= garbageShown {
			s.r.log.printf("%s: not a JSON event: %s", s.r.cli.Name, oneLine(string(line), 200))
		}
		return false, nil
	}
	switch {
	case l.Type == "control_request" && l.Request != nil && l.Request.Subtype == "can_use_tool":
		return false, s.canUseTool(ctx, p, st, l, h)
	case l.Type == "control_request":
		// Nothing else the CLI may ask is huddle's to grant.
		sub := "?"
		if l.Request != nil {
			sub = l.Request.Subtype
		}
		s.r.log.printf("%s: refused its control request %q", s.r.cli.Name, sub)
		return false, p.send(map[string]any{"type": "control_response", "response": map[string]any{
			"subtype": "error", "request_id": l.RequestID, "error": "huddle does not handle " + sub}})
	case l.Type == "control_response", l.Type == "control_cancel_request":
		return false, nil
	case l.Type == "system" && l.PermissionMode != "":
		p.mode = l.PermissionMode
	}
	if activity, _ := st.feed(line); activity != "" {
		h.activity(activity)
	}
	return l.Type == "result", nil
}

// canUseTool asks the agent's loop whether the tool may run and answers
// the CLI with what it says.
func (s *claudeSession) canUseTool(ctx context.Context, p *lineProc, st *claudeStream, l claudeLine, h hooks) error {
	rq := l.Request
	q := &ask{Tool: rq.ToolName, Input: rq.Input, ToolUseID: rq.ToolUseID, Suggestions: rq.Suggestions}
	if len(q.Input) == 0 || string(q.Input) == "null" {
		q.Input = json.RawMessage("{}")
	}
	if rq.ToolName == "ExitPlanMode" {
		q.Plan = st.planOf(q.Input)
		st.planFile = "" // put forward: a revision writes the file again
	}
	a, err := h.put(ctx, s.r, q)
	if err != nil {
		return err
	}
	verdict := map[string]any{"behavior": "deny", "message": a.Message}
	if a.Allow {
		// This CLI wants the input back, as it is or as the host changed it.
		in := a.Input
		if len(in) == 0 {
			in = q.Input
		}
		verdict = map[string]any{"behavior": "allow", "updatedInput": in}
	}
	return p.send(map[string]any{"type": "control_response", "response": map[string]any{
		"subtype": "success", "request_id": l.RequestID, "response": verdict}})
}

// setMode changes the running process's permission mode and waits for
// its answer; lines that come first are the stream's.
func (s *claudeSession) setMode(ctx context.Context, p *lineProc, st *claudeStream, mode string, h hooks) error {
	p.seq++
	id := fmt.Sprintf("huddle-mode-%d", p.seq)
	req := map[string]any{"type": "control_request", "request_id": id, "request": map[string]any{"subtype": "set_permission_mode", "mode": mode}}
	if err := p.send(req); err != nil {
		return fmt.Errorf("%s: setting the permission mode: %w", s.r.cli.Name, err)
	}
	for {
		line, err := s.next(ctx)
		if err != nil {
			return err
		}
		var l claudeLine
		if json.Unmarshal(line, &l) == nil && l.Type == "control_response" && l.Response != nil && l.Response.RequestID == id {
			if l.Response.Subtype != "success" {
				return fmt.Errorf("%s refused the permission mode %s: %s", s.r.cli.Name, mode, l.Response.Error)
			}
			p.mode = mode
			return nil
		}
		if _, err := s.line(ctx, p, st, line, h); err != nil {
			return err
		}
	}
}

// planOf is the plan an ExitPlanMode request puts forward: its input's
// plan (which the CLI fills in from the plan file), else what the turn
// last wrote to the plan file, else the plan file itself.
func (s *claudeStream) planOf(input json.RawMessage) string {
	var in struct {
		Plan         string `json:"plan"`
		PlanFilePath string `json:"planFilePath"`
	}
	_ = json.Unmarshal(input, &in)
	if strings.TrimSpace(in.Plan) != "" {
		return in.Plan
	}
	if strings.TrimSpace(s.planFile) != "" {
		return s.planFile
	}
	if f := filepath.Clean(in.PlanFilePath); in.PlanFilePath != "" && strings.HasPrefix(f, s.plans) {
		if b, err := os.ReadFile(f); err == nil && len(b) <= maxEventLine {
			return string(b)
		}
	}
	return ""
}
