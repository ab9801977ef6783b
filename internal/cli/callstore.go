package cli

// huddle call --store (docs/DESIGN.md §16): the same call as on a team
// directory, with the team, the caller's policy, the inboxes and the
// traces in the store.

import (
	"context"
	"errors"
	"fmt"

	"huddle/inbox"
	"huddle/ipc"
	"huddle/protocol"
	"huddle/store"
	"huddle/team"
)

// inboxWatcher is a store that follows an inbox without taking from it
// (natsstore.Store.WatchInbox): the caller's inbox may be a running
// member's, whose runtime consumes it.
type inboxWatcher interface {
	WatchInbox(ctx context.Context, member string, fn func(store.Delivery)) (store.Subscription, error)
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
	sub, err := w.WatchInbox(ctx, name, func(d store.Delivery) {
		router.Take(inbox.Delivery{Msg: d.Msg, Offset: d.Seq})
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
	b, err := st.Config(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("IPC_ERROR: the store %s holds no %s (huddle init --store puts it there, or give --config)", cl.storeName(), name)
	}
	if err != nil {
		return nil, fmt.Errorf("IPC_ERROR: %s: %w", name, err)
	}
	p, err := ipc.ParsePolicy(b)
	if err != nil {
		return nil, fmt.Errorf("IPC_ERROR: %s: %w", name, err)
	}
	return p, nil
}
