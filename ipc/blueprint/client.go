package blueprint

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	randv2 "math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"huddle/ipc/trace"
)

// CodeInvalidResponse is the client's code for an answer that is not the
// protocol: a body that does not decode, a non-2xx without an error envelope,
// a body over 1 MiB. Like CodeUnreachable it never comes from a server.
const CodeInvalidResponse = "INVALID_RESPONSE"

// MaxHintDelay bounds a server's retry.suggested_delay_ms, so a wild hint
// cannot park a client for hours (its context bounds it anyway).
const MaxHintDelay = 5 * time.Minute

// Client calls a Blueprint server: Invoke, then Status until the execution
// is final, then Result (Call does all three).
//
// Every request is retried on connection errors (dial refused, reset, EOF,
// an HTTP.Timeout) with Backoff, up to Backoff.Attempts, then fails with an
// *APIError ENDPOINT_UNREACHABLE. A 429 or 503 carrying a retry hint is
// retried after the hinted delay, up to the hint's max_attempts. Every other
// failure is an *APIError, except the context ending, which is ctx.Err().
// The API key never appears in an error: it is sent only as X-API-Key and
// scrubbed from anything a server echoes back.
type Client struct {
	// BaseURL is the server's root, e.g. http://127.0.0.1:7070; the client
	// appends /invoke, /status/{id}, /result/{id}, /cancel/{id}.
	BaseURL string
	// APIKey, when set, is sent as the X-API-Key header.
	APIKey string
	// HTTP makes the requests. nil: a client with a 30 s per-request
	// timeout that does not follow redirects (a redirect would carry the
	// API key to another host). A client given here owns its own policy.
	HTTP *http.Client
	// Backoff paces connection retries and status polling; zero fields take
	// the defaults (see Backoff).
	Backoff Backoff
	// Sleep waits d or until ctx ends; nil is a timer. Tests record delays
	// through it.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Backoff is capped exponential backoff with jitter. Zero fields take the
// defaults: Initial 50 ms, Max 2 s, Factor 2, Jitter 0.2, Attempts 5. A
// negative Jitter turns jitter off.
type Backoff struct {
	// Initial is the first delay (the first status poll, the first
	// connection retry).
	Initial time.Duration
	// Max caps every delay, jitter included.
	Max time.Duration
	// Factor multiplies the delay at each attempt (values below 1 mean 2).
	Factor float64
	// Jitter is the fraction (0..1) by which a delay varies either way.
	Jitter float64
	// Attempts is how many times a request is tried on connection errors
	// before ENDPOINT_UNREACHABLE (and the hinted-retry limit when a hint
	// names none).
	Attempts int
}

// The defaults of Backoff.
const (
	DefaultInitial  = 50 * time.Millisecond
	DefaultMax      = 2 * time.Second
	DefaultFactor   = 2.0
	DefaultJitter   = 0.2
	DefaultAttempts = 5
)

func (b Backoff) withDefaults() Backoff {
	if b.Initial <= 0 {
		b.Initial = DefaultInitial
	}
	if b.Max <= 0 {
		b.Max = DefaultMax
	}
	if b.Factor < 1 || math.IsNaN(b.Factor) || math.IsInf(b.Factor, 0) {
		b.Factor = DefaultFactor
	}
	switch {
	case b.Jitter == 0 || math.IsNaN(b.Jitter):
		b.Jitter = DefaultJitter
	case b.Jitter < 0:
		b.Jitter = 0
	case b.Jitter > 1:
		b.Jitter = 1
	}
	if b.Attempts <= 0 {
		b.Attempts = DefaultAttempts
	}
	return b
}

// Delay is the wait before retry number attempt (0 is the first):
// Initial×Factor^attempt, capped at Max, varied by ±Jitter and capped at Max
// again, so a capped delay lies in [Max×(1−Jitter), Max]. rnd returns a
// number in [0, 1); nil is math/rand.
func (b Backoff) Delay(attempt int, rnd func() float64) time.Duration {
	b = b.withDefaults()
	if attempt < 0 {
		attempt = 0
	}
	if rnd == nil {
		rnd = randv2.Float64
	}
	base := float64(b.Initial) * math.Pow(b.Factor, float64(attempt))
	if base > float64(b.Max) || math.IsInf(base, 0) {
		base = float64(b.Max)
	}
	d := base * (1 + b.Jitter*(2*rnd()-1))
	if d > float64(b.Max) {
		d = float64(b.Max)
	}
	return time.Duration(d)
}

// APIError is a failure the protocol names: a server's error envelope, a
// final state other than completed, or a client-side ENDPOINT_UNREACHABLE /
// INVALID_RESPONSE.
type APIError struct {
	// HTTPStatus is the answer's status; 0 when there was no answer.
	HTTPStatus int
	Code       string
	Message    string
	Details    map[string]any
	// Retry is the server's hint, when it gave one (e.g. with
	// EXECUTION_TIMEOUT: the caller may invoke again after the delay).
	Retry *Retry
	// ExecutionID is the execution the error is about, when known.
	ExecutionID string
	// State is the execution's state when the answer named it (failed,
	// timeout, cancelled).
	State string
}

func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString(e.Code)
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.HTTPStatus != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.HTTPStatus)
	}
	if e.Retry != nil {
		fmt.Fprintf(&b, "; retry after %d ms, at most %d attempts", e.Retry.SuggestedDelayMS, e.Retry.MaxAttempts)
	}
	return b.String()
}

// Envelope is the error as the protocol's envelope, for printing.
func (e *APIError) Envelope() Envelope {
	return Envelope{ExecutionID: e.ExecutionID, Status: e.State,
		Error: ErrorBody{Code: e.Code, Message: e.Message, Details: e.Details, Retry: e.Retry}}
}

// Invoke starts an execution: POST /invoke. idempotencyKey is sent as
// Idempotency-Key on every try of this one invocation, so a retry after a
// lost answer never starts a second execution; "" makes a fresh key.
func (c *Client) Invoke(ctx context.Context, req InvokeRequest, idempotencyKey string) (Accepted, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return Accepted{}, fmt.Errorf("blueprint: invoke: encode the request: %w", err)
	}
	if idempotencyKey == "" {
		idempotencyKey = newIdempotencyKey()
	}
	cl := call{method: http.MethodPost, path: "/invoke", body: body, idemKey: idempotencyKey,
		chain: req.Context.TraceID, parent: req.Context.ParentRequestID}
	if req.Caller.Credentials != nil {
		cl.secret = req.Caller.Credentials.APIKey
	}
	a, err := c.do(ctx, cl)
	if err != nil {
		return Accepted{}, err
	}
	if !a.ok() {
		return Accepted{}, c.apiError(a, cl.secret)
	}
	var acc Accepted
	if err := json.Unmarshal(a.body, &acc); err != nil || acc.ExecutionID == "" {
		return Accepted{}, c.invalid(a, "an invoke answer without an execution_id")
	}
	return acc, nil
}

// Status asks where an execution is: GET /status/{id}.
func (c *Client) Status(ctx context.Context, id string) (Status, error) {
	if id == "" {
		return Status{}, errors.New("blueprint: status: empty execution id")
	}
	a, err := c.do(ctx, call{method: http.MethodGet, path: "/status/" + url.PathEscape(id)})
	if err != nil {
		return Status{}, err
	}
	if !a.ok() {
		return Status{}, withExecution(c.apiError(a, ""), id)
	}
	var st Status
	if err := json.Unmarshal(a.body, &st); err != nil || st.Status == "" {
		return Status{}, withExecution(c.invalid(a, "a status answer without a status"), id)
	}
	st.Error = c.redactError(st.Error)
	return st, nil
}

// redactError keeps the key out of an error a status carries, as apiError
// does for the envelope's.
func (c *Client) redactError(e *ErrorBody) *ErrorBody {
	if e == nil {
		return nil
	}
	details, _ := c.redactValue(e.Details, "").(map[string]any)
	return &ErrorBody{Code: clip(c.redact(e.Code, ""), 64), Message: c.redact(e.Message, ""), Details: details, Retry: e.Retry}
}

// Result fetches an execution's result: GET /result/{id}. While the
// execution runs (202) it returns the status and a zero Result; a failed,
// timed-out or cancelled execution is an *APIError from the envelope
// (EXECUTION_TIMEOUT keeps its retry hint).
func (c *Client) Result(ctx context.Context, id string) (Result, *Status, error) {
	if id == "" {
		return Result{}, nil, errors.New("blueprint: result: empty execution id")
	}
	a, err := c.do(ctx, call{method: http.MethodGet, path: "/result/" + url.PathEscape(id)})
	if err != nil {
		return Result{}, nil, err
	}
	switch {
	case a.status == http.StatusAccepted:
		var st Status
		if err := json.Unmarshal(a.body, &st); err != nil {
			return Result{}, nil, withExecution(c.invalid(a, "a pending result without a status"), id)
		}
		return Result{}, &st, nil
	case !a.ok():
		return Result{}, nil, withExecution(c.apiError(a, ""), id)
	}
	var res Result
	if err := json.Unmarshal(a.body, &res); err != nil {
		return Result{}, nil, withExecution(c.invalid(a, "a result that does not decode"), id)
	}
	return res, nil, nil
}

// Cancel asks the server to stop an execution: POST /cancel/{id}.
func (c *Client) Cancel(ctx context.Context, id string) error {
	if id == "" {
		return errors.New("blueprint: cancel: empty execution id")
	}
	a, err := c.do(ctx, call{method: http.MethodPost, path: "/cancel/" + url.PathEscape(id)})
	if err != nil {
		return err
	}
	if !a.ok() {
		return withExecution(c.apiError(a, ""), id)
	}
	return nil
}

// Wait polls GET /status with capped, jittered exponential backoff until
// the execution is final, then returns GET /result: the Result when it
// completed, otherwise an *APIError (EXECUTION_FAILED, EXECUTION_TIMEOUT
// with its retry hint, EXECUTION_CANCELLED, as the server sends them). It
// never invokes again by itself. ctx ending returns ctx.Err().
func (c *Client) Wait(ctx context.Context, id string) (Result, error) {
	b := c.Backoff.withDefaults()
	for poll := 0; ; poll++ {
		st, err := c.Status(ctx, id)
		if err != nil {
			return Result{}, err
		}
		switch {
		case Final(st.Status):
			res, pending, err := c.Result(ctx, id)
			if err != nil {
				return Result{}, err
			}
			if pending == nil {
				return finished(res, id)
			}
			// Final by /status but not yet by /result: poll on.
		case st.Status != StateAccepted && st.Status != StateRunning:
			return Result{}, &APIError{HTTPStatus: http.StatusOK, Code: CodeInvalidResponse, ExecutionID: id,
				Message: fmt.Sprintf("execution %s is in unknown state %q", id, clip(c.redact(st.Status, ""), 64))}
		}
		if err := c.sleep(ctx, b.Delay(poll, nil)); err != nil {
			return Result{}, err
		}
	}
}

// cancelGrace bounds the best-effort cancel Call sends after its context
// ended.
const cancelGrace = 2 * time.Second

// Call invokes and waits. When ctx ends before the execution is final, Call
// asks the server to cancel it (best effort, within 2 s) and returns
// ctx.Err().
func (c *Client) Call(ctx context.Context, req InvokeRequest, idempotencyKey string) (Result, error) {
	acc, err := c.Invoke(ctx, req, idempotencyKey)
	if err != nil {
		return Result{}, err
	}
	res, err := c.Wait(ctx, acc.ExecutionID)
	if err != nil && ctx.Err() != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelGrace)
		defer cancel()
		_ = c.Cancel(cctx, acc.ExecutionID)
	}
	return res, err
}

// finished turns a /result answer into the Result or the error of its state.
func finished(res Result, id string) (Result, error) {
	code := ""
	switch res.Status {
	case StateCompleted, "":
		return res, nil
	case StateFailed:
		code = CodeFailed
	case StateTimeout:
		code = CodeTimeout
	case StateCancelled:
		code = CodeCancelled
	default:
		code = CodeInvalidResponse
	}
	if res.ExecutionID != "" {
		id = res.ExecutionID
	}
	return Result{}, &APIError{HTTPStatus: http.StatusOK, Code: code, ExecutionID: id, State: res.Status,
		Message: fmt.Sprintf("execution %s ended %s", id, clip(res.Status, 64))}
}

// call is one logical request, tried as often as the retry rules allow.
type call struct {
	method, path string
	body         []byte
	idemKey      string
	// secret is a body credential, kept out of errors like the API key.
	secret string
	// chain and parent, the correlation id and the calling request's id,
	// make the W3C traceparent of an invoke (trace.SetTraceparent).
	chain, parent string
}

// answer is a response read in full.
type answer struct {
	status int
	body   []byte
	url    string // redacted, for messages
}

func (a answer) ok() bool { return a.status >= 200 && a.status < 300 }

// errConnection marks a try that got no answer, so it may be retried.
type errConnection struct{ err error }

func (e *errConnection) Error() string { return e.err.Error() }

func (c *Client) do(ctx context.Context, cl call) (answer, error) {
	b := c.Backoff.withDefaults()
	target := strings.TrimRight(c.BaseURL, "/") + cl.path
	shown := redactURL(target)
	failures, refusals := 0, 0
	for {
		a, err := c.once(ctx, cl, target)
		a.url = shown
		if err == nil {
			if a.status != http.StatusTooManyRequests && a.status != http.StatusServiceUnavailable {
				return a, nil
			}
			env, ok := decodeEnvelope(a.body)
			if !ok || env.Error.Retry == nil {
				return a, nil
			}
			refusals++
			limit := env.Error.Retry.MaxAttempts
			if limit <= 0 {
				limit = b.Attempts
			}
			if refusals >= limit {
				return a, nil
			}
			d := hintDelay(env.Error.Retry)
			if d <= 0 {
				d = b.Delay(refusals-1, nil)
			}
			if err := c.sleep(ctx, d); err != nil {
				return answer{}, err
			}
			failures = 0
			continue
		}
		if ctx.Err() != nil {
			return answer{}, ctx.Err()
		}
		var ce *errConnection
		if !errors.As(err, &ce) {
			return answer{}, err
		}
		failures++
		if failures >= b.Attempts {
			return answer{}, &APIError{Code: CodeUnreachable,
				Message: c.redact(fmt.Sprintf("%s %s: no answer after %d attempts: %v", cl.method, shown, failures, causeOf(ce.err)), cl.secret),
				Details: map[string]any{"url": shown, "attempts": failures}}
		}
		if err := c.sleep(ctx, b.Delay(failures-1, nil)); err != nil {
			return answer{}, err
		}
	}
}

// once makes one try. An *errConnection means no answer came.
func (c *Client) once(ctx context.Context, cl call, target string) (answer, error) {
	var body io.Reader
	if cl.body != nil {
		body = bytes.NewReader(cl.body)
	}
	req, err := http.NewRequestWithContext(ctx, cl.method, target, body)
	if err != nil {
		return answer{}, fmt.Errorf("blueprint: %s %s: %s", cl.method, redactURL(target), c.redact(causeOf(err).Error(), cl.secret))
	}
	req.Header.Set("Accept", "application/json")
	// Every POST says JSON, a body-less cancel too: a server without keys
	// refuses any other POST as a browser's (refuseBrowsers).
	if cl.body != nil || cl.method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.APIKey != "" {
		req.Header.Set("X-API-Key", c.APIKey)
	}
	if cl.idemKey != "" {
		req.Header.Set("Idempotency-Key", cl.idemKey)
	}
	trace.SetTraceparent(ctx, req.Header, cl.chain, cl.parent)
	hc := c.HTTP
	if hc == nil {
		hc = defaultHTTP
	}
	resp, err := hc.Do(req)
	if err != nil {
		return answer{}, &errConnection{err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody+1))
	if err != nil {
		return answer{}, &errConnection{err}
	}
	if len(data) > MaxBody {
		return answer{}, &APIError{HTTPStatus: resp.StatusCode, Code: CodeInvalidResponse,
			Message: fmt.Sprintf("%s %s: the answer exceeds 1 MiB", cl.method, redactURL(target))}
	}
	return answer{status: resp.StatusCode, body: data}, nil
}

var defaultHTTP = &http.Client{
	Transport: defaultTransport(),
	Timeout:   30 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	},
}

// defaultTransport is net/http's default transport keeping up to 64 idle
// connections per server instead of 2: concurrent calls to one server (a
// remote target's callers, up to huddle serve's --max-running of 64) would
// otherwise close and redial a connection on most requests.
func defaultTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	return t
}

func (c *Client) sleep(ctx context.Context, d time.Duration) error {
	sleep := c.Sleep
	if sleep == nil {
		sleep = sleepCtx
	}
	if err := sleep(ctx, d); err != nil {
		return err
	}
	return ctx.Err()
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// hintDelay is a hint's delay, at most MaxHintDelay. It is not capped by
// Backoff.Max: the server knows its load better than the client's guess.
func hintDelay(r *Retry) time.Duration {
	if r.SuggestedDelayMS <= 0 {
		return 0
	}
	if r.SuggestedDelayMS >= MaxHintDelay.Milliseconds() {
		return MaxHintDelay
	}
	return time.Duration(r.SuggestedDelayMS) * time.Millisecond
}

func decodeEnvelope(body []byte) (Envelope, bool) {
	var env Envelope
	if err := json.Unmarshal(body, &env); err != nil || env.Error.Code == "" {
		return Envelope{}, false
	}
	return env, true
}

// apiError is a non-2xx answer as an *APIError: the envelope's, or
// INVALID_RESPONSE when there is none.
func (c *Client) apiError(a answer, secret string) *APIError {
	env, ok := decodeEnvelope(a.body)
	if !ok {
		return c.invalid(a, "HTTP "+http.StatusText(a.status)+" without an error envelope")
	}
	details, _ := c.redactValue(env.Error.Details, secret).(map[string]any)
	return &APIError{HTTPStatus: a.status, Code: clip(c.redact(env.Error.Code, secret), 64),
		Message: c.redact(env.Error.Message, secret), Details: details, Retry: env.Error.Retry,
		ExecutionID: env.ExecutionID, State: env.Status}
}

// invalid is INVALID_RESPONSE for answer a, quoting the start of its body.
func (c *Client) invalid(a answer, what string) *APIError {
	return &APIError{HTTPStatus: a.status, Code: CodeInvalidResponse,
		Message: c.redact(fmt.Sprintf("%s answered %s: %q", a.url, what, clip(string(a.body), 200)), "")}
}

func withExecution(e *APIError, id string) *APIError {
	if e.ExecutionID == "" {
		e.ExecutionID = id
	}
	return e
}

// redact scrubs the API key and secret from s.
func (c *Client) redact(s, secret string) string {
	for _, k := range []string{c.APIKey, secret} {
		if k != "" {
			s = strings.ReplaceAll(s, k, "[redacted]")
		}
	}
	return s
}

func (c *Client) redactValue(v any, secret string) any {
	switch v := v.(type) {
	case string:
		return c.redact(v, secret)
	case map[string]any:
		if v == nil {
			return v
		}
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[c.redact(k, secret)] = c.redactValue(x, secret)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = c.redactValue(x, secret)
		}
		return out
	}
	return v
}

// redactURL is u without a password, for messages.
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable URL)"
	}
	return p.Redacted()
}

// causeOf strips a *url.Error, whose text repeats the unredacted URL.
func causeOf(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// clip cuts s to at most n bytes, on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func newIdempotencyKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "idem-" + hex.EncodeToString(b[:])
}
