package full

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"huddle/internal/cli"
	"huddle/ipc"
	"huddle/protocol"
	"huddle/store"
	"huddle/team"
	"huddle/team/supervisor"
)

// callOptions are the flags of huddle call.

// runCall is huddle call: check the flags, load the caller's policy, build
// the request, call and print both, on the store that keeps the team.
func runCall(cl *cli.Cmdline, o *cli.CallFlags) int {
	if msg := checkCall(o, cl.Args); msg != "" {
		return cl.UsageError("%s", msg)
	}
	return cl.WithState(cli.NeedTeamIfAny, func(ctx context.Context, st store.Store) int {
		policy, policyErr := callPolicy(ctx, cl, st, o)
		name := callerName(o.Caller, policy)
		if err := protocol.ValidateName(name); err != nil {
			return cl.UsageError("caller: %v (use --caller)", err)
		}
		req := newCallRequest(o, name, policy)
		var t *team.Team
		if st == nil {
			fmt.Fprintf(cl.Stderr, "huddle: call: no team in %s: targets are the members of a team (--dir)\n", cl.Dir)
		} else {
			var err error
			if t, err = team.LoadFrom(ctx, st); err != nil {
				return cl.Fail(err)
			}
		}
		router := ipc.NewRouter("")
		if t != nil {
			w, ok := st.(store.AnswerWatcher)
			if !ok {
				return cl.Fail(errors.New("call: this store cannot follow an inbox"))
			}
			// The answer comes to the caller's inbox: follow it from its
			// end before the request is appended, so the answer cannot be
			// missed.
			sub, err := w.WatchAnswers(ctx, name, func(d store.Delivery) bool {
				return router.Take(d.Msg)
			})
			if err != nil {
				return cl.Fail(err)
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
func callPolicy(ctx context.Context, cl *cli.Cmdline, st store.Store, o *cli.CallFlags) (*ipc.Policy, error) {
	if cl.FlagGiven("config") || !cl.Remote() {
		return loadPolicy(o.Config)
	}
	name := store.ConfigPolicy
	if o.Caller != "" {
		if err := protocol.ValidateName(o.Caller); err != nil {
			return nil, fmt.Errorf("IPC_ERROR: caller: %w", err)
		}
		name = store.MemberPolicyConfig(o.Caller)
	}
	p, err := storedPolicy(ctx, cl, st, name)
	if err != nil {
		return nil, fmt.Errorf("IPC_ERROR: %w", err)
	}
	return p, nil
}

// storedPolicy is the policy the store keeps as name.
func storedPolicy(ctx context.Context, cl *cli.Cmdline, st store.Store, name string) (*ipc.Policy, error) {
	p, err := supervisor.PolicyFrom(ctx, st, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("the store %s holds no %s (huddle init --store puts it there, or give --config)", cl.StoreName(), name)
	}
	return p, err
}

// check says what is wrong with the flags and arguments, or "".
func checkCall(o *cli.CallFlags, args []string) string {
	switch {
	case len(args) > 0:
		return fmt.Sprintf("unexpected argument %q", args[0])
	case o.Target == "":
		return "--target is required"
	case o.Action == "":
		return "--action is required"
	case o.Prompt == "":
		return "--prompt is required"
	case o.Timeout < 0:
		return "--timeout must not be negative"
	case o.Hop < 0:
		return "--hop must not be negative"
	}
	if o.CorrelationID != "" {
		if err := protocol.ValidateID(o.CorrelationID); err != nil {
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
func newCallRequest(o *cli.CallFlags, caller string, policy *ipc.Policy) protocol.InvocationRequest {
	req := protocol.InvocationRequest{
		RequestID: protocol.NewInvocationID(), CorrelationID: o.CorrelationID, Caller: caller, Target: o.Target,
		Action: o.Action, Prompt: o.Prompt, TimeoutSec: o.Timeout, Hop: o.Hop,
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
func printCall(cl *cli.Cmdline, req protocol.InvocationRequest, res protocol.InvocationResult) int {
	out, _ := json.MarshalIndent(struct {
		Request  protocol.InvocationRequest `json:"request"`
		Response protocol.InvocationResult  `json:"response"`
	}{req, res}, "", "  ")
	fmt.Fprintln(cl.Stdout, string(out))
	if res.Status != protocol.ResultOK {
		return cli.ExitFail
	}
	return cli.ExitOK
}
