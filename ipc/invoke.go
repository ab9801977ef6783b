package ipc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"huddle/ipc/trace"
	"huddle/protocol"
)

// Target runs an invocation somewhere: a teammate's inbox, an external
// command, a remote huddle. It returns the target's answer as it came; the
// Caller checks it. An *InvalidResponse error is the target's fault
// (INVALID_RESPONSE); any other error is IPC_ERROR; ctx ending is TIMEOUT.
type Target interface {
	Invoke(ctx context.Context, req protocol.InvocationRequest) (protocol.InvocationResult, error)
}

// InvalidResponse says what was wrong with a target's answer.
type InvalidResponse struct {
	Reason string
	// Answer is what was refused, cut by trace.Clip ("" when there was
	// nothing to show): the trace keeps it so the refusal can be checked.
	Answer string
}

func (e *InvalidResponse) Error() string { return "invalid response: " + e.Reason }

// Resolver finds the target a name stands for; a nil Target means there is
// none, and the reason (may be "") says why: TARGET_NOT_FOUND.
type Resolver func(name string) (t Target, reason string)

// Caller makes calls on behalf of one caller: it applies the caller's
// policy, resolves the target, enforces the deadline, checks the answer, and
// writes a start and an end span to traces.jsonl for every call.
type Caller struct {
	// TeamDir is where traces.jsonl is; "" writes no spans.
	TeamDir string
	// Policy is the caller's .puruto-ipc.json; when nil every call is an
	// IPC_ERROR saying PolicyErr.
	Policy    *Policy
	PolicyErr error
	Resolve   Resolver
	// OnSpanError is told when a span cannot be written (the call goes on).
	OnSpanError func(error)
	// AppendSpan, when set, records the spans instead of TeamDir's
	// traces.jsonl: a team whose state is in a store (docs/ARCHITECTURE.md, "The team directory and the store").
	AppendSpan func(trace.Span) error
}

// Call runs req and always returns a result: the target's answer, or an
// error result with the code of docs/ARCHITECTURE.md, "Invocation (Puruto IPC)" Missing ids are filled in: a new
// request id, a new correlation id (a chain starts here), and the policy's
// default timeout.
func (c *Caller) Call(ctx context.Context, req protocol.InvocationRequest) protocol.InvocationResult {
	if req.RequestID == "" {
		req.RequestID = protocol.NewInvocationID()
	}
	if req.CorrelationID == "" {
		req.CorrelationID = protocol.NewCorrelationID()
	}
	if req.TimeoutSec <= 0 {
		req.TimeoutSec = DefaultTimeoutSec
		if c.Policy != nil {
			req.TimeoutSec = c.Policy.DefaultTimeoutSec
		}
	}
	start := time.Now()
	c.span(trace.Start(req, start))
	res, remote := c.call(ctx, &req, start)
	res.DurationMS = time.Since(start).Milliseconds()
	c.span(trace.End(req, res, remote, false, time.Now()))
	return res
}

// Remote is implemented by targets on another huddle: their spans name the
// endpoint.
type Remote interface{ Remote() string }

func (c *Caller) call(ctx context.Context, req *protocol.InvocationRequest, start time.Time) (protocol.InvocationResult, string) {
	res, t := c.dispatch(ctx, req, start)
	if r, ok := t.(Remote); ok {
		return res, r.Remote()
	}
	return res, ""
}

func (c *Caller) dispatch(ctx context.Context, req *protocol.InvocationRequest, start time.Time) (protocol.InvocationResult, Target) {
	var t Target
	fail := func(code protocol.ErrorCode, msg string, details any) (protocol.InvocationResult, Target) {
		return protocol.Fail(req, 0, code, msg, details), t
	}
	if err := req.Validate(); err != nil {
		return fail(protocol.ErrIPC, err.Error(), nil)
	}
	if c.Policy == nil {
		msg := "no IPC policy for " + req.Caller
		if c.PolicyErr != nil {
			msg = c.PolicyErr.Error()
		}
		return fail(protocol.ErrIPC, msg, nil)
	}
	if d := c.Policy.Check(req.Target, req.Action, req.Hop); d != nil {
		return fail(protocol.ErrDenied, d.Message, map[string]any{"reason": d.Reason, "hop": req.Hop, "max_hops": c.Policy.MaxHops})
	}
	reason := ""
	if c.Resolve != nil {
		t, reason = c.Resolve(req.Target)
	}
	if t == nil {
		msg := fmt.Sprintf("TARGET_NOT_FOUND: no target `%s`", req.Target)
		if reason != "" {
			msg = fmt.Sprintf("TARGET_NOT_FOUND: `%s` %s", req.Target, reason)
		}
		return fail(protocol.ErrTargetNotFound, msg, nil)
	}
	timeout := time.Duration(req.TimeoutSec) * time.Second
	cctx, cancel := context.WithDeadline(ctx, start.Add(timeout))
	defer cancel()
	res, err := t.Invoke(cctx, *req)
	var invalid *InvalidResponse
	switch {
	case err == nil:
	case errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
		return fail(protocol.ErrTimeout, fmt.Sprintf("TIMEOUT: no answer from %s within %ds", req.Target, req.TimeoutSec), map[string]any{"timeout_sec": req.TimeoutSec})
	case ctx.Err() != nil:
		return fail(protocol.ErrIPC, "the call was cancelled: "+ctx.Err().Error(), nil)
	case errors.As(err, &invalid):
		return fail(protocol.ErrInvalidResponse, "INVALID_RESPONSE: "+invalid.Reason, InvalidDetails(invalid.Reason, invalid.Answer))
	default:
		return fail(protocol.ErrIPC, err.Error(), nil)
	}
	if reason := checkAnswer(req, &res); reason != "" {
		answer, _ := json.Marshal(res)
		return fail(protocol.ErrInvalidResponse, "INVALID_RESPONSE: "+reason, InvalidDetails(reason, string(answer)))
	}
	return res, t
}

// InvalidDetails are the details of an INVALID_RESPONSE error: why, and the
// answer that was refused (cut to the size a trace keeps).
func InvalidDetails(reason, answer string) map[string]any {
	d := map[string]any{"reason": reason}
	if answer != "" {
		d["answer"] = trace.Clip(answer)
	}
	return d
}

// checkAnswer says what is wrong with a target's answer to req, if anything.
func checkAnswer(req *protocol.InvocationRequest, res *protocol.InvocationResult) string {
	if res.RequestID != req.RequestID {
		return fmt.Sprintf("request_id %q does not match the request's %q", res.RequestID, req.RequestID)
	}
	if err := res.Validate(); err != nil {
		return err.Error()
	}
	if res.CorrelationID != req.CorrelationID {
		return fmt.Sprintf("correlation_id %q does not match the request's %q", res.CorrelationID, req.CorrelationID)
	}
	return ""
}

func (c *Caller) span(s trace.Span) {
	var err error
	switch {
	case c.AppendSpan != nil:
		err = c.AppendSpan(s)
	case c.TeamDir == "":
		return // no team directory: nowhere to trace
	default:
		err = trace.AppendSpan(c.TeamDir, s)
	}
	if err != nil && c.OnSpanError != nil {
		c.OnSpanError(err)
	}
}
