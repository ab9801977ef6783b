package team

import (
	"context"

	"huddle/ipc"
	"huddle/store"
)

// NewCaller builds a Caller for calls from the team in dir: the one way the
// runtime, huddle call and huddle serve make theirs. Names resolve to t's
// members (answers from teammates come back through router), spans are
// written under dir, and policy governs every call; policyErr, when there
// is no policy, is the IPC_ERROR every call gets. Without a team (t nil)
// every target is unknown and no span is written.
func NewCaller(dir string, t *Team, router *ipc.Router, policy *ipc.Policy, policyErr error) *ipc.Caller {
	c := &ipc.Caller{Policy: policy, PolicyErr: policyErr}
	if t == nil {
		return c
	}
	c.TeamDir = dir
	c.Resolve = Resolver(dir, t, router)
	return c
}

// NewCallerOn is NewCaller for a team kept in store st (docs/ARCHITECTURE.md,
// "The team directory and the store"): requests go to the targets' inboxes in the store, the teammates'
// records are read there, and the spans (the router's late ones too) are
// appended to the store's traces. ctx bounds nothing but the store's
// consumers, which this caller starts none of: the caller of a one-shot
// command follows its own inbox (huddle call --store).
func NewCallerOn(ctx context.Context, st store.Store, t *Team, router *ipc.Router, policy *ipc.Policy, policyErr error) *ipc.Caller {
	sh := newStoreShared(ctx, st)
	router.AppendSpan = sh.appendSpan
	c := &ipc.Caller{Policy: policy, PolicyErr: policyErr, AppendSpan: sh.appendSpan}
	c.Resolve = resolverOn("", t, router, sh)
	return c
}
