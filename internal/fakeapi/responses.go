package fakeapi

import (
	"encoding/json"
	"fmt"
	"io"
)

// Responses is a fake of the OpenAI Responses API: POST /v1/responses
// with "stream": true answers the next turn of script as
// response.created, an assistant message item for the text
// (output_item.added, output_text.delta, output_item.done), a
// function_call item for each tool call, and response.completed with
// usage.
func Responses(script ...Turn) *Server { return newServer(responses{}, script) }

type responses struct{}

func (responses) path() string { return "/v1/responses" }

func (responses) write(w io.Writer, n int, t Turn, body []byte) error {
	var req struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(body, &req) // the model is only echoed
	id := fmt.Sprintf("resp_fake_%d", n)
	seq := 0
	event := func(typ string, fields map[string]any) error {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		return sse(w, typ, fields)
	}
	resp := func(status string, output []any, usage any) map[string]any {
		return map[string]any{"id": id, "object": "response", "status": status, "model": req.Model, "output": output, "usage": usage}
	}
	if err := event("response.created", map[string]any{"response": resp("in_progress", []any{}, nil)}); err != nil {
		return err
	}
	var output []any
	if t.Text != "" {
		itemID := fmt.Sprintf("msg_fake_%d", n)
		item := map[string]any{"id": itemID, "type": "message", "role": "assistant", "status": "in_progress", "content": []any{}}
		if err := event("response.output_item.added", map[string]any{"output_index": len(output), "item": item}); err != nil {
			return err
		}
		for _, part := range chunks(t.Text) {
			err := event("response.output_text.delta", map[string]any{"item_id": itemID, "output_index": len(output), "content_index": 0, "delta": part})
			if err != nil {
				return err
			}
		}
		done := map[string]any{"id": itemID, "type": "message", "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": t.Text, "annotations": []any{}}}}
		if err := event("response.output_item.done", map[string]any{"output_index": len(output), "item": done}); err != nil {
			return err
		}
		output = append(output, done)
	}
	for i, c := range t.Calls {
		callID := c.ID
		if callID == "" {
			callID = fmt.Sprintf("call_fake_%d_%d", n, i+1)
		}
		done, err := callItem(c, callID, fmt.Sprintf("fc_fake_%d_%d", n, i+1))
		if err != nil {
			return err
		}
		added := map[string]any{}
		for k, v := range done {
			added[k] = v
		}
		added["status"] = "in_progress"
		if err := event("response.output_item.added", map[string]any{"output_index": len(output), "item": added}); err != nil {
			return err
		}
		if err := event("response.output_item.done", map[string]any{"output_index": len(output), "item": done}); err != nil {
			return err
		}
		output = append(output, done)
	}
	u := t.Usage
	usage := map[string]any{
		"input_tokens":          u.InputTokens,
		"input_tokens_details":  map[string]any{"cached_tokens": u.CacheReadInputTokens},
		"output_tokens":         u.OutputTokens,
		"output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens":          u.InputTokens + u.OutputTokens,
	}
	if output == nil {
		output = []any{}
	}
	return event("response.completed", map[string]any{"response": resp("completed", output, usage)})
}

// callItem is the completed output item of call c: a function_call with
// its arguments as JSON text, or a custom_tool_call with its input as it
// is.
func callItem(c Call, callID, itemID string) (map[string]any, error) {
	if c.Custom {
		in, ok := c.Input.(string)
		if !ok {
			return nil, fmt.Errorf("fakeapi: the input of the custom call %s is %T, not a string", c.Name, c.Input)
		}
		return map[string]any{"id": itemID, "type": "custom_tool_call", "status": "completed", "call_id": callID, "name": c.Name, "input": in}, nil
	}
	args, err := inputJSON(c.Input)
	if err != nil {
		return nil, fmt.Errorf("fakeapi: the input of %s: %w", c.Name, err)
	}
	return map[string]any{"id": itemID, "type": "function_call", "status": "completed", "call_id": callID, "name": c.Name, "arguments": args}, nil
}

// ResponsesRequest is the part of a Responses request body tests read.
type ResponsesRequest struct {
	Model string `json:"model"`
	Input []Item `json:"input"`
	Tools []struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tools"`
}

// Item is one input item of a Responses request: a message, a
// function_call the model made, or the function_call_output the CLI sends
// back for it.
type Item struct {
	Type      string `json:"type"`
	Role      string `json:"role"`
	Content   []Part `json:"-"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	CallID    string `json:"call_id"`
	// Output is a function_call_output's output as text.
	Output string `json:"-"`
}

// UnmarshalJSON reads an item whose content or output is a string or
// a list of parts.
func (it *Item) UnmarshalJSON(b []byte) error {
	type plain Item
	var raw struct {
		plain
		Content json.RawMessage `json:"content"`
		Output  json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*it = Item(raw.plain)
	parts, err := readParts(raw.Content)
	if err != nil {
		return err
	}
	it.Content = parts
	out, err := readParts(raw.Output)
	for _, p := range out {
		it.Output += p.Text
	}
	return err
}

// Part is one part of an item's content: input_text, output_text, …
type Part struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func readParts(raw json.RawMessage) ([]Part, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []Part{{Type: "text", Text: s}}, nil
	}
	var parts []Part
	err := json.Unmarshal(raw, &parts)
	return parts, err
}

// ResponsesBody decodes the request's body as a Responses request.
func (r Request) ResponsesBody() (ResponsesRequest, error) {
	var m ResponsesRequest
	err := json.Unmarshal(r.Body, &m)
	if err != nil {
		err = fmt.Errorf("fakeapi: request %d is not a Responses request: %w", r.N, err)
	}
	return m, err
}

// ToolNames are the names of the tools the request offers.
func (m ResponsesRequest) ToolNames() []string {
	var names []string
	for _, t := range m.Tools {
		names = append(names, t.Name)
	}
	return names
}

// CallOutput finds the function_call_output (or custom_tool_call_output)
// for callID.
func (m ResponsesRequest) CallOutput(callID string) (Item, bool) {
	for _, it := range m.Input {
		if (it.Type == "function_call_output" || it.Type == "custom_tool_call_output") && it.CallID == callID {
			return it, true
		}
	}
	return Item{}, false
}
