package realcli

import (
	"context"
	"encoding/json"
	"fmt"
)

// ClaudeArgs is the command line of a long-lived Claude Code session:
// headless (-p), user turns read from stdin and events printed on stdout
// as stream-json (which -p needs --verbose for), and every permission
// prompt sent to the host as a control_request on stdout, answered by a
// control_response on stdin (--permission-prompt-tool stdio, an option
// `claude --help` does not list). A --permission-mode follows.
var ClaudeArgs = []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose", "--permission-prompt-tool", "stdio"}

// Claude is a running Claude Code session.
type Claude struct {
	*Proc
	sets int // control_requests of the host's so far, for their ids
}

// StartClaude starts a session in permission mode mode (plan, default,
// acceptEdits, …) with extra arguments after ClaudeArgs.
func StartClaude(b Bins, e Env, mode string, extra ...string) (*Claude, error) {
	args := append(append(append([]string(nil), ClaudeArgs...), "--permission-mode", mode), extra...)
	p, err := Start("claude", b.Claude, args, e)
	if err != nil {
		return nil, err
	}
	return &Claude{Proc: p}, nil
}

// SendUser writes one user turn.
func (c *Claude) SendUser(text string) error {
	return c.Send(map[string]any{
		"type":               "user",
		"message":            map[string]any{"role": "user", "content": text},
		"parent_tool_use_id": nil,
		"session_id":         "",
	})
}

// CanUseTool is a permission prompt: a control_request whose subtype is
// can_use_tool.
type CanUseTool struct {
	RequestID string
	Request   struct {
		Subtype                 string          `json:"subtype"`
		ToolName                string          `json:"tool_name"`
		DisplayName             string          `json:"display_name"`
		Input                   json.RawMessage `json:"input"`
		ToolUseID               string          `json:"tool_use_id"`
		Description             string          `json:"description"`
		PermissionSuggestions   json.RawMessage `json:"permission_suggestions"`
		BlockedPath             string          `json:"blocked_path"`
		RequiresUserInteraction bool            `json:"requires_user_interaction"`
		DecisionReasonType      string          `json:"decision_reason_type"`
	}
	Line []byte
}

// ClaudeResult is the event that ends a run (one user turn).
type ClaudeResult struct {
	Subtype      string  `json:"subtype"`
	IsError      bool    `json:"is_error"`
	Result       string  `json:"result"`
	SessionID    string  `json:"session_id"`
	NumTurns     int     `json:"num_turns"`
	ResultIndex  int     `json:"result_index"`
	TotalCostUSD float64 `json:"total_cost_usd"`
	Usage        struct {
		InputTokens              int64 `json:"input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	} `json:"usage"`
	ModelUsage                map[string]ClaudeModelUsage `json:"modelUsage"`
	ModelUsageSinceLastResult map[string]ClaudeModelUsage `json:"model_usage_since_last_result"`
	PermissionDenials         []struct {
		ToolName  string          `json:"tool_name"`
		ToolUseID string          `json:"tool_use_id"`
		ToolInput json.RawMessage `json:"tool_input"`
	} `json:"permission_denials"`
	TerminalReason string `json:"terminal_reason"`
	Line           []byte `json:"-"`
}

// ClaudeModelUsage is one model's entry in a result's modelUsage.
type ClaudeModelUsage struct {
	InputTokens              int64   `json:"inputTokens"`
	OutputTokens             int64   `json:"outputTokens"`
	CacheReadInputTokens     int64   `json:"cacheReadInputTokens"`
	CacheCreationInputTokens int64   `json:"cacheCreationInputTokens"`
	CostUSD                  float64 `json:"costUSD"`
}

// claudeLine is the envelope of a stream-json line.
type claudeLine struct {
	Type      string          `json:"type"`
	Subtype   string          `json:"subtype"`
	RequestID string          `json:"request_id"`
	Request   json.RawMessage `json:"request"`
}

func readClaudeLine(line []byte) (claudeLine, bool) {
	var l claudeLine
	return l, json.Unmarshal(line, &l) == nil
}

// NextEvent waits for the next permission prompt or result, whichever
// comes first; exactly one of the two is set.
func (c *Claude) NextEvent(ctx context.Context) (*CanUseTool, *ClaudeResult, error) {
	line, err := c.Next(ctx, "a control_request or a result", func(b []byte) bool {
		l, ok := readClaudeLine(b)
		return ok && (l.Type == "control_request" || l.Type == "result")
	})
	if err != nil {
		return nil, nil, err
	}
	l, _ := readClaudeLine(line)
	if l.Type == "result" {
		r := &ClaudeResult{Line: line}
		if err := json.Unmarshal(line, r); err != nil {
			return nil, nil, fmt.Errorf("realcli: a result claude printed: %w: %s", err, line)
		}
		return nil, r, nil
	}
	p := &CanUseTool{RequestID: l.RequestID, Line: line}
	if err := json.Unmarshal(l.Request, &p.Request); err != nil {
		return nil, nil, fmt.Errorf("realcli: a control_request claude printed: %w: %s", err, line)
	}
	if p.Request.Subtype != "can_use_tool" {
		return nil, nil, fmt.Errorf("realcli: claude sent a control_request this harness does not answer: %s", line)
	}
	return p, nil, nil
}

// ExpectPrompt waits for a permission prompt for tool; a result or a
// prompt for another tool first is an error.
func (c *Claude) ExpectPrompt(ctx context.Context, tool string) (*CanUseTool, error) {
	p, r, err := c.NextEvent(ctx)
	switch {
	case err != nil:
		return nil, err
	case r != nil:
		return nil, fmt.Errorf("realcli: claude ended the run (%s) before asking to use %s", r.Line, tool)
	case p.Request.ToolName != tool:
		return nil, fmt.Errorf("realcli: claude asked to use %s, not %s: %s", p.Request.ToolName, tool, p.Line)
	}
	return p, nil
}

// ExpectResult waits for the result that ends the run; a permission
// prompt first is an error.
func (c *Claude) ExpectResult(ctx context.Context) (*ClaudeResult, error) {
	p, r, err := c.NextEvent(ctx)
	switch {
	case err != nil:
		return nil, err
	case p != nil:
		return nil, fmt.Errorf("realcli: claude asked to use %s before ending the run: %s", p.Request.ToolName, p.Line)
	}
	return r, nil
}

// Allow answers p: the tool runs with input (p's own input if nil).
func (c *Claude) Allow(p *CanUseTool, input any) error {
	if input == nil {
		input = p.Request.Input
	}
	return c.answer(p, map[string]any{"behavior": "allow", "updatedInput": input})
}

// Deny answers p: the tool does not run and the model gets message as
// its result.
func (c *Claude) Deny(p *CanUseTool, message string) error {
	return c.answer(p, map[string]any{"behavior": "deny", "message": message})
}

// SetMode asks the session to change its permission mode (plan,
// default, acceptEdits, …) with a control_request of the host's, and
// waits for the CLI's control_response to it.
func (c *Claude) SetMode(ctx context.Context, mode string) error {
	c.sets++
	id := fmt.Sprintf("huddle-set-mode-%d", c.sets)
	from := c.Len()
	err := c.Send(map[string]any{
		"type":       "control_request",
		"request_id": id,
		"request":    map[string]any{"subtype": "set_permission_mode", "mode": mode},
	})
	if err != nil {
		return err
	}
	line, _, err := c.Await(ctx, "the control_response to "+id, from, func(b []byte) bool {
		var r struct {
			Type     string `json:"type"`
			Response struct {
				RequestID string `json:"request_id"`
			} `json:"response"`
		}
		return json.Unmarshal(b, &r) == nil && r.Type == "control_response" && r.Response.RequestID == id
	})
	if err != nil {
		return err
	}
	var r struct {
		Response struct {
			Subtype string `json:"subtype"`
			Error   string `json:"error"`
		} `json:"response"`
	}
	if json.Unmarshal(line, &r) != nil || r.Response.Subtype != "success" {
		return fmt.Errorf("realcli: claude refused permission mode %s: %s", mode, line)
	}
	return nil
}

func (c *Claude) answer(p *CanUseTool, decision map[string]any) error {
	return c.Send(map[string]any{
		"type": "control_response",
		"response": map[string]any{
			"subtype":    "success",
			"request_id": p.RequestID,
			"response":   decision,
		},
	})
}
