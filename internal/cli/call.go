package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"

	"huddle/ipc"
	"huddle/protocol"
	"huddle/store"
	"huddle/team"
	"huddle/team/supervisor"
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
// the request, call and print both, on the store that keeps the team.
func runCall(cl *cmdline, o *callOptions) int {
	if msg := o.check(cl.args); msg != "" {
		return cl.usageError("%s", msg)
	}
	return cl.withState(needTeamIfAny, func(ctx context.Context, st store.Store) int {
		policy, policyErr := callPolicy(ctx, cl, st, o)
		name := callerName(o.caller, policy)
		if err := protocol.ValidateName(name); err != nil {
			return cl.usageError("caller: %v (use --caller)", err)
		}
		req := newCallRequest(o, name, policy)
		var t *team.Team
		if st == nil {
			fmt.Fprintf(cl.stderr, "huddle: call: no team in %s: targets are the members of a team (--dir)\n", cl.dir)
		} else {
			var err error
			if t, err = team.LoadFrom(ctx, st); err != nil {
				return cl.fail(err)
			}
		}
		router := ipc.NewRouter("")
		if t != nil {
			w, ok := st.(store.AnswerWatcher)
			if !ok {
				return cl.fail(errors.New("call: this store cannot follow an inbox"))
			}
			// The answer comes to the caller's inbox: follow it from its
			// end before the request is appended, so the answer cannot be
			// missed.
			sub, err := w.WatchAnswers(ctx, name, func(d store.Delivery) bool {
				return router.Take(d.Msg)
			})
			if err != nil {
				return cl.fail(err)
			}
			defer func() { _ = sub.Stop() }()
		}
		res := supervisor.NewCaller(ctx, st, t, router, policy, policyErr).Call(ctx, req)
		return printCall(cl, req, res)
	})
}

// callPolicy is the caller's policy: --config when given. Without it, on a
// team directory the caller is a repo outside the team, whose
// .puruto-ipc.json is in the working directory; a store keeps its callers'
// policies, ipc/CALLER.puruto-ipc.json with --caller, else
// .puruto-ipc.json. A policy that cannot be read is the IPC_ERROR every
// call gets.
func callPolicy(ctx context.Context, cl *cmdline, st store.Store, o *callOptions) (*ipc.Policy, error) {
	if cl.flagGiven("config") || !cl.remote() {
		return loadPolicy(o.config)
	}
	name := store.ConfigPolicy
	if o.caller != "" {
		if err := protocol.ValidateName(o.caller); err != nil {
			return nil, fmt.Errorf("IPC_ERROR: caller: %w", err)
		}
		name = store.MemberPolicyConfig(o.caller)
	}
	p, err := storedPolicy(ctx, cl, st, name)
	if err != nil {
		return nil, fmt.Errorf("IPC_ERROR: %w", err)
	}
	return p, nil
}

// storedPolicy is the policy the store keeps as name.
func storedPolicy(ctx context.Context, cl *cmdline, st store.Store, name string) (*ipc.Policy, error) {
	p, err := supervisor.PolicyFrom(ctx, st, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("the store %s holds no %s (huddle init --store puts it there, or give --config)", cl.storeName(), name)
	}
	return p, err
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

// loadPolicy is the caller's policy from config; when it cannot be loaded,
// the error every call gets as its IPC_ERROR result.
func loadPolicy(config string) (*ipc.Policy, error) {
	p, err := ipc.LoadPolicy(config)
	if err != nil {
		return nil, fmt.Errorf("IPC_ERROR: %w", err)
	}
	return p, nil
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
