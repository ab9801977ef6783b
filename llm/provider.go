package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ProviderConfig says which chat API a Model speaks and where. APIKey is
// the key itself (the runtime reads it from the variable api_key_env
// names); "" is a local server that wants none.
type ProviderConfig struct {
	Provider   string // "openai" | "anthropic"
	BaseURL    string // "": the provider's own endpoint
	Model      string
	APIKey     string
	HTTPClient *http.Client // nil: a client of its own
}

// NewModel returns the Model for pc.Provider. The SDKs' own retries are off:
// the Agent retries, so that it can show each attempt and honour the cap.
func NewModel(pc ProviderConfig) (Model, error) {
	if pc.Model == "" {
		return nil, errors.New("llm: no model named")
	}
	switch pc.Provider {
	case "openai":
		return newOpenAIModel(pc), nil
	case "anthropic":
		return newAnthropicModel(pc), nil
	default:
		return nil, fmt.Errorf("llm: unknown provider %q (known: openai, anthropic)", pc.Provider)
	}
}

func httpClientOf(pc ProviderConfig) *http.Client {
	if pc.HTTPClient != nil {
		return pc.HTTPClient
	}
	return &http.Client{}
}

// apiError builds the provider-neutral error from what a provider answered.
// The message names what is wrong (the key, the model) and never holds the
// key, even if a server echoed it back.
func apiError(pc ProviderConfig, status int, header http.Header, detail string, contextFull bool) *APIError {
	var what string
	switch {
	case status == http.StatusUnauthorized:
		what = "the provider refused the API key"
	case status == http.StatusForbidden:
		what = "the API key may not use this model"
	case status == http.StatusNotFound:
		what = fmt.Sprintf("model %q not found at %s", pc.Model, endpointName(pc))
	case status == http.StatusTooManyRequests:
		what = "rate limited"
	case status >= 500:
		what = "the provider failed"
	case contextFull:
		what = "the conversation no longer fits the context window"
	default:
		what = "the provider refused the request"
	}
	msg := fmt.Sprintf("%s %s (%d)", pc.Provider, what, status)
	if detail = strings.TrimSpace(detail); detail != "" {
		msg += ": " + truncate(detail, 300)
	}
	return &APIError{
		Status:      status,
		RetryAfter:  retryAfter(header, time.Now()),
		Message:     redact(msg, pc.APIKey),
		ContextFull: contextFull,
	}
}

// transportError is a failure with no HTTP answer (refused connection,
// reset): Status 0, retried like a 5xx.
func transportError(pc ProviderConfig, err error) *APIError {
	return &APIError{Message: redact(fmt.Sprintf("%s at %s: %v", pc.Provider, endpointName(pc), err), pc.APIKey)}
}

func endpointName(pc ProviderConfig) string {
	if pc.BaseURL == "" {
		return "the provider's endpoint"
	}
	return pc.BaseURL
}

// redact removes the key from text a server or a transport produced.
func redact(text, key string) string {
	if key == "" {
		return text
	}
	return strings.ReplaceAll(text, key, "[redacted]")
}

// retryAfter reads how long the provider asks to wait: retry-after-ms (sent
// by OpenAI and Anthropic), else Retry-After in seconds or as an HTTP date.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// saysContextFull recognises the ways servers say the prompt is too long:
// OpenAI's code context_length_exceeded, Anthropic's "prompt is too long",
// vLLM's "maximum context length", llama.cpp's exceed_context_size_error.
func saysContextFull(status int, code, text string) bool {
	if status != http.StatusBadRequest && status != http.StatusRequestEntityTooLarge {
		return false
	}
	if code == "context_length_exceeded" || code == "exceed_context_size_error" {
		return true
	}
	t := strings.ToLower(text)
	for _, s := range []string{"prompt is too long", "maximum context length", "context length", "context window", "exceeds the available context", "context_length_exceeded"} {
		if strings.Contains(t, s) {
			return true
		}
	}
	return false
}

// validArgs keeps a model's arguments as JSON: text that is not JSON becomes
// a JSON string, so the transcript stays valid and the tool sees a
// malformed argument it refuses.
func validArgs(raw string) json.RawMessage {
	if strings.TrimSpace(raw) == "" {
		return json.RawMessage("{}")
	}
	if json.Valid([]byte(raw)) {
		return json.RawMessage(raw)
	}
	b, _ := json.Marshal(raw)
	return b
}

// schemaOf splits a tool's JSON schema into what the SDKs want.
func schemaOf(params json.RawMessage) (props map[string]any, required []string) {
	var s struct {
		Properties map[string]any `json:"properties"`
		Required   []string       `json:"required"`
	}
	_ = json.Unmarshal(params, &s)
	if s.Properties == nil {
		s.Properties = map[string]any{}
	}
	return s.Properties, s.Required
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
