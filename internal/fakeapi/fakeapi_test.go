package fakeapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// event is one SSE event as a client reads it.
type event struct {
	Name string
	Data map[string]any
}

// reply is what a client got: a status, headers, the body of a refusal
// or the events of a stream.
type reply struct {
	status int
	header http.Header
	body   []byte
	events []event
}

func post(t *testing.T, url, body string) reply {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := reply{status: resp.StatusCode, header: resp.Header}
	if resp.StatusCode != http.StatusOK {
		r.body, _ = io.ReadAll(resp.Body)
		return r
	}
	sc := bufio.NewScanner(resp.Body)
	var name string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var d map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &d); err != nil {
				t.Fatalf("data of %s is not JSON: %v", name, err)
			}
			if d["type"] != name {
				t.Errorf("event %s carries type %v", name, d["type"])
			}
			r.events = append(r.events, event{name, d})
		}
	}
	return r
}

func names(events []event) string {
	var n []string
	for _, e := range events {
		n = append(n, e.Name)
	}
	return strings.Join(n, " ")
}

func TestAnthropicStreamsATurn(t *testing.T) {
	s := Anthropic(Turn{
		Text:  "Writing it now.",
		Calls: []Call{{ID: "toolu_1", Name: "Write", Input: map[string]any{"file_path": "a.txt", "content": "hi there"}}},
		Usage: Usage{InputTokens: 10, OutputTokens: 5, CacheReadInputTokens: 3, CacheCreationInputTokens: 2},
	})
	defer s.Close()
	events := post(t, s.URL()+"/v1/messages?beta=true", `{"model":"claude-x","stream":true,"messages":[]}`).events
	want := "message_start content_block_start content_block_delta content_block_delta content_block_stop " +
		"content_block_start content_block_delta content_block_delta content_block_stop message_delta message_stop"
	if got := names(events); got != want {
		t.Fatalf("events:\n%s\nwant\n%s", got, want)
	}
	var text, input string
	for _, e := range events {
		if e.Name != "content_block_delta" {
			continue
		}
		d := e.Data["delta"].(map[string]any)
		switch d["type"] {
		case "text_delta":
			text += d["text"].(string)
		case "input_json_delta":
			input += d["partial_json"].(string)
		}
	}
	if text != "Writing it now." || input != `{"content":"hi there","file_path":"a.txt"}` {
		t.Errorf("text %q, input %q", text, input)
	}
	start := events[5].Data["content_block"].(map[string]any)
	if start["type"] != "tool_use" || start["id"] != "toolu_1" || start["name"] != "Write" {
		t.Errorf("tool_use block starts as %v", start)
	}
	if m := events[0].Data["message"].(map[string]any); m["model"] != "claude-x" {
		t.Errorf("message_start echoes model %v", m["model"])
	}
	md := events[9].Data
	if md["delta"].(map[string]any)["stop_reason"] != "tool_use" {
		t.Errorf("stop_reason %v, want tool_use", md["delta"])
	}
	u := md["usage"].(map[string]any)
	if u["output_tokens"] != 5.0 || u["input_tokens"] != 10.0 || u["cache_read_input_tokens"] != 3.0 || u["cache_creation_input_tokens"] != 2.0 {
		t.Errorf("message_delta usage %v", u)
	}
}

func TestResponsesStreamsATurn(t *testing.T) {
	s := Responses(Turn{
		Text: "Running it.",
		Calls: []Call{
			{ID: "call_1", Name: "exec_command", Input: map[string]any{"cmd": "ls"}},
			{ID: "call_2", Name: "apply_patch", Custom: true, Input: "*** Begin Patch\n*** End Patch\n"},
		},
		Usage: Usage{InputTokens: 10, OutputTokens: 5, CacheReadInputTokens: 4},
	})
	defer s.Close()
	events := post(t, s.URL()+"/v1/responses", `{"model":"gpt-x","stream":true,"input":[]}`).events
	want := "response.created response.output_item.added response.output_text.delta response.output_text.delta response.output_item.done " +
		"response.output_item.added response.output_item.done response.output_item.added response.output_item.done response.completed"
	if got := names(events); got != want {
		t.Fatalf("events:\n%s\nwant\n%s", got, want)
	}
	fc := events[6].Data["item"].(map[string]any)
	if fc["type"] != "function_call" || fc["call_id"] != "call_1" || fc["name"] != "exec_command" || fc["arguments"] != `{"cmd":"ls"}` {
		t.Errorf("function_call item %v", fc)
	}
	ct := events[8].Data["item"].(map[string]any)
	if ct["type"] != "custom_tool_call" || ct["call_id"] != "call_2" || ct["input"] != "*** Begin Patch\n*** End Patch\n" {
		t.Errorf("custom_tool_call item %v", ct)
	}
	r := events[9].Data["response"].(map[string]any)
	u := r["usage"].(map[string]any)
	if r["model"] != "gpt-x" || u["input_tokens"] != 10.0 || u["output_tokens"] != 5.0 || u["input_tokens_details"].(map[string]any)["cached_tokens"] != 4.0 {
		t.Errorf("response.completed %v", r)
	}
	for i, e := range events {
		if e.Data["sequence_number"] != float64(i) {
			t.Errorf("event %d has sequence_number %v", i, e.Data["sequence_number"])
		}
	}
}

// TestRefusesWhatItDoesNotExpect: every request off the script is a 500
// that names it, recorded, and told not to be retried.
func TestRefusesWhatItDoesNotExpect(t *testing.T) {
	s := Anthropic(Turn{Text: "one"}, Turn{Make: func(Request) (Turn, error) { return Turn{}, errors.New("no plan path") }})
	defer s.Close()
	cases := []struct{ path, body, refusal string }{
		{"/v1/messages/count_tokens", `{"stream":true}`, "unexpected request POST /v1/messages/count_tokens"},
		{"/v1/messages", `{"stream":false}`, `without "stream": true`},
		{"/v1/messages", `{"stream":true}`, ""}, // the script's first turn
		{"/v1/messages", `{"stream":true}`, "turn 1 of the script: no plan path"},
		{"/v1/messages", `{"stream":true}`, "the script's 2 turns are used up"},
	}
	for _, c := range cases {
		r := post(t, s.URL()+c.path, c.body)
		if c.refusal == "" {
			if r.status != http.StatusOK || len(r.events) == 0 {
				t.Errorf("%s: status %d, %d events", c.path, r.status, len(r.events))
			}
			continue
		}
		var e struct{ Error struct{ Message string } }
		_ = json.Unmarshal(r.body, &e)
		if r.status != http.StatusInternalServerError || !strings.Contains(e.Error.Message, c.refusal) || r.header.Get("X-Should-Retry") != "false" {
			t.Errorf("%s %s: %d %s (x-should-retry %q), want a 500 saying %q", c.path, c.body, r.status, r.body, r.header.Get("X-Should-Retry"), c.refusal)
		}
	}
	reqs := s.Requests()
	if len(reqs) != len(cases) || len(s.Refused()) != 4 || len(s.Served()) != 1 || s.Served()[0].N != 3 {
		t.Fatalf("recorded %d requests, %d refused, served %v", len(reqs), len(s.Refused()), s.Served())
	}
	if r := reqs[0]; r.Method != "POST" || r.Path != "/v1/messages/count_tokens" || string(r.Body) != `{"stream":true}` || r.Turn != -1 {
		t.Errorf("first request recorded as %+v", r)
	}
}

func TestWaitForRequests(t *testing.T) {
	s := Responses(Turn{Text: "a"})
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := s.Wait(ctx, 1); err == nil || !strings.Contains(err.Error(), "waiting for request 1 (got 0)") {
		t.Fatalf("Wait with no request: %v", err)
	}
	done := make(chan []Request, 1)
	go func() {
		reqs, _ := s.Wait(context.Background(), 1)
		done <- reqs
	}()
	post(t, s.URL()+"/v1/responses", `{"stream":true,"input":[{"type":"function_call_output","call_id":"c1","output":"ok"}]}`)
	reqs := <-done
	body, err := reqs[0].ResponsesBody()
	if err != nil {
		t.Fatal(err)
	}
	if out, ok := body.CallOutput("c1"); !ok || out.Output != "ok" {
		t.Errorf("CallOutput(c1) = %+v, %v", out, ok)
	}
}

func TestMessagesRequestDecoding(t *testing.T) {
	r := Request{N: 1, Body: []byte(`{"model":"m","stream":true,"tools":[{"name":"Bash"},{"name":"Write"}],"messages":[
		{"role":"user","content":"hello"},
		{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":"denied"},
		                          {"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}]}`)}
	m, err := r.Messages()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(m.ToolNames(), ","); got != "Bash,Write" {
		t.Errorf("tools %s", got)
	}
	if got := m.Texts("user"); len(got) != 1 || got[0] != "hello" {
		t.Errorf("user texts %q", got)
	}
	if b, ok := m.ToolResult("t1"); !ok || !b.IsError || b.Content != "denied" {
		t.Errorf("t1 %+v %v", b, ok)
	}
	if b, ok := m.ToolResult("t2"); !ok || b.IsError || b.Content != "ab" {
		t.Errorf("t2 %+v %v", b, ok)
	}
	if _, ok := m.ToolResult("t3"); ok {
		t.Error("found a result for t3")
	}
}

// TestAPIErrorIsAnswered: a turn with an Error is answered with its
// status and the API's error object, and counts as served, not refused.
func TestAPIErrorIsAnswered(t *testing.T) {
	s := Anthropic(Turn{Error: &APIError{Status: 400, Type: "invalid_request_error", Message: "bad schema"}})
	defer s.Close()
	resp, err := http.Post(s.URL()+"/v1/messages", "application/json", strings.NewReader(`{"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Type  string
		Error struct{ Type, Message string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 400 || body.Type != "error" || body.Error.Type != "invalid_request_error" || body.Error.Message != "bad schema" {
		t.Errorf("%d %+v", resp.StatusCode, body)
	}
	if len(s.Served()) != 1 || len(s.Refused()) != 0 {
		t.Errorf("served %d, refused %d", len(s.Served()), len(s.Refused()))
	}
}

// TestDropCutsTheStream: a Drop turn starts a stream and cuts the
// connection, so the client's read ends in an error, and the next request
// gets the next turn.
func TestDropCutsTheStream(t *testing.T) {
	s := Responses(Turn{Drop: true}, Turn{Text: "again"})
	defer s.Close()
	resp, err := http.Post(s.URL()+"/v1/responses", "application/json", strings.NewReader(`{"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || err == nil {
		t.Fatalf("status %d, read error %v: want 200 and a cut stream", resp.StatusCode, err)
	}
	if got := names(post(t, s.URL()+"/v1/responses", `{"stream":true}`).events); !strings.Contains(got, "response.completed") {
		t.Errorf("the next request got %s", got)
	}
}

// TestHoldWaitsForItsChannel: a Hold turn answers only once its channel
// is closed.
func TestHoldWaitsForItsChannel(t *testing.T) {
	hold := make(chan struct{})
	s := Responses(Turn{Hold: hold, Text: "at last"})
	defer s.Close()
	got := make(chan string, 1)
	go func() { got <- names(post(t, s.URL()+"/v1/responses", `{"stream":true}`).events) }()
	if _, err := s.Wait(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	select {
	case g := <-got:
		t.Fatalf("answered before its hold was let go: %s", g)
	default:
	}
	close(hold)
	if g := <-got; !strings.Contains(g, "response.completed") {
		t.Errorf("events %s", g)
	}
}
