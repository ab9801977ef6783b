package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// RequestKind says what a request asks for.
type RequestKind string

const (
	KindShutdown RequestKind = "shutdown"
	KindPlan     RequestKind = "plan"
	// KindPermission asks the lead whether a teammate's agent may use a
	// tool once (its Permission says which, with what input).
	KindPermission RequestKind = "permission"
	// KindSetup asks the lead to approve a workspace's setup and teardown
	// script before it runs (its Setup says which, by its sha256).
	KindSetup RequestKind = "setup"
	// KindReview puts a teammate's finished change on its branch to the
	// lead: merged into the base, sent back with changes requested, or
	// discarded (its Review says which branch, from which commit to which).
	KindReview RequestKind = "review"
)

// Kinds lists every kind.
var Kinds = []RequestKind{KindShutdown, KindPlan, KindPermission, KindSetup, KindReview}

// kindRule is what one kind of request is, as data: the prefix of its ids
// and the final state each event leads its pending to. Every kind shares
// the rest (one record, one exclusive decision, first resolver wins:
// docs/decisions/0013); what differs between kinds is this table, not a
// type of each.
type kindRule struct {
	prefix string
	next   map[RequestEvent]RequestStatus
}

// handshake is the two-party pattern of s10: approve, reject, the
// deadline, a cancel.
var handshake = map[RequestEvent]RequestStatus{
	EventApprove: RequestApproved, EventReject: RequestRejected,
	EventDeadline: RequestExpired, EventCancel: RequestCancelled,
}

var kindRules = map[RequestKind]kindRule{
	KindShutdown: {prefix: "sd-", next: handshake},
	KindPlan:     {prefix: "pl-", next: handshake},
	// An expired permission is denied: the agent must not wait on it.
	KindPermission: {prefix: "pm-", next: map[RequestEvent]RequestStatus{
		EventApprove: RequestAllowed, EventReject: RequestDenied,
		EventDeadline: RequestDenied, EventCancel: RequestCancelled,
	}},
	KindSetup: {prefix: "su-", next: handshake},
	// A review's approve merges, its reject asks for changes, and only
	// a review can be discarded. Cancelled: a newer review of the same
	// branch replaced it.
	KindReview: {prefix: "rv-", next: map[RequestEvent]RequestStatus{
		EventApprove: RequestMerged, EventReject: RequestChangesRequested, EventDiscard: RequestDiscarded,
		EventDeadline: RequestExpired, EventCancel: RequestCancelled,
	}},
}

// Known reports whether k is one of the kinds.
func (k RequestKind) Known() bool {
	_, ok := kindRules[k]
	return ok
}

// RequestStatus is a state of the request state machine (docs/ARCHITECTURE.md, "State machines").
type RequestStatus string

const (
	RequestPending   RequestStatus = "pending"
	RequestApproved  RequestStatus = "approved"
	RequestRejected  RequestStatus = "rejected"
	RequestExpired   RequestStatus = "expired"
	RequestCancelled RequestStatus = "cancelled"
	// RequestAllowed and RequestDenied are a permission's approved and
	// rejected: what the agent asked to do, it may or may not.
	RequestAllowed RequestStatus = "allowed"
	RequestDenied  RequestStatus = "denied"
	// A review's ends: its change merged into the base, sent back to the
	// teammate with the lead's changes, or thrown away.
	RequestMerged           RequestStatus = "merged"
	RequestChangesRequested RequestStatus = "changes_requested"
	RequestDiscarded        RequestStatus = "discarded"
)

// RequestStatuses lists every state, pending first.
var RequestStatuses = []RequestStatus{RequestPending, RequestApproved, RequestRejected, RequestExpired, RequestCancelled, RequestAllowed, RequestDenied, RequestMerged, RequestChangesRequested, RequestDiscarded}

// IsTerminal reports whether s is final: every state but pending.
func (s RequestStatus) IsTerminal() bool { return s != RequestPending && s.Known() }

// Known reports whether s is one of the states of docs/ARCHITECTURE.md, "State machines"
func (s RequestStatus) Known() bool {
	for _, k := range RequestStatuses {
		if s == k {
			return true
		}
	}
	return false
}

// RequestEvent moves a request out of pending.
type RequestEvent string

const (
	EventApprove  RequestEvent = "approve"
	EventReject   RequestEvent = "reject"
	EventDeadline RequestEvent = "deadline"
	EventCancel   RequestEvent = "cancel"
	// EventDiscard throws a review's change away (reviews only).
	EventDiscard RequestEvent = "discard"
)

// RequestEvents lists every event.
var RequestEvents = []RequestEvent{EventApprove, EventReject, EventDeadline, EventCancel, EventDiscard}

// AnswerEvent is the event an answer that approves or not stands for: the
// approve field of a plan_approval_response or a shutdown_response.
func AnswerEvent(approve bool) RequestEvent {
	if approve {
		return EventApprove
	}
	return EventReject
}

// IsAnswer reports whether ev is an answer to a request (approve, reject,
// a review's discard), as opposed to what huddle decides (deadline,
// cancel).
func (ev RequestEvent) IsAnswer() bool {
	return ev == EventApprove || ev == EventReject || ev == EventDiscard
}

// ErrTerminal is wrapped by every refused transition out of a final state.
var ErrTerminal = errors.New("request is already final")

// Next is the request state machine: the state that event ev leads a
// request of kind k to from s, or an error when the transition is illegal.
// Only pending moves, and only by an event its kind knows (kindRules).
func (s RequestStatus) Next(k RequestKind, ev RequestEvent) (RequestStatus, error) {
	if !s.Known() {
		return s, fmt.Errorf("unknown request status %q", s)
	}
	if s.IsTerminal() {
		return s, fmt.Errorf("%w: %s", ErrTerminal, s)
	}
	rule, ok := kindRules[k]
	if !ok {
		rule = kindRules[KindPlan] // a record whose kind does not read is refused by Validate
	}
	if next, ok := rule.next[ev]; ok {
		return next, nil
	}
	for _, e := range RequestEvents {
		if e == ev {
			return s, fmt.Errorf("a %s request cannot %s", k, ev)
		}
	}
	return s, fmt.Errorf("unknown request event %q", ev)
}

// Transition is one entry of a request's history.
type Transition struct {
	At   time.Time     `json:"at"`
	From RequestStatus `json:"from,omitempty"`
	To   RequestStatus `json:"to"`
	By   string        `json:"by"`
	Note string        `json:"note,omitempty"`
}

// Request is the record kept in requests/<id>.json (docs/ARCHITECTURE.md, "State machines").
//
// The shutdown payload is Reason (why the lead asks); the teammate's answer
// to it is ResponseReason, so neither overwrites the other.
type Request struct {
	ID       string        `json:"id"`
	Kind     RequestKind   `json:"kind"`
	From     string        `json:"from"`
	To       string        `json:"to"`
	Created  time.Time     `json:"created"`
	Deadline time.Time     `json:"deadline"`
	Status   RequestStatus `json:"status"`

	Plan   string `json:"plan,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Revises is the plan this one replaces: the member's previous plan,
	// rejected or expired.
	Revises string `json:"revises,omitempty"`

	// Permission is what a permission request asks to do.
	Permission *Permission `json:"permission,omitempty"`
	// Scope is how far an allowed permission reaches: ScopeOnce (this use)
	// or ScopeSession (what Rule covers, for the rest of the member's
	// session). Rule is set when the request opens: the rule an allowance
	// for the session would add (the one-key choice on screen).
	Scope string `json:"scope,omitempty"`
	Rule  string `json:"rule,omitempty"`

	// Setup is the script a setup request asks to run; Review the change
	// a review request puts to the lead.
	Setup  *Setup  `json:"setup,omitempty"`
	Review *Review `json:"review,omitempty"`

	Approve        *bool      `json:"approve,omitempty"`
	Feedback       string     `json:"feedback,omitempty"`
	ResponseReason string     `json:"response_reason,omitempty"`
	ResolvedBy     string     `json:"resolved_by,omitempty"`
	ResolvedAt     *time.Time `json:"resolved_at,omitempty"`

	History []Transition `json:"history"`
}

// Validate checks a record read from disk or about to be written.
func (r *Request) Validate() error {
	fail := func(format string, a ...any) error {
		return fmt.Errorf("request %s: %s", clip(r.ID, 64), fmt.Sprintf(format, a...))
	}
	if err := ValidateID(r.ID); err != nil {
		return fmt.Errorf("request: id: %w", err)
	}
	if !r.Kind.Known() {
		return fail("kind %q: want shutdown, plan, permission, setup or review", clip(string(r.Kind), 64))
	}
	if err := ValidateName(r.From); err != nil {
		return fail("from: %v", err)
	}
	if err := ValidateName(r.To); err != nil {
		return fail("to: %v", err)
	}
	if r.Created.IsZero() {
		return fail("created is required")
	}
	if r.Deadline.IsZero() {
		return fail("deadline is required")
	}
	if !r.Status.Known() {
		return fail("unknown status %q", r.Status)
	}
	if r.Kind == KindPlan && r.Plan == "" {
		return fail("plan is required")
	}
	if r.Kind == KindPermission && (r.Permission == nil || r.Permission.Tool == "") {
		return fail("permission.tool is required")
	}
	if r.Kind == KindSetup && (r.Setup == nil || r.Setup.SHA256 == "") {
		return fail("setup.sha256 is required")
	}
	if r.Kind == KindReview && (r.Review == nil || r.Review.Branch == "" || r.Review.Head == "") {
		return fail("review.branch and review.head are required")
	}
	if r.Scope != "" && r.Scope != ScopeOnce && r.Scope != ScopeSession {
		return fail("scope %q: want %s or %s", clip(r.Scope, 64), ScopeOnce, ScopeSession)
	}
	if r.Revises != "" {
		if err := ValidateID(r.Revises); err != nil {
			return fail("revises: %v", err)
		}
	}
	return nil
}

// Apply moves the record by ev, stamping who and when, and appends the
// transition to its history. An illegal transition changes nothing.
func (r *Request) Apply(ev RequestEvent, by string, at time.Time, note string) error {
	next, err := r.Status.Next(r.Kind, ev)
	if err != nil {
		return fmt.Errorf("request %s: %w", r.ID, err)
	}
	at = at.UTC()
	r.History = append(r.History, Transition{At: at, From: r.Status, To: next, By: by, Note: note})
	r.Status = next
	r.ResolvedBy = by
	r.ResolvedAt = &at
	switch ev {
	case EventApprove:
		r.Approve = Bool(true)
	case EventReject, EventDiscard:
		r.Approve = Bool(false)
	}
	return nil
}

// NewRequest opens a pending request record with its first history entry.
func NewRequest(kind RequestKind, id, from, to string, created time.Time, ttl time.Duration) Request {
	created = created.UTC()
	return Request{
		ID: id, Kind: kind, From: from, To: to,
		Created: created, Deadline: created.Add(ttl), Status: RequestPending,
		History: []Transition{{At: created, To: RequestPending, By: from}},
	}
}

// ResolvedOrCreated is when r was resolved, or when it was made while it
// is pending: the time lists of final requests sort on, newest first.
func (r *Request) ResolvedOrCreated() time.Time {
	if r.ResolvedAt != nil {
		return *r.ResolvedAt
	}
	return r.Created
}

// Permission is what an agent asks to do: use Tool with Input. Summary
// draws it on one line for a person, Drawn whole (the command, the file
// and its diff), paths relative to where the agent runs; Suggestions are the agent's own
// offers of what an allowance could cover (Claude Code's
// permission_suggestions), kept as it sent them.
type Permission struct {
	Tool        string          `json:"tool"`
	Input       json.RawMessage `json:"input,omitempty"`
	Summary     string          `json:"summary,omitempty"`
	Drawn       string          `json:"drawn,omitempty"`
	ToolUseID   string          `json:"tool_use_id,omitempty"`
	Suggestions json.RawMessage `json:"suggestions,omitempty"`
}

// Scopes of an allowed permission.
const (
	ScopeOnce    = "once"
	ScopeSession = "session"
)

// Setup is a workspace's setup and teardown, as the lead approves them:
// the script's text, its sha256 (what the approval is remembered by) and
// the worktree it would run in first.
type Setup struct {
	Script   string `json:"script"`
	SHA256   string `json:"sha256"`
	Worktree string `json:"worktree,omitempty"`
}

// Review is a teammate's change put to the lead: its branch, the base it
// would be merged into, the commit the branch forked from (BaseCommit)
// and the one reviewed (Head: what a merge merges, however the branch
// moves after), where the worktree and repository are, the plan it
// carries out, and the diff's size.
type Review struct {
	Branch     string `json:"branch"`
	Base       string `json:"base"`
	BaseCommit string `json:"base_commit"`
	Head       string `json:"head"`
	Repo       string `json:"repo"`
	Worktree   string `json:"worktree"`
	Plan       string `json:"plan,omitempty"` // the plan request's id
	Summary    string `json:"summary,omitempty"`
	Files      int    `json:"files"`
	Added      int    `json:"added"`
	Deleted    int    `json:"deleted"`
	// Merge is how it reaches Base (team.json's workspace "merge"); Auto:
	// its auto_merge merges it without the lead.
	Merge string `json:"merge,omitempty"`
	Auto  bool   `json:"auto,omitempty"`
}
