package blueprint

import (
	"context"
	"errors"
	"fmt"
	"time"

	"huddle/ipc"
	"huddle/protocol"
)

// Target is a member of another huddle, called over HTTP: an ipc.Target.
// The call keeps its correlation id (trace_id), its hop and its parent, so
// the chain continues in the other team's traces.
type Target struct {
	Client *Client
	Skill  string
}

// Remote names the endpoint in this call's spans.
func (t Target) Remote() string { return t.Client.BaseURL }

func (t Target) Invoke(ctx context.Context, req protocol.InvocationRequest) (protocol.InvocationResult, error) {
	ir := InvokeRequest{
		Caller:  Caller{ID: req.Caller, Type: "huddle"},
		SkillID: t.Skill,
		Inputs:  map[string]any{"prompt": req.Prompt},
		Context: Context{TraceID: req.CorrelationID, Hop: req.Hop, ParentRequestID: req.RequestID},
	}
	if dl, ok := ctx.Deadline(); ok {
		ir.Context.TimeoutMS = max(time.Until(dl).Milliseconds(), 1)
	}
	// The request id keys the POST, so a retried POST never runs twice.
	acc, err := t.Client.Invoke(ctx, ir, req.RequestID)
	if err != nil {
		return t.failed(req, err)
	}
	res, err := t.Client.Wait(ctx, acc.ExecutionID)
	if err != nil {
		if ctx.Err() != nil {
			// The caller gave up: the remote execution is cancelled too, so
			// its own onward calls stop.
			cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = t.Client.Cancel(cctx, acc.ExecutionID) // best effort: unanswered, it ends at its deadline
			cancel()
			return protocol.InvocationResult{}, ctx.Err()
		}
		return t.failed(req, err)
	}
	return protocol.InvocationResult{RequestID: req.RequestID, CorrelationID: req.CorrelationID, Status: protocol.ResultOK, Result: res.Output}, nil
}

// failed turns the remote's error into the error result of docs/ARCHITECTURE.md, "Invocation (Puruto IPC)"
func (t Target) failed(req protocol.InvocationRequest, err error) (protocol.InvocationResult, error) {
	var api *APIError
	if !errors.As(err, &api) {
		return protocol.InvocationResult{}, err
	}
	code := protocol.ErrIPC
	switch api.Code {
	case CodePermissionDenied:
		code = protocol.ErrDenied
	case CodeSkillNotFound:
		code = protocol.ErrTargetNotFound
	case CodeTimeout:
		code = protocol.ErrTimeout
	case CodeFailed:
		if c, ok := api.Details["ipc_code"].(string); ok && protocol.ErrorCode(c).Known() {
			code = protocol.ErrorCode(c)
		}
	}
	details := map[string]any{"remote": t.Client.BaseURL, "remote_code": api.Code}
	if r, ok := api.Details["reason"]; ok {
		details["reason"] = r
	}
	return protocol.Fail(&req, 0, code, fmt.Sprintf("%s (from %s)", api.Message, t.Client.BaseURL), details), nil
}

var _ ipc.Target = Target{}
var _ ipc.Remote = Target{}
