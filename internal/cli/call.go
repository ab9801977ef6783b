package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"huddle/ipc"
	"huddle/protocol"
	"huddle/team"
)

// callOptions are the flags of huddle call.
type callOptions struct {
	target, action, prompt string
	caller                 string
	timeout, hop           int
	correlationID          string
	config                 string
}

func callFlags(fs *flag.FlagSet) runFunc {
	var o callOptions
	fs.StringVar(&o.target, "target", "", "the member to invoke (required)")
	fs.StringVar(&o.action, "action", "", "the action to run (required)")
	fs.StringVar(&o.prompt, "prompt", "", "what to ask (required)")
	fs.StringVar(&o.caller, "caller", "", "who calls (default: the config's owner)")
	fs.IntVar(&o.timeout, "timeout", 0, "seconds to wait for the answer (default: the config's default_timeout_sec)")
	fs.IntVar(&o.hop, "hop", 0, "delegation depth of this call (0: the first)")
	fs.StringVar(&o.correlationID, "correlation-id", "", "join an existing correlation chain (default: a new one)")
	fs.StringVar(&o.config, "config", ipc.ConfigFile, "the caller's IPC config")
	return func(cl *cmdline) int { return runCall(cl, &o) }
}

// runCall is huddle call: check the flags, load the caller's policy, build
// the request, call and print both.
func runCall(cl *cmdline, o *callOptions) int {
	if msg := o.check(cl.args); msg != "" {
		return cl.usageError("%s", msg)
	}
	caller := loadCaller(cl.dir, o.config)
	name := callerName(o.caller, caller.Policy)
	if err := protocol.ValidateName(name); err != nil {
		return cl.usageError("caller: %v (use --caller)", err)
	}
	req := newCallRequest(o, name, caller.Policy)
	ctx, stop := signalContext()
	defer stop()
	stopWatch, code, ok := connectTeam(ctx, cl, caller, name)
	if !ok {
		return code
	}
	defer stopWatch()
	res := caller.Call(ctx, req)
	return printCall(cl, req, res)
}

// check says what is wrong with the flags and arguments, or "".
func (o *callOptions) check(args []string) string {
	switch {
	case len(args) > 0:
		return fmt.Sprintf("unexpected argument %q", args[0])
	case o.target == "":
		return "--target is required"
	case o.action == "":
		return "--action is required"
	case o.prompt == "":
		return "--prompt is required"
	case o.timeout < 0:
		return "--timeout must not be negative"
	case o.hop < 0:
		return "--hop must not be negative"
	}
	if o.correlationID != "" {
		if err := protocol.ValidateID(o.correlationID); err != nil {
			return fmt.Sprintf("--correlation-id: %v", err)
		}
	}
	return ""
}

// loadCaller is the Caller of the team in dir under the policy in config. A
// policy that does not load is kept as the error every call answers.
func loadCaller(dir, config string) *ipc.Caller {
	caller := &ipc.Caller{TeamDir: dir}
	caller.Policy, caller.PolicyErr = ipc.LoadPolicy(config)
	if caller.PolicyErr != nil {
		caller.PolicyErr = fmt.Errorf("IPC_ERROR: %w", caller.PolicyErr)
	}
	return caller
}

// callerName is who calls: --caller, else the policy's owner, else "cli".
func callerName(flagged string, policy *ipc.Policy) string {
	name := flagged
	if name == "" && policy != nil {
		name = policy.Owner
	}
	if name == "" {
		name = "cli"
	}
	return name
}

// newCallRequest is the request the flags describe, with a new correlation
// id and the policy's timeout unless they give them.
func newCallRequest(o *callOptions, caller string, policy *ipc.Policy) protocol.InvocationRequest {
	req := protocol.InvocationRequest{
		RequestID: protocol.NewInvocationID(), CorrelationID: o.correlationID, Caller: caller, Target: o.target,
		Action: o.action, Prompt: o.prompt, TimeoutSec: o.timeout, Hop: o.hop,
	}
	if req.CorrelationID == "" {
		req.CorrelationID = protocol.NewCorrelationID()
	}
	if req.TimeoutSec == 0 {
		req.TimeoutSec = ipc.DefaultTimeoutSec
		if policy != nil {
			req.TimeoutSec = policy.DefaultTimeoutSec
		}
	}
	return req
}

// connectTeam gives caller the targets of the team in its directory and
// watches the inbox of name, where answers come; the returned func stops
// the watch. Without a team every target is unknown (the result says so)
// and no trace is written. When ok is false the command stops with code.
func connectTeam(ctx context.Context, cl *cmdline, caller *ipc.Caller, name string) (stop func() error, code int, ok bool) {
	t, err := team.Load(cl.dir)
	if err != nil {
		if _, serr := os.Stat(team.ConfigPath(cl.dir)); serr == nil {
			return nil, cl.fail(err), false // a team.json that does not load
		}
		fmt.Fprintf(cl.stderr, "huddle: call: no team in %s: targets are the members of a team (--dir)\n", cl.dir)
		caller.TeamDir = ""
		return func() error { return nil }, 0, true
	}
	router := ipc.NewRouter(cl.dir)
	caller.Resolve = team.Resolver(cl.dir, t, router)
	stopWatch, err := ipc.WatchResults(ctx, cl.dir, name, router)
	if err != nil {
		return nil, cl.fail(err), false
	}
	return stopWatch, 0, true
}

// printCall prints {request, response} as JSON; the exit code says whether
// the response is ok.
func printCall(cl *cmdline, req protocol.InvocationRequest, res protocol.InvocationResult) int {
	out, _ := json.MarshalIndent(struct {
		Request  protocol.InvocationRequest `json:"request"`
		Response protocol.InvocationResult  `json:"response"`
	}{req, res}, "", "  ")
	fmt.Fprintln(cl.stdout, string(out))
	if res.Status != protocol.ResultOK {
		return exitFail
	}
	return exitOK
}
