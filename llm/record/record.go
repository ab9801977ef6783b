// Package record holds what an llm member leaves for others to read: the
// entries of its transcript, the tokens a turn used, and the names of the
// work tools team.json may enable. It imports nothing of the model SDKs,
// so team and the commands that read transcripts or validate team.json do
// not link them (docs/ARCHITECTURE.md, "Packages").
package record

import (
	"encoding/json"
	"time"
)

// KnownTools are the work tools a member may enable.
var KnownTools = []string{"read_file", "write_file", "edit_file", "list_files", "bash"}

// Usage counts the tokens of one turn, or a member's total.
type Usage struct {
	In  int64 `json:"in"`
	Out int64 `json:"out"`
}

// Entry is one line of a member's transcript
// (members/<name>.transcript.jsonl): every model turn, tool call and tool
// result, in order. It never holds a key.
type Entry struct {
	TS       time.Time       `json:"ts"`
	Kind     string          `json:"kind"` // prompt, message, model, tool_call, tool_result, error, end
	Text     string          `json:"text,omitempty"`
	Tool     string          `json:"tool,omitempty"`
	CallID   string          `json:"call_id,omitempty"`
	Args     json.RawMessage `json:"args,omitempty"` // tool_call: its arguments; model: the turn's tool calls, id and name
	IsError  bool            `json:"is_error,omitempty"`
	Usage    *Usage          `json:"usage,omitempty"`
	Conv     string          `json:"conv,omitempty"` // "main", or the invocation request id it answers
	Turn     int             `json:"turn,omitempty"`
	Duration int64           `json:"duration_ms,omitempty"`
}
