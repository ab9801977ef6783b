package protocol_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"huddle/protocol"
)

func TestRequestStatusAndEventLists(t *testing.T) {
	// docs/ARCHITECTURE.md, "State machines": the lists the exhaustive tables below iterate over.
	wantS := []protocol.RequestStatus{"pending", "approved", "rejected", "expired", "cancelled", "allowed", "denied", "merged", "changes_requested", "discarded"}
	if !slices.Equal(protocol.RequestStatuses, wantS) {
		t.Errorf("RequestStatuses = %v, want %v", protocol.RequestStatuses, wantS)
	}
	wantE := []protocol.RequestEvent{"approve", "reject", "deadline", "cancel", "discard"}
	if !slices.Equal(protocol.RequestEvents, wantE) {
		t.Errorf("RequestEvents = %v, want %v", protocol.RequestEvents, wantE)
	}
}

// TestAnswerEvents: approve and reject are the answers; AnswerEvent maps
// an answer line's approve field onto them, and the state machine takes
// each to its own final state.
func TestAnswerEvents(t *testing.T) {
	for _, ev := range protocol.RequestEvents {
		want := ev == protocol.EventApprove || ev == protocol.EventReject || ev == protocol.EventDiscard
		if ev.IsAnswer() != want {
			t.Errorf("%s.IsAnswer() = %v, want %v", ev, ev.IsAnswer(), want)
		}
	}
	if protocol.RequestEvent("maybe").IsAnswer() {
		t.Error("an unknown event is an answer")
	}
	for approve, want := range map[bool]protocol.RequestStatus{true: protocol.RequestApproved, false: protocol.RequestRejected} {
		ev := protocol.AnswerEvent(approve)
		if !ev.IsAnswer() {
			t.Errorf("AnswerEvent(%v) = %q, not an answer", approve, ev)
		}
		if got, err := protocol.RequestPending.Next(protocol.KindPlan, ev); err != nil || got != want {
			t.Errorf("pending --%s--> %s, %v; want %s", ev, got, err, want)
		}
	}
}

func TestRequestStatusNextExhaustive(t *testing.T) {
	// The only legal moves: out of pending, one per event; a permission's
	// answers are its own, and its deadline denies it.
	plan := map[protocol.RequestEvent]protocol.RequestStatus{
		protocol.EventApprove:  protocol.RequestApproved,
		protocol.EventReject:   protocol.RequestRejected,
		protocol.EventDeadline: protocol.RequestExpired,
		protocol.EventCancel:   protocol.RequestCancelled,
	}
	legalFor := map[protocol.RequestKind]map[protocol.RequestEvent]protocol.RequestStatus{
		protocol.KindPlan: plan, protocol.KindShutdown: plan, protocol.KindSetup: plan,
		// A review merges, asks for changes or is discarded; only it can
		// be discarded.
		protocol.KindReview: {
			protocol.EventApprove:  protocol.RequestMerged,
			protocol.EventReject:   protocol.RequestChangesRequested,
			protocol.EventDiscard:  protocol.RequestDiscarded,
			protocol.EventDeadline: protocol.RequestExpired,
			protocol.EventCancel:   protocol.RequestCancelled,
		},
		protocol.KindPermission: {
			protocol.EventApprove:  protocol.RequestAllowed,
			protocol.EventReject:   protocol.RequestDenied,
			protocol.EventDeadline: protocol.RequestDenied,
			protocol.EventCancel:   protocol.RequestCancelled,
		},
	}
	statuses := append(slices.Clone(protocol.RequestStatuses), "", "bogus", "PENDING")
	events := append(slices.Clone(protocol.RequestEvents), "", "explode", "APPROVE")

	for kind, legal := range legalFor {
		for _, s := range statuses {
			for _, ev := range events {
				got, err := s.Next(kind, ev)
				want, evKnown := legal[ev]
				switch {
				case s == protocol.RequestPending && evKnown:
					if err != nil || got != want {
						t.Errorf("%q.Next(%q) = %q, %v; want %q, nil", s, ev, got, err, want)
					}
				case s.IsTerminal():
					if !errors.Is(err, protocol.ErrTerminal) {
						t.Errorf("%q.Next(%q): err = %v, want ErrTerminal", s, ev, err)
					}
					if err != nil && !strings.Contains(err.Error(), string(s)) {
						t.Errorf("%q.Next(%q): err %q does not name the state", s, ev, err)
					}
					if got != s {
						t.Errorf("%q.Next(%q) = %q; a terminal state never changes", s, ev, got)
					}
				default: // unknown status, or pending with an unknown event
					if err == nil {
						t.Errorf("%q.Next(%q) = %q, nil; want an error", s, ev, got)
					}
					if errors.Is(err, protocol.ErrTerminal) {
						t.Errorf("%q.Next(%q): err = %v; not a terminal-state refusal", s, ev, err)
					}
					if got != s {
						t.Errorf("%q.Next(%q) = %q, want unchanged", s, ev, got)
					}
				}
			}
		}
	}
}

func TestRequestStatusIsTerminal(t *testing.T) {
	want := map[protocol.RequestStatus]bool{
		"pending": false, "approved": true, "rejected": true, "expired": true, "cancelled": true, "allowed": true, "denied": true, "merged": true, "changes_requested": true, "discarded": true,
		"": false, "bogus": false,
	}
	for s, w := range want {
		if got := s.IsTerminal(); got != w {
			t.Errorf("%q.IsTerminal() = %v, want %v", s, got, w)
		}
	}
	for _, s := range protocol.RequestStatuses {
		if !s.Known() {
			t.Errorf("%q.Known() = false", s)
		}
	}
	if protocol.RequestStatus("bogus").Known() {
		t.Error(`"bogus".Known() = true`)
	}
}

var (
	reqCreated = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	cet        = time.FixedZone("CET", 3600)
)

func newPlanRequest() protocol.Request {
	r := protocol.NewRequest(protocol.KindPlan, "pl-5f1c9a2b7e31", "reservas", protocol.Lead, reqCreated, 10*time.Minute)
	r.Plan = "pay invoice #123"
	return r
}

func cloneRequest(r protocol.Request) protocol.Request {
	c := r
	c.History = slices.Clone(r.History)
	if r.Approve != nil {
		c.Approve = protocol.Bool(*r.Approve)
	}
	if r.ResolvedAt != nil {
		at := *r.ResolvedAt
		c.ResolvedAt = &at
	}
	return c
}

func TestNewRequest(t *testing.T) {
	r := protocol.NewRequest(protocol.KindShutdown, "sd-0123456789ab", protocol.Lead, "reservas", reqCreated.In(cet), time.Minute)
	if r.Status != protocol.RequestPending {
		t.Errorf("status = %q, want pending", r.Status)
	}
	if !r.Created.Equal(reqCreated) || r.Created.Location() != time.UTC {
		t.Errorf("created = %v, want %v in UTC", r.Created, reqCreated)
	}
	if !r.Deadline.Equal(reqCreated.Add(time.Minute)) {
		t.Errorf("deadline = %v, want created + 1m", r.Deadline)
	}
	wantH := []protocol.Transition{{At: reqCreated, To: protocol.RequestPending, By: protocol.Lead}}
	if !reflect.DeepEqual(r.History, wantH) {
		t.Errorf("history = %+v, want %+v", r.History, wantH)
	}
	if r.Approve != nil || r.ResolvedAt != nil || r.ResolvedBy != "" {
		t.Errorf("a new request carries a resolution: %+v", r)
	}
	if err := r.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func TestRequestApply(t *testing.T) {
	tests := []struct {
		ev          protocol.RequestEvent
		by          string
		wantStatus  protocol.RequestStatus
		wantApprove *bool
	}{
		{protocol.EventApprove, protocol.Lead, protocol.RequestApproved, protocol.Bool(true)},
		{protocol.EventReject, protocol.Lead, protocol.RequestRejected, protocol.Bool(false)},
		{protocol.EventDeadline, "huddle", protocol.RequestExpired, nil},
		{protocol.EventCancel, protocol.Lead, protocol.RequestCancelled, nil},
	}
	for _, tt := range tests {
		t.Run(string(tt.ev), func(t *testing.T) {
			r := newPlanRequest()
			first := r.History[0]
			at := time.Date(2026, 11, 30, 10, 5, 0, 7000, cet) // 09:05 UTC
			if err := r.Apply(tt.ev, tt.by, at, "note "+string(tt.ev)); err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if r.Status != tt.wantStatus {
				t.Errorf("status = %q, want %q", r.Status, tt.wantStatus)
			}
			if !reflect.DeepEqual(r.Approve, tt.wantApprove) {
				t.Errorf("approve = %v, want %v", ptrStr(r.Approve), ptrStr(tt.wantApprove))
			}
			if r.ResolvedBy != tt.by {
				t.Errorf("resolved_by = %q, want %q", r.ResolvedBy, tt.by)
			}
			if r.ResolvedAt == nil || !r.ResolvedAt.Equal(at) || r.ResolvedAt.Location() != time.UTC {
				t.Errorf("resolved_at = %v, want %v in UTC", r.ResolvedAt, at.UTC())
			}
			wantH := []protocol.Transition{first, {
				At: at.UTC(), From: protocol.RequestPending, To: tt.wantStatus, By: tt.by, Note: "note " + string(tt.ev),
			}}
			if !reflect.DeepEqual(r.History, wantH) {
				t.Errorf("history = %+v\nwant %+v", r.History, wantH)
			}
			if err := r.Validate(); err != nil {
				t.Errorf("resolved record fails Validate: %v", err)
			}
		})
	}
}

func ptrStr(b *bool) string {
	if b == nil {
		return "nil"
	}
	if *b {
		return "true"
	}
	return "false"
}

func TestRequestApplyIllegalChangesNothing(t *testing.T) {
	resolved := func(ev protocol.RequestEvent) protocol.Request {
		r := newPlanRequest()
		if err := r.Apply(ev, protocol.Lead, reqCreated.Add(time.Minute), "first"); err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, first := range protocol.RequestEvents {
		if first == protocol.EventDiscard {
			continue // a plan cannot be discarded (TestRequestStatusNextExhaustive)
		}
		for _, second := range protocol.RequestEvents {
			r := resolved(first)
			before := cloneRequest(r)
			err := r.Apply(second, "mallory", reqCreated.Add(2*time.Minute), "second")
			if !errors.Is(err, protocol.ErrTerminal) {
				t.Errorf("%s then %s: err = %v, want ErrTerminal", first, second, err)
			}
			if err != nil && !strings.Contains(err.Error(), r.ID) {
				t.Errorf("%s then %s: err %q does not name the request", first, second, err)
			}
			if !reflect.DeepEqual(r, before) {
				t.Errorf("%s then %s: refused Apply changed the record:\n got %+v\nwant %+v", first, second, r, before)
			}
		}
	}

	// An unknown event on a pending request, and any event on an unknown status.
	r := newPlanRequest()
	before := cloneRequest(r)
	if err := r.Apply("explode", protocol.Lead, reqCreated, ""); err == nil {
		t.Error("unknown event: err = nil")
	}
	if !reflect.DeepEqual(r, before) {
		t.Errorf("unknown event changed the record: %+v", r)
	}
	r.Status = "bogus"
	before = cloneRequest(r)
	if err := r.Apply(protocol.EventApprove, protocol.Lead, reqCreated, ""); err == nil {
		t.Error("unknown status: err = nil")
	}
	if !reflect.DeepEqual(r, before) {
		t.Errorf("unknown status: record changed: %+v", r)
	}
}

func TestRequestJSONRoundTrip(t *testing.T) {
	r := newPlanRequest()
	if err := r.Apply(protocol.EventReject, protocol.Lead, reqCreated.Add(time.Minute), "too vague"); err != nil {
		t.Fatal(err)
	}
	r.Feedback = "say which invoice"
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var got protocol.Request
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, r)
	}
	for _, key := range []string{`"id":`, `"kind":"plan"`, `"status":"rejected"`, `"approve":false`, `"resolved_by":"lead"`, `"resolved_at":`, `"history":`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("record %s lacks %s", b, key)
		}
	}
}

func TestRequestValidate(t *testing.T) {
	valid := func() protocol.Request {
		return protocol.NewRequest(protocol.KindShutdown, "sd-0123456789ab", protocol.Lead, "reservas", reqCreated, time.Minute)
	}
	if r := valid(); r.Validate() != nil {
		t.Fatalf("valid shutdown request: %v", r.Validate())
	}
	if r := newPlanRequest(); r.Validate() != nil {
		t.Fatalf("valid plan request: %v", r.Validate())
	}
	const p = "request sd-0123456789ab: "
	tests := []struct {
		name  string
		edit  func(*protocol.Request)
		want  string
		exact bool
	}{
		{"id empty", func(r *protocol.Request) { r.ID = "" }, "request: id: id is empty", true},
		{"id path", func(r *protocol.Request) { r.ID = "../x" }, "request: id: invalid id", false},
		{"id slash", func(r *protocol.Request) { r.ID = "a/b" }, "request: id: invalid id", false},
		{"kind empty", func(r *protocol.Request) { r.Kind = "" }, p + `kind "": want shutdown, plan, permission, setup or review`, true},
		{"kind unknown", func(r *protocol.Request) { r.Kind = "vacation" }, p + `kind "vacation": want shutdown, plan, permission, setup or review`, true},
		{"from empty", func(r *protocol.Request) { r.From = "" }, p + "from: name is empty", true},
		{"from invalid", func(r *protocol.Request) { r.From = "../x" }, p + "from: invalid name", false},
		{"to empty", func(r *protocol.Request) { r.To = "" }, p + "to: name is empty", true},
		{"to invalid", func(r *protocol.Request) { r.To = "LEAD" }, p + "to: invalid name", false},
		{"created", func(r *protocol.Request) { r.Created = time.Time{} }, p + "created is required", true},
		{"deadline", func(r *protocol.Request) { r.Deadline = time.Time{} }, p + "deadline is required", true},
		{"status empty", func(r *protocol.Request) { r.Status = "" }, p + `unknown status ""`, true},
		{"status unknown", func(r *protocol.Request) { r.Status = "done" }, p + `unknown status "done"`, true},
		{"plan missing", func(r *protocol.Request) { r.Kind = protocol.KindPlan }, p + "plan is required", true},
		{"permission missing", func(r *protocol.Request) { r.Kind = protocol.KindPermission }, p + "permission.tool is required", true},
		{"permission tool missing", func(r *protocol.Request) {
			r.Kind, r.Permission = protocol.KindPermission, &protocol.Permission{Input: []byte(`{}`)}
		}, p + "permission.tool is required", true},
		{"scope unknown", func(r *protocol.Request) {
			r.Kind, r.Permission, r.Scope = protocol.KindPermission, &protocol.Permission{Tool: "Bash"}, "forever"
		}, p + `scope "forever": want once or session`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := valid()
			tt.edit(&r)
			err := r.Validate()
			if tt.exact {
				wantErr(t, err, tt.want)
			} else {
				wantErrPrefix(t, err, tt.want)
			}
		})
	}
	// Every state, terminal ones included, is a valid record.
	for _, s := range protocol.RequestStatuses {
		r := valid()
		r.Status = s
		if err := r.Validate(); err != nil {
			t.Errorf("status %s: %v", s, err)
		}
	}
}
