package fakeapi

import (
	"encoding/json"
	"fmt"
	"io"
)

// Anthropic is a fake of the Anthropic Messages API: POST /v1/messages
// with "stream": true (Claude Code adds ?beta=true) answers the next turn
// of script as message_start, a content block for the text and one for
// each tool call (input_json_delta), message_delta with the stop reason
// and usage, and message_stop.
func Anthropic(script ...Turn) *Server { return newServer(anthropic{}, script) }

type anthropic struct{}

func (anthropic) path() string { return "/v1/messages" }

func (anthropic) write(w io.Writer, n int, t Turn, body []byte) error {
	var req struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(body, &req) // the model is only echoed
	u := t.Usage
	err := sse(w, "message_start", map[string]any{
		"type": "message_start",
		"message": map[string]any{
			"id": fmt.Sprintf("msg_fake_%d", n), "type": "message", "role": "assistant",
			"model": req.Model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil,
			"usage": map[string]any{
				"input_tokens":                u.InputTokens,
				"cache_creation_input_tokens": u.CacheCreationInputTokens,
				"cache_read_input_tokens":     u.CacheReadInputTokens,
				"output_tokens":               1,
			},
		},
	})
	if err != nil {
		return err
	}
	index := 0
	if t.Text != "" {
		err := block(w, index, map[string]any{"type": "text", "text": ""}, "text_delta", "text", chunks(t.Text))
		if err != nil {
			return err
		}
		index++
	}
	for i, c := range t.Calls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("toolu_fake_%d_%d", n, i+1)
		}
		in, err := inputJSON(c.Input)
		if err != nil {
			return fmt.Errorf("fakeapi: the input of %s: %w", c.Name, err)
		}
		start := map[string]any{"type": "tool_use", "id": id, "name": c.Name, "input": map[string]any{}}
		if err := block(w, index, start, "input_json_delta", "partial_json", chunks(in)); err != nil {
			return err
		}
		index++
	}
	stop := "end_turn"
	if len(t.Calls) > 0 {
		stop = "tool_use"
	}
	err = sse(w, "message_delta", map[string]any{
		"type":  "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{
			"input_tokens":                u.InputTokens,
			"cache_creation_input_tokens": u.CacheCreationInputTokens,
			"cache_read_input_tokens":     u.CacheReadInputTokens,
			"output_tokens":               u.OutputTokens,
		},
	})
	if err != nil {
		return err
	}
	return sse(w, "message_stop", map[string]any{"type": "message_stop"})
}

// block writes one content block: its start, a delta of kind for each
// part (the part in the field named field), its stop.
func block(w io.Writer, index int, start map[string]any, kind, field string, parts []string) error {
	if err := sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": start}); err != nil {
		return err
	}
	for _, p := range parts {
		err := sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": kind, field: p}})
		if err != nil {
			return err
		}
	}
	return sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
}

// MessagesRequest is the part of a Messages request body tests read.
type MessagesRequest struct {
	Model    string    `json:"model"`
	Stream   bool      `json:"stream"`
	Messages []Message `json:"messages"`
	Tools    []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

// Message is one message of a Messages request.
type Message struct {
	Role    string
	Content []Block
}

// UnmarshalJSON reads a message whose content is a string or blocks.
func (m *Message) UnmarshalJSON(b []byte) error {
	var raw struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	m.Role = raw.Role
	blocks, err := readBlocks(raw.Content)
	m.Content = blocks
	return err
}

// Block is one content block: text, tool_use, tool_result, …
type Block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	IsError   bool            `json:"is_error"`
	// Content is a tool_result's content, its text blocks joined.
	Content string `json:"-"`
}

// UnmarshalJSON reads a block whose content (a tool_result's) is a
// string or blocks.
func (b *Block) UnmarshalJSON(data []byte) error {
	type plain Block
	var raw struct {
		plain
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*b = Block(raw.plain)
	inner, err := readBlocks(raw.Content)
	for _, c := range inner {
		b.Content += c.Text
	}
	return err
}

// readBlocks reads content that is a string (one text block) or blocks.
func readBlocks(raw json.RawMessage) ([]Block, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []Block{{Type: "text", Text: s}}, nil
	}
	var blocks []Block
	err := json.Unmarshal(raw, &blocks)
	return blocks, err
}

// Messages decodes the request's body as a Messages request.
func (r Request) Messages() (MessagesRequest, error) {
	var m MessagesRequest
	err := json.Unmarshal(r.Body, &m)
	if err != nil {
		err = fmt.Errorf("fakeapi: request %d is not a Messages request: %w", r.N, err)
	}
	return m, err
}

// ToolNames are the names of the tools the request offers.
func (m MessagesRequest) ToolNames() []string {
	var names []string
	for _, t := range m.Tools {
		names = append(names, t.Name)
	}
	return names
}

// ToolResult finds the tool_result block for the tool_use id.
func (m MessagesRequest) ToolResult(id string) (Block, bool) {
	for _, msg := range m.Messages {
		for _, b := range msg.Content {
			if b.Type == "tool_result" && b.ToolUseID == id {
				return b, true
			}
		}
	}
	return Block{}, false
}

// Texts are the texts of every text block of role's messages, in order.
func (m MessagesRequest) Texts(role string) []string {
	var out []string
	for _, msg := range m.Messages {
		if msg.Role != role {
			continue
		}
		for _, b := range msg.Content {
			if b.Type == "text" {
				out = append(out, b.Text)
			}
		}
	}
	return out
}
