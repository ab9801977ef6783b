package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"huddle/ipc"
	"huddle/protocol"
	"huddle/team"
)

func init() {
	commands = append(commands, command{name: "call", summary: "invoke a target's action under the caller's .puruto-ipc.json (Puruto's ipc.py)", run: runCall})
}

func runCall(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("call", "--target T --action A --prompt P [--caller C] [--timeout S] [--hop N] [--correlation-id ID] [--config PATH] [--dir D]", stderr)
	target := fs.String("target", "", "the member to invoke (required)")
	action := fs.String("action", "", "the action to run (required)")
	prompt := fs.String("prompt", "", "what to ask (required)")
	callerName := fs.String("caller", "", "who calls (default: the config's owner)")
	timeout := fs.Int("timeout", 0, "seconds to wait for the answer (default: the config's default_timeout_sec)")
	hop := fs.Int("hop", 0, "delegation depth of this call (0: the first)")
	corr := fs.String("correlation-id", "", "join an existing correlation chain (default: a new one)")
	config := fs.String("config", ipc.ConfigFile, "the caller's IPC config")
	dir := fs.String("dir", huddleDir(), "team directory ($HUDDLE_DIR, else .huddle)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "huddle: call: "+format+"\n", a...)
		return exitUsage
	}
	switch {
	case fs.NArg() > 0:
		return bad("unexpected argument %q", fs.Arg(0))
	case *target == "":
		return bad("--target is required")
	case *action == "":
		return bad("--action is required")
	case *prompt == "":
		return bad("--prompt is required")
	case *timeout < 0:
		return bad("--timeout must not be negative")
	case *hop < 0:
		return bad("--hop must not be negative")
	}
	if *corr != "" {
		if err := protocol.ValidateID(*corr); err != nil {
			return bad("--correlation-id: %v", err)
		}
	}

	caller := &ipc.Caller{TeamDir: *dir}
	caller.Policy, caller.PolicyErr = ipc.LoadPolicy(*config)
	if caller.PolicyErr != nil {
		caller.PolicyErr = fmt.Errorf("IPC_ERROR: %w", caller.PolicyErr)
	}
	name := *callerName
	if name == "" && caller.Policy != nil {
		name = caller.Policy.Owner
	}
	if name == "" {
		name = "cli"
	}
	if err := protocol.ValidateName(name); err != nil {
		return bad("caller: %v (use --caller)", err)
	}
	req := protocol.InvocationRequest{
		RequestID: protocol.NewInvocationID(), CorrelationID: *corr, Caller: name, Target: *target,
		Action: *action, Prompt: *prompt, TimeoutSec: *timeout, Hop: *hop,
	}
	if req.CorrelationID == "" {
		req.CorrelationID = protocol.NewCorrelationID()
	}
	if req.TimeoutSec == 0 {
		req.TimeoutSec = ipc.DefaultTimeoutSec
		if caller.Policy != nil {
			req.TimeoutSec = caller.Policy.DefaultTimeoutSec
		}
	}

	ctx, stop := signalContext()
	defer stop()
	t, err := team.Load(*dir)
	if err != nil {
		if _, serr := os.Stat(team.ConfigPath(*dir)); serr == nil {
			fmt.Fprintf(stderr, "huddle: call: %v\n", err) // a team.json that does not load
			return exitFail
		}
		// No team here: every target is unknown (the result says so), and
		// no trace is written anywhere.
		fmt.Fprintf(stderr, "huddle: call: no team in %s: targets are the members of a team (--dir)\n", *dir)
		caller.TeamDir = ""
	} else {
		router := ipc.NewRouter(*dir)
		caller.Resolve = team.Resolver(*dir, t, router)
		// Answers from teammates come to the caller's inbox; watch it.
		stopWatch, werr := ipc.WatchResults(ctx, *dir, name, router)
		if werr != nil {
			fmt.Fprintf(stderr, "huddle: call: %v\n", werr)
			return exitFail
		}
		defer stopWatch()
	}
	res := caller.Call(ctx, req)
	out, _ := json.MarshalIndent(struct {
		Request  protocol.InvocationRequest `json:"request"`
		Response protocol.InvocationResult  `json:"response"`
	}{req, res}, "", "  ")
	fmt.Fprintln(stdout, string(out))
	if res.Status != protocol.ResultOK {
		return exitFail
	}
	return exitOK
}
