package serve

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"huddle/ipc"
	"huddle/ipc/blueprint"
	"huddle/protocol"
	"huddle/store"
	"huddle/team"
	"huddle/team/supervisor"
	"huddle/teamdir"
)

// ServeBackend exposes a team's members' actions as skills
// (<member>.<action>) to callers over HTTP. HTTP callers are governed by
// the team's own .puruto-ipc.json: the team is a Puruto to the outside.
// Calls go through the same Caller, targets and traces as huddle call's;
// answers from teammates come back to the HTTP caller's inbox, which the
// backend follows.
type ServeBackend struct {
	team    *team.Team
	policy  *ipc.Policy
	caller  *ipc.Caller
	answers *storeAnswers
}

// ServePolicyPath is the policy of a team's HTTP callers.
func ServePolicyPath(dir string) string { return teamdir.PolicyPath(dir) }

// NewServeBackend is the backend of the team st keeps: policy governs HTTP
// callers, their calls are made as huddle call makes its own (NewCaller),
// and their inboxes are followed in st for the answers.
func NewServeBackend(ctx context.Context, st store.Store, policy *ipc.Policy) (*ServeBackend, error) {
	w, ok := st.(store.AnswerWatcher)
	if !ok {
		return nil, fmt.Errorf("serve: this store cannot follow an inbox")
	}
	t, err := team.LoadFrom(ctx, st)
	if err != nil {
		return nil, err
	}
	router := ipc.NewRouter("")
	answers := &storeAnswers{ctx: ctx, w: w, router: router, subs: map[string]store.Subscription{}}
	return &ServeBackend{team: t, policy: policy, caller: supervisor.NewCaller(ctx, st, t, router, policy, nil), answers: answers}, nil
}

// Close stops watching the callers' inboxes.
func (b *ServeBackend) Close() error { return b.answers.Close() }

// Skills lists every action the policy lets HTTP callers reach: a scripted
// member's actions, or the actions allowed_actions names for a member that
// answers for itself.
func (b *ServeBackend) Skills() []blueprint.Skill {
	var out []blueprint.Skill
	for _, m := range b.team.Members {
		var actions []string
		if len(m.Actions) > 0 {
			for a := range m.Actions {
				actions = append(actions, a)
			}
		} else {
			actions = b.policy.AllowedActions[m.Name]
		}
		sort.Strings(actions)
		for _, a := range actions {
			if b.policy.Check(m.Name, a, 0) != nil {
				continue
			}
			desc := fmt.Sprintf("%s (%s): %s", m.Name, m.Role, a)
			if spec, ok := m.Actions[a]; ok && spec.Reply != "" {
				desc += " — answers " + fmt.Sprintf("%q", spec.Reply)
			}
			out = append(out, blueprint.Skill{ID: m.Name + "." + a, Name: a, Description: desc})
		}
	}
	return out
}

// Has reports whether a skill exists: a member, and for a scripted member
// one of its actions.
func (b *ServeBackend) Has(skillID string) bool {
	member, action, ok := strings.Cut(skillID, ".")
	if !ok || action == "" {
		return false
	}
	m, found := b.team.Member(member)
	if !found {
		return false
	}
	if m.Runtime.Kind == team.RuntimeScript && m.Target == nil {
		_, has := m.Actions[action]
		return has
	}
	return true
}

// Check applies the HTTP callers' policy.
func (b *ServeBackend) Check(skillID string, hop int) *ipc.Denial {
	member, action, _ := strings.Cut(skillID, ".")
	return b.policy.Check(member, action, hop)
}

// Call runs an invocation for an HTTP caller, whose inbox is watched for
// the answers.
func (b *ServeBackend) Call(ctx context.Context, req protocol.InvocationRequest) protocol.InvocationResult {
	if err := b.answers.Follow(req.Caller); err != nil {
		return protocol.Fail(&req, 0, protocol.ErrIPC, err.Error(), nil)
	}
	return b.caller.Call(ctx, req)
}

// storeAnswers follows callers' inboxes in a store, each from its end when
// first followed, and hands every message to the router, which takes the
// results its calls wait for: read, never committed, as ipc.AnswerWatch
// reads the inbox files.
type storeAnswers struct {
	ctx    context.Context
	w      store.AnswerWatcher
	router *ipc.Router

	mu   sync.Mutex
	subs map[string]store.Subscription
}

// Follow starts following caller's inbox; one followed already is left as
// it is. It returns once the watch is in place, so a request appended
// after it cannot have its answer missed.
func (a *storeAnswers) Follow(caller string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.subs == nil {
		return fmt.Errorf("serve: following %s: closed", caller)
	}
	if _, ok := a.subs[caller]; ok {
		return nil
	}
	sub, err := a.w.WatchAnswers(a.ctx, caller, func(d store.Delivery) bool {
		return a.router.Take(d.Msg)
	})
	if err != nil {
		return err
	}
	a.subs[caller] = sub
	return nil
}

// Close stops following every inbox.
func (a *storeAnswers) Close() error {
	a.mu.Lock()
	subs := a.subs
	a.subs = nil
	a.mu.Unlock()
	var errs []error
	for _, sub := range subs {
		errs = append(errs, sub.Stop())
	}
	return errors.Join(errs...)
}
