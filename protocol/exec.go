package protocol

import "encoding/json"

// ExecLine is one line an exec teammate writes on stdout (docs/agents.md,
// the exec protocol). Its kind is the wire field "action"; it is not
// one of a member's invocable actions (invoke names one of those in Name).
type ExecLine struct {
	Kind       string            `json:"action"` // send | broadcast | plan | shutdown_response | status | invoke | result | usage | permission | review
	To         string            `json:"to,omitempty"`
	Content    string            `json:"content,omitempty"`
	Plan       string            `json:"plan,omitempty"`
	RequestID  string            `json:"request_id,omitempty"`
	Approve    *bool             `json:"approve,omitempty"`
	Reason     string            `json:"reason,omitempty"`
	Status     string            `json:"status,omitempty"`
	Activity   string            `json:"activity,omitempty"`
	Target     string            `json:"target,omitempty"`
	Name       string            `json:"name,omitempty"` // the invoked action
	Prompt     string            `json:"prompt,omitempty"`
	TimeoutSec int               `json:"timeout_sec,omitempty"`
	Result     *InvocationResult `json:"result,omitempty"` // the answer to an invocation
	// TokensIn, TokensOut and CostUSD are what a usage line adds to the
	// member's counters: the tokens and dollars an agent's model spent
	// since its last usage line.
	TokensIn  int64   `json:"tokens_in,omitempty"`
	TokensOut int64   `json:"tokens_out,omitempty"`
	CostUSD   float64 `json:"cost_usd,omitempty"`
	// Tool, Input, ToolUseID and Suggestions are a permission line's: the
	// agent (which names the request, RequestID "pm-…") asks to use Tool
	// with Input; Suggestions are the agent's own offers, kept as sent.
	Tool        string          `json:"tool,omitempty"`
	Input       json.RawMessage `json:"input,omitempty"`
	ToolUseID   string          `json:"tool_use_id,omitempty"`
	Suggestions json.RawMessage `json:"suggestions,omitempty"`
}
