package a2a

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"huddle/ipc/blueprint"
	"huddle/ipc/trace"
)

// Client calls an A2A v1.0 agent over its JSON-RPC binding: any
// implementation, huddle serve --a2a among them. It reads the agent's card
// once, to find the v1.0 JSON-RPC interface and how to send the key.
type Client struct {
	// URL is the agent's base URL (its card is URL + CardPath) or the
	// card's own URL (ending in .json).
	URL string
	// APIKey, when set, is sent as the card's security scheme asks: an
	// API key header (X-API-Key by default) or an HTTP Bearer token.
	APIKey string
	// HTTP makes the requests; nil: one that follows no redirect (it
	// would carry the key to another host). Streams are not timed out by
	// it: their context bounds them.
	HTTP *http.Client

	once     sync.Mutex
	card     *AgentCard
	endpoint string
	ids      atomic.Int64
}

var defaultHTTP = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return defaultHTTP
}

// cardURL is where the agent's card is.
func (c *Client) cardURL() string {
	if strings.HasSuffix(c.URL, ".json") {
		return c.URL
	}
	return strings.TrimRight(c.URL, "/") + CardPath
}

// Card fetches the agent's card, once; later calls return it.
func (c *Client) Card(ctx context.Context) (*AgentCard, error) {
	c.once.Lock()
	defer c.once.Unlock()
	if c.card != nil {
		return c.card, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.cardURL(), nil)
	if err != nil {
		return nil, fmt.Errorf("a2a: agent card %s: %w", redactURL(c.cardURL()), err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http().Do(req)
	if err != nil {
		return nil, fmt.Errorf("a2a: agent card %s: %w", redactURL(c.cardURL()), causeOf(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, blueprint.MaxBody+1))
	if err != nil {
		return nil, fmt.Errorf("a2a: agent card %s: %w", redactURL(c.cardURL()), err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("a2a: agent card %s: HTTP %d: %s", redactURL(c.cardURL()), resp.StatusCode, clip(string(body)))
	}
	var card AgentCard
	if err := json.Unmarshal(body, &card); err != nil {
		return nil, fmt.Errorf("a2a: agent card %s is not an Agent Card: %v", redactURL(c.cardURL()), err)
	}
	for _, in := range card.SupportedInterfaces {
		if in.ProtocolBinding == BindingJSONRPC && majorMinor(in.ProtocolVersion) == Version {
			c.endpoint = in.URL
			break
		}
	}
	if c.endpoint == "" {
		return nil, fmt.Errorf("a2a: the agent at %s offers no JSON-RPC interface of A2A %s (its interfaces: %s)",
			redactURL(c.cardURL()), Version, interfaces(card.SupportedInterfaces))
	}
	c.card = &card
	return c.card, nil
}

func interfaces(in []AgentInterface) string {
	var s []string
	for _, i := range in {
		s = append(s, i.ProtocolBinding+" "+i.ProtocolVersion)
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// authorize sets the key as the card's security scheme asks.
func (c *Client) authorize(h http.Header) {
	if c.APIKey == "" {
		return
	}
	if c.card != nil {
		for _, sc := range c.card.SecuritySchemes {
			switch {
			case sc.APIKey != nil && strings.EqualFold(sc.APIKey.Location, "header") && sc.APIKey.Name != "":
				h.Set(sc.APIKey.Name, c.APIKey)
				return
			case sc.HTTPAuth != nil && strings.EqualFold(sc.HTTPAuth.Scheme, "bearer"):
				h.Set("Authorization", "Bearer "+c.APIKey)
				return
			}
		}
	}
	h.Set("X-API-Key", c.APIKey)
}

// Trace is the chain a request belongs to, for its W3C traceparent.
type Trace struct{ CorrelationID, RequestID string }

// post sends one JSON-RPC request and returns the response (the caller
// closes it).
func (c *Client) post(ctx context.Context, method string, params any, accept string, tr Trace) (*http.Response, json.RawMessage, error) {
	if _, err := c.Card(ctx); err != nil {
		return nil, nil, err
	}
	id := json.RawMessage(fmt.Sprint(c.ids.Add(1)))
	b, err := json.Marshal(rpcRequest{JSONRPC: "2.0", ID: id, Method: method, Params: mustJSON(params)})
	if err != nil {
		return nil, nil, fmt.Errorf("a2a: %s: %w", method, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(b))
	if err != nil {
		return nil, nil, fmt.Errorf("a2a: %s %s: %w", method, redactURL(c.endpoint), err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	req.Header.Set(VersionHeader, Version)
	c.authorize(req.Header)
	trace.SetTraceparent(ctx, req.Header, tr.CorrelationID, tr.RequestID)
	resp, err := c.http().Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("a2a: %s %s: %w", method, redactURL(c.endpoint), causeOf(err))
	}
	return resp, id, nil
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}

// call makes a JSON-RPC call and decodes its result into out; an error
// answer is an *Error.
func (c *Client) call(ctx context.Context, method string, params, out any, tr Trace) error {
	resp, _, err := c.post(ctx, method, params, "application/json", tr)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, blueprint.MaxBody+1))
	if err != nil {
		return fmt.Errorf("a2a: %s: %w", method, err)
	}
	var r struct {
		Result json.RawMessage `json:"result"`
		Error  *Error          `json:"error"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return fmt.Errorf("a2a: %s: HTTP %d, not a JSON-RPC response: %s", method, resp.StatusCode, clip(string(body)))
	}
	if r.Error != nil {
		return c.scrub(r.Error)
	}
	if err := json.Unmarshal(r.Result, out); err != nil {
		return fmt.Errorf("a2a: %s: the result does not decode: %v", method, err)
	}
	return nil
}

// scrub keeps the key out of an error a server echoes back.
func (c *Client) scrub(e *Error) *Error {
	if c.APIKey != "" && strings.Contains(e.Message, c.APIKey) {
		e.Message = strings.ReplaceAll(e.Message, c.APIKey, "***")
	}
	return e
}

// Send is SendMessage: the task (or message) the agent answers with.
func (c *Client) Send(ctx context.Context, p SendMessageRequest, tr Trace) (SendMessageResponse, error) {
	var out SendMessageResponse
	err := c.call(ctx, MethodSend, p, &out, tr)
	return out, err
}

// GetTask reads a task.
func (c *Client) GetTask(ctx context.Context, id string) (Task, error) {
	var t Task
	err := c.call(ctx, MethodGet, GetTaskRequest{ID: id}, &t, Trace{})
	return t, err
}

// CancelTask cancels a task.
func (c *Client) CancelTask(ctx context.Context, id string) (Task, error) {
	var t Task
	err := c.call(ctx, MethodCancel, TaskIDRequest{ID: id}, &t, Trace{})
	return t, err
}

// ListTasks lists tasks.
func (c *Client) ListTasks(ctx context.Context, p ListTasksRequest) (ListTasksResponse, error) {
	var out ListTasksResponse
	err := c.call(ctx, MethodList, p, &out, Trace{})
	return out, err
}

// Stream sends a streaming method (SendStreamingMessage, SubscribeToTask)
// and hands each event to fn, in order, until the stream ends (nil), fn
// returns an error (that error) or an event is an error (an *Error).
func (c *Client) Stream(ctx context.Context, method string, params any, tr Trace, fn func(StreamResponse) error) error {
	resp, id, err := c.post(ctx, method, params, "text/event-stream", tr)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, blueprint.MaxBody))
		var r struct {
			Error *Error `json:"error"`
		}
		if json.Unmarshal(body, &r) == nil && r.Error != nil {
			return c.scrub(r.Error)
		}
		return fmt.Errorf("a2a: %s: HTTP %d %s, not an event stream: %s", method, resp.StatusCode, ct, clip(string(body)))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), blueprint.MaxBody)
	var data strings.Builder
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "data:"):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.WriteString(strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
			continue
		case line != "":
			continue // a comment, an event name, an id
		}
		if data.Len() == 0 {
			continue
		}
		var r struct {
			ID     json.RawMessage `json:"id"`
			Result *StreamResponse `json:"result"`
			Error  *Error          `json:"error"`
		}
		raw := data.String()
		data.Reset()
		if err := json.Unmarshal([]byte(raw), &r); err != nil {
			return fmt.Errorf("a2a: %s: an event is not a JSON-RPC response: %s", method, clip(raw))
		}
		if r.Error != nil {
			return c.scrub(r.Error)
		}
		if r.Result == nil {
			return fmt.Errorf("a2a: %s: an event without a result: %s", method, clip(raw))
		}
		if len(r.ID) > 0 && !bytes.Equal(r.ID, id) {
			return fmt.Errorf("a2a: %s: an event answers request %s, not %s", method, r.ID, id)
		}
		if err := fn(*r.Result); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		return fmt.Errorf("a2a: %s: the stream broke: %w", method, err)
	}
	return ctx.Err()
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// redactURL hides a URL's user info.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	u.User = url.User("***")
	return u.String()
}

// causeOf strips the url.Error wrapping, whose text repeats the URL.
func causeOf(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
