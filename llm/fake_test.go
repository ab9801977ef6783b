package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// testKey is the API key of every test: it must appear in no transcript
// entry and no error.
const testKey = "sk-test-SECRET-0123456789"

// reply is one scripted answer of a fake model server.
type reply struct {
	status int
	header map[string]string
	body   string
	hang   bool // block until the request is cancelled
}

// received is one request the fake server got, parsed provider-neutrally.
type received struct {
	at   time.Time
	auth string
	msgs []Message
	raw  []byte
}

// dialect writes and reads one provider's wire format.
type dialect struct {
	name        string
	text        func(text string) reply
	tools       func(calls ...ToolCall) reply
	apiErr      func(status int, msg string) reply
	contextFull func() reply
	parse       func(t *testing.T, body []byte) []Message
}

type fakeServer struct {
	t      *testing.T
	d      dialect
	srv    *httptest.Server
	mu     sync.Mutex
	script []reply
	reqs   []received
	got    chan int // the count of requests, after each one is recorded
}

func newFakeServer(t *testing.T, d dialect, script ...reply) *fakeServer {
	t.Helper()
	f := &fakeServer{t: t, d: d, script: script, got: make(chan int, 100)}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	auth := r.Header.Get("Authorization") + r.Header.Get("X-Api-Key")
	f.mu.Lock()
	f.reqs = append(f.reqs, received{at: time.Now(), auth: auth, msgs: f.d.parse(f.t, body), raw: body})
	n := len(f.reqs)
	var rep reply
	if len(f.script) > 0 {
		rep, f.script = f.script[0], f.script[1:]
	} else {
		rep = f.d.apiErr(http.StatusBadRequest, "script exhausted")
	}
	f.mu.Unlock()
	f.got <- n
	if rep.hang {
		<-r.Context().Done()
		return
	}
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rep.status)
	_, _ = io.WriteString(w, rep.body)
}

func (f *fakeServer) requests() []received {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]received(nil), f.reqs...)
}

func (f *fakeServer) model(t *testing.T) Model {
	t.Helper()
	m, err := NewModel(ProviderConfig{Provider: f.d.name, BaseURL: f.srv.URL + "/v1", Model: "test-model", APIKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

var openaiDialect = dialect{
	name: "openai",
	text: func(text string) reply {
		return reply{status: 200, body: mustJSON(map[string]any{
			"id": "c1", "object": "chat.completion", "created": 1, "model": "test-model",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": text}}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
		})}
	},
	tools: func(calls ...ToolCall) reply {
		var tcs []any
		for _, c := range calls {
			tcs = append(tcs, map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": string(c.Args)}})
		}
		return reply{status: 200, body: mustJSON(map[string]any{
			"id": "c1", "object": "chat.completion", "created": 1, "model": "test-model",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "tool_calls", "message": map[string]any{"role": "assistant", "content": nil, "tool_calls": tcs}}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
		})}
	},
	apiErr: func(status int, msg string) reply {
		return reply{status: status, body: mustJSON(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "code": nil}})}
	},
	contextFull: func() reply {
		return reply{status: 400, body: mustJSON(map[string]any{"error": map[string]any{
			"message": "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
			"type":    "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})}
	},
	parse: func(t *testing.T, body []byte) []Message {
		var req struct {
			Messages []struct {
				Role       string          `json:"role"`
				Content    json.RawMessage `json:"content"`
				ToolCallID string          `json:"tool_call_id"`
				ToolCalls  []struct {
					ID       string `json:"id"`
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			t.Errorf("fake openai: bad request body: %v", err)
		}
		var out []Message
		for _, m := range req.Messages {
			var text string
			_ = json.Unmarshal(m.Content, &text)
			msg := Message{Role: Role(m.Role), Text: text, ToolCallID: m.ToolCallID}
			if msg.Role == RoleTool && strings.HasPrefix(text, toolErrorPrefix) {
				msg.Text, msg.IsError = strings.TrimPrefix(text, toolErrorPrefix), true
			}
			for _, tc := range m.ToolCalls {
				msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Args: json.RawMessage(tc.Function.Arguments)})
			}
			out = append(out, msg)
		}
		return out
	},
}

var anthropicDialect = dialect{
	name: "anthropic",
	text: func(text string) reply {
		return reply{status: 200, body: mustJSON(map[string]any{
			"id": "m1", "type": "message", "role": "assistant", "model": "test-model", "stop_reason": "end_turn",
			"content": []any{map[string]any{"type": "text", "text": text}},
			"usage":   map[string]any{"input_tokens": 10, "output_tokens": 5},
		})}
	},
	tools: func(calls ...ToolCall) reply {
		var blocks []any
		for _, c := range calls {
			blocks = append(blocks, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": c.Args})
		}
		return reply{status: 200, body: mustJSON(map[string]any{
			"id": "m1", "type": "message", "role": "assistant", "model": "test-model", "stop_reason": "tool_use",
			"content": blocks, "usage": map[string]any{"input_tokens": 10, "output_tokens": 5},
		})}
	},
	apiErr: func(status int, msg string) reply {
		kind := map[int]string{401: "authentication_error", 404: "not_found_error", 429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}[status]
		if kind == "" {
			kind = "invalid_request_error"
		}
		return reply{status: status, body: mustJSON(map[string]any{"type": "error", "error": map[string]any{"type": kind, "message": msg}})}
	},
	contextFull: func() reply {
		return reply{status: 400, body: mustJSON(map[string]any{"type": "error", "error": map[string]any{
			"type": "invalid_request_error", "message": "prompt is too long: 210000 tokens > 200000 maximum"}})}
	},
	parse: func(t *testing.T, body []byte) []Message {
		var req struct {
			Messages []struct {
				Role    string `json:"role"`
				Content []struct {
					Type      string          `json:"type"`
					Text      string          `json:"text"`
					ID        string          `json:"id"`
					Name      string          `json:"name"`
					Input     json.RawMessage `json:"input"`
					ToolUseID string          `json:"tool_use_id"`
					IsError   bool            `json:"is_error"`
					Content   []struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			t.Errorf("fake anthropic: bad request body: %v", err)
		}
		var out []Message
		for _, m := range req.Messages {
			var asst *Message
			for _, b := range m.Content {
				switch {
				case m.Role == "assistant":
					if asst == nil {
						out = append(out, Message{Role: RoleAssistant})
						asst = &out[len(out)-1]
					}
					if b.Type == "tool_use" {
						asst.ToolCalls = append(asst.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Args: b.Input})
					} else {
						asst.Text += b.Text
					}
				case b.Type == "tool_result":
					var text strings.Builder
					for _, c := range b.Content {
						text.WriteString(c.Text)
					}
					out = append(out, Message{Role: RoleTool, ToolCallID: b.ToolUseID, Text: text.String(), IsError: b.IsError})
				default:
					out = append(out, Message{Role: RoleUser, Text: b.Text})
				}
			}
		}
		return out
	},
}

var dialects = []dialect{openaiDialect, anthropicDialect}

func call(id, name, args string) ToolCall {
	return ToolCall{ID: id, Name: name, Args: json.RawMessage(args)}
}

// fakeEnv records what the agent asked of the team and plays scripted plan
// decisions.
type fakeEnv struct {
	mu        sync.Mutex
	decisions []bool   // the next plan decisions, in order
	feedback  []string // and their feedback
	plans     []string
	sent      []string
	shutdowns []string
	activity  []string
	usage     Usage
	onSend    func(to, content string)
}

func (e *fakeEnv) SubmitPlan(ctx context.Context, plan string) (bool, string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.plans = append(e.plans, plan)
	if len(e.decisions) == 0 {
		return false, "", fmt.Errorf("no decision scripted")
	}
	ok, fb := e.decisions[0], e.feedback[0]
	e.decisions, e.feedback = e.decisions[1:], e.feedback[1:]
	return ok, fb, nil
}

func (e *fakeEnv) Send(to, content string) error {
	e.mu.Lock()
	e.sent = append(e.sent, to+": "+content)
	hook := e.onSend
	e.mu.Unlock()
	if hook != nil {
		hook(to, content)
	}
	return nil
}

func (e *fakeEnv) Broadcast(content string) error { return e.Send("*", content) }

func (e *fakeEnv) Call(ctx context.Context, target, action, prompt string, timeoutSec int) (string, error) {
	return `{"status":"ok","summary":"done"}`, nil
}

func (e *fakeEnv) ShutdownResponse(requestID string, approve bool, reason string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.shutdowns = append(e.shutdowns, fmt.Sprintf("%s %v %s", requestID, approve, reason))
	return nil
}

func (e *fakeEnv) Activity(text string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.activity = append(e.activity, text)
}

func (e *fakeEnv) Usage(u Usage) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.usage.In += u.In
	e.usage.Out += u.Out
}

// transcript collects entries and checks each holds no key.
type transcript struct {
	t       *testing.T
	mu      sync.Mutex
	entries []Entry
}

func (tr *transcript) add(e Entry) {
	b, err := json.Marshal(e)
	if err != nil {
		tr.t.Errorf("transcript entry does not marshal: %v", err)
	}
	if strings.Contains(string(b), testKey) {
		tr.t.Errorf("the key is in a transcript entry: %s", b)
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.entries = append(tr.entries, e)
}

func (tr *transcript) kinds() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var k []string
	for _, e := range tr.entries {
		k = append(k, e.Kind)
	}
	return k
}

// newTestAgent builds an agent on the fake server with a work directory.
func newTestAgent(t *testing.T, f *fakeServer, env *fakeEnv, tune func(*Config)) (*Agent, *transcript) {
	t.Helper()
	tr := &transcript{t: t}
	cfg := Config{
		Model: f.model(t), Name: "coder", Role: "writes the change", Teammates: []string{"lead", "reviewer"},
		Tools: KnownTools, Dir: t.TempDir(), Env: env, Transcript: tr.add,
		Retry: Backoff{Base: time.Millisecond, Max: 5 * time.Millisecond, Attempts: 4},
	}
	if tune != nil {
		tune(&cfg)
	}
	a, err := NewAgent(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a, tr
}

// noKey fails when err's text holds the key.
func noKey(t *testing.T, err error) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), testKey) {
		t.Errorf("the key is in an error: %v", err)
	}
}

// toolResult finds the tool result for callID in a request's messages.
func toolResult(t *testing.T, msgs []Message, callID string) Message {
	t.Helper()
	for _, m := range msgs {
		if m.Role == RoleTool && m.ToolCallID == callID {
			return m
		}
	}
	t.Fatalf("no tool result for %s in %+v", callID, msgs)
	return Message{}
}
