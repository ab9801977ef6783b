package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"huddle/ipc"
	"huddle/ipc/blueprint"
)

func init() {
	commands = append(commands, command{name: "invoke", summary: "call a skill on a Blueprint HTTP server (e.g. huddle serve) and print its result", run: runInvoke})
}

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

func runInvoke(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("invoke", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are one line (below)
	var inputs invokeInputs
	fs.Var(&inputs, "input", "an input `k=v` (repeatable); JSON values are sent as JSON, other values as text")
	apiKey := fs.String("api-key", "", "the API `key`, sent as X-API-Key (default $HUDDLE_API_KEY)")
	timeout := fs.Int("timeout", ipc.DefaultTimeoutSec, "`seconds` the execution may take (context.timeout_ms)")
	callerID := fs.String("caller", "huddle-cli", "the caller's `id`")
	traceID := fs.String("trace-id", "", "the trace `id` (a huddle server makes it the correlation id; default: the server's)")
	attempts := fs.Int("attempts", blueprint.DefaultAttempts, "connection attempts, with backoff, before ENDPOINT_UNREACHABLE")
	usage := func() {
		fmt.Fprintf(stderr, "usage: huddle invoke %s\n\n%s\n\nflags:\n", invokeSynopsis, invokeAbout)
		fs.SetOutput(stderr)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "huddle: invoke: %s (see 'huddle invoke -h')\n", oneLine(fmt.Sprintf(format, a...)))
		return exitUsage
	}

	pos, err := parseInterleaved(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		usage()
		return exitOK
	case err != nil:
		return bad("%v", err)
	case len(pos) < 1:
		return bad("URL is required")
	case len(pos) < 2:
		return bad("SKILL is required")
	case len(pos) > 2:
		return bad("unexpected argument %q", pos[2])
	case *timeout <= 0:
		return bad("--timeout must be positive")
	case *attempts <= 0:
		return bad("--attempts must be positive")
	case strings.TrimSpace(*callerID) == "":
		return bad("--caller is empty")
	}
	base, err := invokeBaseURL(pos[0])
	if err != nil {
		return bad("%v", err)
	}
	skill := pos[1]
	if strings.TrimSpace(skill) == "" {
		return bad("SKILL is empty")
	}
	in, err := parseInputs(inputs)
	if err != nil {
		return bad("%v", err)
	}
	key := *apiKey
	if key == "" {
		key = os.Getenv("HUDDLE_API_KEY")
	}

	req := blueprint.InvokeRequest{
		Caller:  blueprint.Caller{ID: *callerID, Type: "huddle"},
		SkillID: skill,
		Inputs:  in,
		Context: blueprint.Context{TraceID: *traceID, TimeoutMS: int64(*timeout) * 1000},
	}
	client := &blueprint.Client{BaseURL: base, APIKey: key, Backoff: blueprint.Backoff{Attempts: *attempts}}

	sig, stop := signalContext()
	defer stop()
	limit := time.Duration(*timeout)*time.Second + invokeGrace
	ctx, cancel := context.WithTimeout(sig, limit)
	defer cancel()
	res, err := client.Call(ctx, req, "")
	if err != nil && errors.Is(err, context.DeadlineExceeded) && sig.Err() == nil {
		err = &blueprint.APIError{Code: blueprint.CodeTimeout,
			Message: fmt.Sprintf("no final answer from %s within %v (--timeout %ds plus %v)", redactedURL(base), limit, *timeout, invokeGrace)}
	}
	var api *blueprint.APIError
	switch {
	case errors.As(err, &api):
		writeJSON(stdout, api.Envelope())
		fmt.Fprintf(stderr, "huddle: invoke: %s\n", oneLine(api.Error()))
		return exitFail
	case sig.Err() != nil:
		fmt.Fprintln(stderr, "huddle: invoke: interrupted")
		return exitFail
	case err != nil:
		fmt.Fprintf(stderr, "huddle: invoke: %s\n", oneLine(err.Error()))
		return exitFail
	}
	if err := writeJSON(stdout, res); err != nil {
		fmt.Fprintf(stderr, "huddle: invoke: %v\n", err)
		return exitFail
	}
	return exitOK
}

// parseInterleaved parses flags wherever they stand among the positional
// arguments (Go's flag package stops at the first one; "--" still ends the
// flags) and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
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
