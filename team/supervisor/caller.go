package supervisor

import (
	"context"

	"huddle/ipc"
	"huddle/store"
	"huddle/team"
)

// NewCaller builds a Caller for calls from the team st keeps: the one way
// huddle call and huddle serve make theirs (the runtime makes one per
// member, Runtime.caller). Names resolve to t's members: requests go to
// the targets' inboxes in st, the teammates' records are read there, an
// exec target's relative dir is under the team directory when st keeps
// the team in one, and the spans (the router's late ones too) are
// appended to st's traces. policy governs every call; policyErr, when
// there is no policy, is the IPC_ERROR every call gets. Without a team (t
// nil) every target is unknown and no span is written, and st may be nil.
// ctx bounds nothing but the store's consumers, which this caller starts
// none of: the caller of a one-shot command follows its own inbox for the
// answers (store.AnswerWatcher).
func NewCaller(ctx context.Context, st store.Store, t *team.Team, router *ipc.Router, policy *ipc.Policy, policyErr error) *ipc.Caller {
	c := &ipc.Caller{Policy: policy, PolicyErr: policyErr}
	if t == nil {
		return c
	}
	sh := newShared(ctx, st)
	router.AppendSpan = sh.appendSpan
	c.AppendSpan = sh.appendSpan
	c.Resolve = resolverFor(teamDirOf(st), t, router, sh)
	return c
}

// teamDirOf is the team directory st keeps the team in
// (filestore.Store.Dir), or "" for a store kept elsewhere, whose exec
// targets run in the directory they name.
func teamDirOf(st store.Store) string {
	if d, ok := st.(interface{ Dir() string }); ok {
		return d.Dir()
	}
	return ""
}
