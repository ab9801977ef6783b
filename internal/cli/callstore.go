package cli

// huddle call --store (docs/ARCHITECTURE.md, "The team directory and the store"): the same call as on a team
// directory, with the team, the caller's policy, the inboxes and the
// traces in the store.

import (
	"context"
	"errors"
	"fmt"
	"os"

	"huddle/inbox"
	"huddle/ipc"
	"huddle/ipc/blueprint"
	"huddle/protocol"
	"huddle/store"
	"huddle/team"
	"huddle/teamdir"
)

// inboxWatcher is a store that follows an inbox without consuming it
// (natsstore.Store.WatchAnswers): the caller's inbox may be a running
// member's, whose runtime consumes it. What take says it took is removed
// from the store when no consumer has it to commit.
type inboxWatcher interface {
	WatchAnswers(ctx context.Context, caller string, take func(store.Delivery) bool) (store.Subscription, error)
}

func callOnStore(ctx context.Context, cl *cmdline, st store.Store, o *callOptions) int {
	policy, policyErr := policyOnStore(ctx, cl, st, o)
	name := callerName(o.caller, policy)
	if err := protocol.ValidateName(name); err != nil {
		return cl.usageError("caller: %v (use --caller)", err)
	}
	req := newCallRequest(o, name, policy)
	t, err := team.LoadTeamOn(ctx, st)
	if err != nil {
		return cl.fail(err)
	}
	w, ok := st.(inboxWatcher)
	if !ok {
		return cl.fail(errors.New("call: this store cannot follow an inbox"))
	}
	router := ipc.NewRouter("")
	// The answer comes to the caller's inbox: follow it from its end
	// before the request is appended, so the answer cannot be missed, and
	// take nothing from it (see inboxWatcher).
	sub, err := w.WatchAnswers(ctx, name, func(d store.Delivery) bool {
		return router.Take(inbox.Delivery{Msg: d.Msg, Offset: d.Seq})
	})
	if err != nil {
		return cl.fail(err)
	}
	defer func() { _ = sub.Stop() }()
	res := team.NewCallerOn(ctx, st, t, router, policy, policyErr).Call(ctx, req)
	return printCall(cl, req, res)
}

// policyOnStore is the caller's policy: --config when given, as on a
// directory; else the store's ipc/CALLER.puruto-ipc.json with --caller,
// or its .puruto-ipc.json without. A policy that cannot be read is the
// IPC_ERROR every call gets, as on a directory.
func policyOnStore(ctx context.Context, cl *cmdline, st store.Store, o *callOptions) (*ipc.Policy, error) {
	if cl.flagGiven("config") {
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
	p, err := team.PolicyOn(ctx, st, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("the store %s holds no %s (huddle init --store puts it there, or give --config)", cl.storeName(), name)
	}
	return p, err
}

// serveOnStore is huddle serve --store: the skills of the team kept in the
// store, its members invoked there as huddle call --store invokes them.
// The policy of HTTP callers is --config, else the store's
// .puruto-ipc.json; the executions stay in the local directory (--dir).
func serveOnStore(ctx context.Context, cl *cmdline, o *serveOptions, keys *blueprint.Keys) int {
	if err := os.MkdirAll(cl.dir, teamdir.DirMode); err != nil {
		return cl.fail(fmt.Errorf("local directory: %w", err))
	}
	st, err := openStore(ctx, cl)
	if err != nil {
		return cl.fail(err)
	}
	defer st.Close()
	var policy *ipc.Policy
	if o.config != "" {
		policy, err = ipc.LoadPolicy(o.config)
	} else {
		policy, err = storedPolicy(ctx, cl, st, store.ConfigPolicy)
	}
	if err != nil {
		return cl.fail(fmt.Errorf("the policy of HTTP callers: %w", err))
	}
	backend, err := team.NewServeBackendOn(ctx, st, policy)
	if err != nil {
		return cl.fail(err)
	}
	defer backend.Close()
	return serveBackend(ctx, cl, o, keys, backend, cl.storeName())
}
