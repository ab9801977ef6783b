package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"huddle/ipc"
	"huddle/ipc/blueprint"
	"huddle/ipc/trace"
	"huddle/protocol"
)

const invokeSynopsis = "URL SKILL [--input k=v]... [--api-key K] [--timeout S] [--caller ID] [--trace-id ID] [--attempts N]"

const invokeAbout = `Calls SKILL on the Blueprint server at URL, its root (e.g. http://127.0.0.1:7070;
a trailing /invoke is dropped): POST /invoke, GET /status until the execution
is final, GET /result. On a huddle server SKILL is <member>.<action>.

--input k=v sets inputs.k. A value that is JSON (3, true, null, {"a":1},
[1,2], "quoted text") is sent as that JSON value; anything else as text.
inputs.prompt is always text: it is what a huddle server asks the member.

The API key goes in the X-API-Key header. Prefer $HUDDLE_API_KEY to --api-key:
a command line shows in the process list.

Exit status: 0 completed (the result JSON on stdout); 1 failed, timed out,
cancelled or unreachable (the error envelope JSON on stdout, one line on
stderr); 2 bad arguments.`

// invokeGrace is how long after --timeout the CLI still waits for the
// server's own EXECUTION_TIMEOUT before giving up by itself.
const invokeGrace = 5 * time.Second

// invokeInputs is the repeatable --input k=v.
type invokeInputs []string

func (in *invokeInputs) String() string      { return strings.Join(*in, " ") }
func (in *invokeInputs) Set(kv string) error { *in = append(*in, kv); return nil }

// invokeOptions are the flags of huddle invoke.
type invokeOptions struct {
	inputs   invokeInputs
	apiKey   string
	timeout  int
	callerID string
	traceID  string
	attempts int
}

func invokeFlags(fs *flag.FlagSet) runFunc {
	var o invokeOptions
	fs.Var(&o.inputs, "input", "an input `k=v` (repeatable); JSON values are sent as JSON, other values as text")
	fs.StringVar(&o.apiKey, "api-key", "", "the API `key`, sent as X-API-Key (default $HUDDLE_API_KEY)")
	fs.IntVar(&o.timeout, "timeout", ipc.DefaultTimeoutSec, "`seconds` the execution may take (context.timeout_ms)")
	fs.StringVar(&o.callerID, "caller", "huddle-cli", "the caller's `id`")
	fs.StringVar(&o.traceID, "trace-id", "", "the trace `id`: the chain's correlation id on a huddle server, sent with a W3C traceparent (default: a new one)")
	fs.IntVar(&o.attempts, "attempts", blueprint.DefaultAttempts, "connection attempts, with backoff, before ENDPOINT_UNREACHABLE")
	return func(cl *Cmdline) int { return runInvoke(cl, &o) }
}

// runInvoke is huddle invoke: check the arguments, build the request, call
// the server and print the result or the error envelope.
func runInvoke(cl *Cmdline, o *invokeOptions) int {
	base, skill, err := o.check(cl.Args)
	if err != nil {
		return cl.UsageError("%v", err)
	}
	inputs, err := parseInputs(o.inputs)
	if err != nil {
		return cl.UsageError("%v", err)
	}
	req := o.request(skill, inputs)
	client := &blueprint.Client{BaseURL: base, APIKey: o.key(), Backoff: blueprint.Backoff{Attempts: o.attempts}}
	sig, stop := SignalContext()
	defer stop()
	inv := invocationOf(req, o.timeout)
	start := time.Now()
	trace.Record(trace.Start(inv, start))
	res, err := o.call(sig, client, req)
	trace.Record(trace.End(inv, invokeOutcome(&inv, res, err, time.Since(start)), base, false, time.Now()))
	return printInvoke(cl, sig, res, err)
}

// check checks the flags and the positional arguments, URL and SKILL, and
// returns the server's root and the skill.
func (o *invokeOptions) check(args []string) (base, skill string, err error) {
	switch {
	case len(args) < 1:
		return "", "", errors.New("URL is required")
	case len(args) < 2:
		return "", "", errors.New("SKILL is required")
	case len(args) > 2:
		return "", "", fmt.Errorf("unexpected argument %q", args[2])
	case o.timeout <= 0:
		return "", "", errors.New("--timeout must be positive")
	case o.attempts <= 0:
		return "", "", errors.New("--attempts must be positive")
	case strings.TrimSpace(o.callerID) == "":
		return "", "", errors.New("--caller is empty")
	}
	if base, err = invokeBaseURL(args[0]); err != nil {
		return "", "", err
	}
	if strings.TrimSpace(args[1]) == "" {
		return "", "", errors.New("SKILL is empty")
	}
	return base, args[1], nil
}

// key is the API key: --api-key, else $HUDDLE_API_KEY.
func (o *invokeOptions) key() string {
	if o.apiKey != "" {
		return o.apiKey
	}
	return os.Getenv("HUDDLE_API_KEY")
}

// request is the InvokeRequest of skill with inputs. It begins a chain
// (--trace-id, else a new correlation id) whose first call is this one: its
// request id is the parent of what the server runs, and the traceparent
// the client sends names it.
func (o *invokeOptions) request(skill string, inputs map[string]any) blueprint.InvokeRequest {
	corr := o.traceID
	if corr == "" {
		corr = protocol.NewCorrelationID()
	}
	return blueprint.InvokeRequest{
		Caller:  blueprint.Caller{ID: o.callerID, Type: "huddle"},
		SkillID: skill,
		Inputs:  inputs,
		Context: blueprint.Context{TraceID: corr, ParentRequestID: protocol.NewInvocationID(), TimeoutMS: int64(o.timeout) * 1000},
	}
}

// invocationOf is req as the call huddle invoke makes, for its spans: the
// trace of a process without a team directory is only what it exports
// (trace.Record). SKILL is <member>.<action> on a huddle server.
func invocationOf(req blueprint.InvokeRequest, timeoutSec int) protocol.InvocationRequest {
	target, action, _ := strings.Cut(req.SkillID, ".")
	return protocol.InvocationRequest{RequestID: req.Context.ParentRequestID, CorrelationID: req.Context.TraceID,
		Caller: req.Caller.ID, Target: target, Action: action, Prompt: req.Prompt(), TimeoutSec: timeoutSec}
}

// invokeOutcome is how the call ended, as its end span says it: ok with the
// output, or the error with the protocol's code.
func invokeOutcome(inv *protocol.InvocationRequest, res blueprint.Result, err error, took time.Duration) protocol.InvocationResult {
	ms := took.Milliseconds()
	var api *blueprint.APIError
	switch {
	case err == nil:
		return protocol.InvocationResult{RequestID: inv.RequestID, CorrelationID: inv.CorrelationID,
			Status: protocol.ResultOK, Result: res.Output, DurationMS: ms}
	case errors.As(err, &api):
		return protocol.Fail(inv, ms, protocol.ErrorCode(api.Code), api.Message, nil)
	}
	return protocol.Fail(inv, ms, protocol.ErrIPC, err.Error(), nil)
}

// call runs the three steps, giving up by itself invokeGrace after
// --timeout: then the error is an EXECUTION_TIMEOUT of its own.
func (o *invokeOptions) call(sig context.Context, client *blueprint.Client, req blueprint.InvokeRequest) (blueprint.Result, error) {
	limit := time.Duration(o.timeout)*time.Second + invokeGrace
	ctx, cancel := context.WithTimeout(sig, limit)
	defer cancel()
	res, err := client.Call(ctx, req, "")
	if err != nil && errors.Is(err, context.DeadlineExceeded) && sig.Err() == nil {
		err = &blueprint.APIError{Code: blueprint.CodeTimeout,
			Message: fmt.Sprintf("no final answer from %s within %v (--timeout %ds plus %v)", redactedURL(client.BaseURL), limit, o.timeout, invokeGrace)}
	}
	return res, err
}

// printInvoke prints the result, or the error envelope and one line on
// stderr, and returns the exit code.
func printInvoke(cl *Cmdline, sig context.Context, res blueprint.Result, err error) int {
	var api *blueprint.APIError
	switch {
	case errors.As(err, &api):
		_ = writeJSON(cl.Stdout, api.Envelope()) // the exit code and stderr say it either way
		return cl.Exit(ExitFail, "%s", api.Error())
	case sig.Err() != nil:
		return cl.Exit(ExitFail, "interrupted")
	case err != nil:
		return cl.Fail(err)
	}
	if err := writeJSON(cl.Stdout, res); err != nil {
		return cl.Fail(err)
	}
	return ExitOK
}

// invokeBaseURL checks URL and returns the server's root.
func invokeBaseURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("URL %q: want http://host[:port] or https://…", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("URL %q: want the server's root, without ?query or #fragment", raw)
	}
	base := strings.TrimRight(u.String(), "/")
	return strings.TrimSuffix(base, "/invoke"), nil
}

// redactedURL is u without its password, for messages.
func redactedURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "the server"
	}
	return p.Redacted()
}

// parseInputs turns k=v pairs into the inputs object: JSON values as JSON
// (numbers kept exact), other values, and every prompt, as text.
func parseInputs(kvs []string) (map[string]any, error) {
	in := map[string]any{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("--input %q: want key=value", kv)
		}
		if _, dup := in[k]; dup {
			return nil, fmt.Errorf("--input %q: %s is given twice", kv, k)
		}
		in[k] = v
		if k == "prompt" || !json.Valid([]byte(v)) {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader([]byte(v)))
		dec.UseNumber()
		var val any
		if err := dec.Decode(&val); err == nil {
			in[k] = val
		}
	}
	return in, nil
}
