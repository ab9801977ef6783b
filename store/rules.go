package store

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"huddle/protocol"
)

// Retries is how many times a consumer hands a message to a handler that
// fails before it dead-letters it (docs/ARCHITECTURE.md, "Delivery").
const Retries = 3

// RetryDelay is the pause before attempt n+1 (n from 0): 10 ms, then 20 ms.
func RetryDelay(n int) time.Duration { return time.Duration(10<<n) * time.Millisecond }

// Config file names a store keeps (docs/ARCHITECTURE.md, "The team directory and the store").
const (
	ConfigTeam   = "team.json"
	ConfigPolicy = ".puruto-ipc.json"
)

// MemberPolicyConfig is the configuration name of member's IPC policy:
// ipc/<member>.puruto-ipc.json.
func MemberPolicyConfig(member string) string { return "ipc/" + member + ".puruto-ipc.json" }

// policyRE names a member's policy file; compiled on first use, not in
// the initialiser every command runs.
var policyRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^ipc/([^/]+)\.puruto-ipc\.json$`) })

// ValidateConfigName accepts team.json, .puruto-ipc.json and
// ipc/<member>.puruto-ipc.json with a valid member name, nothing else: a
// configuration name becomes a path in the file store.
func ValidateConfigName(name string) error {
	if name == ConfigTeam || name == ConfigPolicy {
		return nil
	}
	if m := policyRE().FindStringSubmatch(name); m != nil {
		return protocol.ValidateName(m[1])
	}
	return fmt.Errorf("invalid configuration name %q: want %s, %s or %s", clip(name), ConfigTeam, ConfigPolicy, MemberPolicyConfig("NAME"))
}

// ValidateTeam checks a team's name as the stores use it: a member-like
// name without dots (a NATS stream and bucket name cannot hold one).
func ValidateTeam(team string) error {
	if err := protocol.ValidateName(team); err != nil {
		return fmt.Errorf("team: %w", err)
	}
	if strings.Contains(team, ".") {
		return fmt.Errorf("invalid team name %q: a team name holds no dot", team)
	}
	return nil
}

// ApplyDecision moves r to the final state d says, in memory, as the team
// runtime does: a plan's or a permission's answer is its feedback,
// anything else a reason; an allowed permission keeps its scope.
func ApplyDecision(r *protocol.Request, d Decision) error {
	if err := r.Apply(d.Event, d.By, d.At, d.Text); err != nil {
		return err
	}
	if answersWithFeedback(r.Kind) && d.Event.IsAnswer() {
		r.Feedback = d.Text
	} else {
		r.ResponseReason = d.Text
	}
	if r.Kind == protocol.KindPermission && d.Event == protocol.EventApprove {
		r.Scope = d.Scope
		if r.Scope == "" {
			r.Scope = protocol.ScopeOnce
		}
	}
	return nil
}

// answersWithFeedback reports whether the answer to a request of kind k
// is the lead's feedback (every kind's but a shutdown's, which its
// teammate answers with a reason).
func answersWithFeedback(k protocol.RequestKind) bool {
	return k != protocol.KindShutdown
}

// DecisionOf is the decision a final record says: the event that leads from
// pending to its status, who resolved it and when, and its answer's text.
// It is what an archive leaves for a final record that came with no
// decision, so that no late resolver can claim it.
func DecisionOf(r *protocol.Request) Decision {
	d := Decision{By: r.ResolvedBy, At: r.Created, Text: r.ResponseReason}
	if r.ResolvedAt != nil {
		d.At = *r.ResolvedAt
	}
	if answersWithFeedback(r.Kind) && r.Feedback != "" {
		d.Text = r.Feedback
	}
	if r.Status == protocol.RequestAllowed {
		d.Scope = r.Scope
	}
	for _, ev := range protocol.RequestEvents {
		if next, _ := protocol.RequestPending.Next(r.Kind, ev); next == r.Status {
			d.Event = ev
			break
		}
	}
	return d
}

// CheckDecision refuses a decision that is no move from r's state: a final
// record is an *AlreadyError (the answer is stale), an event that does not
// lead out of pending is an error.
func CheckDecision(r *protocol.Request, d Decision) error {
	if r.Status.IsTerminal() {
		return &AlreadyError{ID: r.ID, Status: r.Status, By: r.ResolvedBy}
	}
	if _, err := r.Status.Next(r.Kind, d.Event); err != nil {
		return fmt.Errorf("request %s: %w", r.ID, err)
	}
	if d.By == "" {
		return fmt.Errorf("request %s: a decision names who decided", r.ID)
	}
	if d.Scope != "" && (r.Kind != protocol.KindPermission || d.Event != protocol.EventApprove) {
		return fmt.Errorf("request %s: only an allowed permission has a scope", r.ID)
	}
	if d.Scope != "" && d.Scope != protocol.ScopeOnce && d.Scope != protocol.ScopeSession {
		return fmt.Errorf("request %s: scope %q: want %s or %s", r.ID, clip(d.Scope), protocol.ScopeOnce, protocol.ScopeSession)
	}
	return nil
}

// CheckAnswer is the rule the team runtime applies to an answer that
// arrives as an inbox line before it lets the answer decide r: a plan is
// answered by the lead only, and only for a plan of the member whose inbox
// it reached (to), and so is a permission; a shutdown request only by the
// member it asked. A
// forged answer is refused with the reason the dead letter carries.
func CheckAnswer(r *protocol.Request, t protocol.MessageType, from, to string) error {
	switch t {
	case protocol.TypePlanApprovalResponse:
		if from != protocol.Lead {
			return fmt.Errorf("plan_approval_response from %s; only the lead decides plans", from)
		}
		if r.Kind != protocol.KindPlan || r.From != to {
			return fmt.Errorf("request %s is not a plan of %s", r.ID, to)
		}
	case protocol.TypePermissionResponse:
		if from != protocol.Lead {
			return fmt.Errorf("permission_response from %s; only the lead decides permissions", from)
		}
		if r.Kind != protocol.KindPermission || r.From != to {
			return fmt.Errorf("request %s is not a permission of %s", r.ID, to)
		}
	case protocol.TypeShutdownResponse:
		if r.Kind != protocol.KindShutdown {
			return fmt.Errorf("shutdown_response for %s, a %s request", r.ID, r.Kind)
		}
		if r.To != from {
			return fmt.Errorf("shutdown_response for %s from %s; only %s answers it", r.ID, from, r.To)
		}
	default:
		return fmt.Errorf("%s answers no request", t)
	}
	return nil
}

// Settle lets an answer that arrived as an inbox line decide r in s, as the
// team runtime does: a pending request is decided by it; a final one must
// already say the same, or the answer is stale and refused.
func Settle(ctx context.Context, s Store, r *protocol.Request, d Decision) (*protocol.Request, error) {
	if r.Status == protocol.RequestPending {
		nr, err := s.Decide(ctx, r.ID, d)
		if err == nil {
			return nr, nil
		}
		if _, ok := err.(*AlreadyError); !ok {
			return nil, err
		}
		if r, err = s.Request(ctx, r.ID); err != nil {
			return nil, err
		}
	}
	if want, _ := protocol.RequestPending.Next(r.Kind, d.Event); r.Status != want {
		return nil, fmt.Errorf("stale answer: request %s already %s by %s", r.ID, r.Status, r.ResolvedBy)
	}
	return r, nil
}

// Expired reports whether a lease that ends at expires has ended at now.
func Expired(expires, now time.Time) bool { return !now.Before(expires) }

// IsLive reports whether a member with this status should be running, so
// that a long silence makes it lost.
func IsLive(st protocol.MemberStatus) bool {
	return st != protocol.MemberStopped && st != protocol.MemberCrashed
}

func clip(s string) string {
	if len(s) <= 80 {
		return s
	}
	return s[:80] + "…"
}

// Await runs check until it says done, or fails, or ctx ends: once now,
// and again each time s's Watch says the record kind/name changed. The
// watch starts before the first check, so no change falls between them.
// check's error ends the wait unless ctx has ended (then ctx's error is
// returned).
func Await(ctx context.Context, s Store, kind ChangeKind, name string, check func() (bool, error)) error {
	changed := make(chan struct{}, 1)
	sub, err := s.Watch(ctx, func(c Change) {
		if c.Name == name || c.Name == "" {
			select {
			case changed <- struct{}{}:
			default:
			}
		}
	}, kind)
	if err != nil {
		return err
	}
	defer func() { _ = sub.Stop() }() // a watch that ends with the wait: nothing to report
	for {
		done, err := check()
		if err != nil && ctx.Err() == nil {
			return err
		}
		if err == nil && done {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		}
	}
}

// FromDecision is what d alone says of request id, whose record does not
// read: its kind (from the id's prefix), final status, who decided, when,
// and the text (feedback for an answer, a reason otherwise). false: d is
// no move from pending.
func FromDecision(id string, d Decision) (*protocol.Request, bool) {
	kind := protocol.KindOfID(id)
	st, err := protocol.RequestPending.Next(kind, d.Event)
	if err != nil {
		return nil, false
	}
	at := d.At
	r := &protocol.Request{ID: id, Kind: kind, Status: st, ResolvedBy: d.By, ResolvedAt: &at, Scope: d.Scope}
	if d.Event.IsAnswer() {
		r.Feedback = d.Text
	} else {
		r.ResponseReason = d.Text
	}
	return r, true
}

// Corrupted is what Request returns for a record that does not read: ce,
// with what its decision alone says when the decision was read (d, err).
func Corrupted(ce *CorruptError, d *Decision, err error) (*protocol.Request, error) {
	if err != nil {
		return nil, ce
	}
	r, ok := FromDecision(ce.Name, *d)
	if !ok {
		return nil, ce
	}
	return r, ce
}
