package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"huddle/protocol"
	"huddle/store"
)

func newPlan(t *testing.T, from string) *protocol.Request {
	t.Helper()
	r := protocol.NewRequest(protocol.KindPlan, protocol.NewRequestID(protocol.KindPlan), from, protocol.Lead, time.Now(), time.Hour)
	r.Plan = "refactor the parser"
	return &r
}

// testRacingApprovers: many resolvers on two handles (two connections for
// NATS) decide one request at once; exactly one wins and everyone else is
// told who.
func testRacingApprovers(t *testing.T, open Opener) {
	ctx := ctxOf(t)
	handles := []store.Store{open(t), open(t)}
	p := newPlan(t, "alice")
	if err := handles[0].CreateRequest(ctx, p); err != nil {
		t.Fatal(err)
	}
	const racers = 16
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		winners []string
		losers  []*store.AlreadyError
		others  []error
	)
	start := make(chan struct{})
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ev := protocol.EventApprove
			if i%2 == 1 {
				ev = protocol.EventReject
			}
			by := fmt.Sprintf("approver-%d", i)
			_, err := handles[i%2].Decide(ctx, p.ID, store.Decision{Event: ev, By: by, Text: by})
			mu.Lock()
			defer mu.Unlock()
			var already *store.AlreadyError
			switch {
			case err == nil:
				winners = append(winners, by)
			case errors.As(err, &already):
				losers = append(losers, already)
			default:
				others = append(others, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if len(winners) != 1 || len(others) != 0 || len(losers) != racers-1 {
		t.Fatalf("winners %v, losers %d, other errors %v", winners, len(losers), others)
	}
	for _, l := range losers {
		if l.By != winners[0] {
			t.Fatalf("a loser was told %s won, not %s", l.By, winners[0])
		}
	}
	for _, h := range handles {
		r, err := h.Request(ctx, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		if r.ResolvedBy != winners[0] || !r.Status.IsTerminal() || r.Feedback != winners[0] {
			t.Fatalf("record after the race: %+v", r)
		}
	}
}

// testPendingPlanResumed: a plan pending when its runtime went away is
// found pending by the next one (a new handle), with the member record
// that waits on it, and is decided then.
func testPendingPlanResumed(t *testing.T, open Opener) {
	ctx := ctxOf(t)
	s1 := open(t)
	p := newPlan(t, "alice")
	if err := s1.CreateRequest(ctx, p); err != nil {
		t.Fatal(err)
	}
	m := &protocol.Member{Name: "alice", Status: protocol.MemberAwaitingApproval, Since: time.Now().UTC(), Step: 2, RequestID: p.ID}
	if err := s1.PutMember(ctx, m); err != nil {
		t.Fatal(err)
	}
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := open(t)
	ms, _, err := s2.Members(ctx, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || ms[0].RequestID != p.ID || ms[0].Step != 2 || ms[0].Status != protocol.MemberAwaitingApproval {
		t.Fatalf("members after the restart: %+v", ms)
	}
	r, err := s2.Request(ctx, ms[0].RequestID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != protocol.RequestPending || r.Plan != p.Plan {
		t.Fatalf("plan after the restart: %+v", r)
	}
	if err := s2.CreateRequest(ctx, p); !errors.Is(err, store.ErrExists) {
		t.Fatalf("create again: %v, want ErrExists", err)
	}
	if _, err := s2.Decide(ctx, p.ID, store.Decision{Event: protocol.EventApprove, By: protocol.Lead}); err != nil {
		t.Fatal(err)
	}
	all, _, err := open(t).Requests(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 || all[0].Status != protocol.RequestApproved || all[0].ResolvedBy != protocol.Lead {
		t.Fatalf("requests: %+v", all)
	}
}

// testForgedAndStale is the store's part of what the team runtime refuses:
// an answer from someone who may not give it (store.CheckAnswer), an answer
// to a request already decided otherwise (store.Settle: stale), a decision
// on an unknown request or one that is no move from pending.
func testForgedAndStale(t *testing.T, open Opener) {
	ctx := ctxOf(t)
	s := open(t)
	p := newPlan(t, "alice")
	sd := protocol.NewRequest(protocol.KindShutdown, protocol.NewRequestID(protocol.KindShutdown), protocol.Lead, "alice", time.Now(), time.Hour)
	for _, r := range []*protocol.Request{p, &sd} {
		if err := s.CreateRequest(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	forged := []struct {
		r        *protocol.Request
		typ      protocol.MessageType
		from, to string
		want     string
	}{
		{p, protocol.TypePlanApprovalResponse, "mallory", "alice", "only the lead decides plans"},
		{p, protocol.TypePlanApprovalResponse, protocol.Lead, "mallory", "is not a plan of mallory"},
		{&sd, protocol.TypeShutdownResponse, "mallory", protocol.Lead, "only alice answers it"},
		{p, protocol.TypeShutdownResponse, "alice", protocol.Lead, "a plan request"},
	}
	for _, f := range forged {
		r, err := s.Request(ctx, f.r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if err := store.CheckAnswer(r, f.typ, f.from, f.to); err == nil || !strings.Contains(err.Error(), f.want) {
			t.Fatalf("%s from %s to %s: %v, want %q", f.typ, f.from, f.to, err, f.want)
		}
	}
	r, _ := s.Request(ctx, p.ID)
	if err := store.CheckAnswer(r, protocol.TypePlanApprovalResponse, protocol.Lead, "alice"); err != nil {
		t.Fatalf("the lead's answer: %v", err)
	}
	// The lead approves; a reject arriving after is stale, an approve
	// arriving again is the same answer.
	if _, err := store.Settle(ctx, s, r, store.Decision{Event: protocol.EventApprove, By: protocol.Lead}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Settle(ctx, s, r, store.Decision{Event: protocol.EventReject, By: protocol.Lead}); err == nil || !strings.Contains(err.Error(), "stale answer") {
		t.Fatalf("stale reject: %v", err)
	}
	if got, err := store.Settle(ctx, s, r, store.Decision{Event: protocol.EventApprove, By: protocol.Lead}); err != nil || got.Status != protocol.RequestApproved {
		t.Fatalf("the same answer again: %v %+v", err, got)
	}
	var already *store.AlreadyError
	if _, err := s.Decide(ctx, p.ID, store.Decision{Event: protocol.EventReject, By: "mallory"}); !errors.As(err, &already) || already.By != protocol.Lead {
		t.Fatalf("decide a decided request: %v", err)
	}
	if _, err := s.Decide(ctx, "sd-000000000000", store.Decision{Event: protocol.EventApprove, By: "alice"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("decide an unknown request: %v, want ErrNotFound", err)
	}
	if _, err := s.Decide(ctx, sd.ID, store.Decision{Event: "explode", By: "alice"}); err == nil {
		t.Fatal("an unknown event decided a request")
	}
	if _, err := s.Decide(ctx, sd.ID, store.Decision{Event: protocol.EventApprove}); err == nil {
		t.Fatal("a decision by nobody decided a request")
	}
	if r, _ := s.Request(ctx, sd.ID); r.Status != protocol.RequestPending {
		t.Fatalf("refused decisions changed the shutdown request: %+v", r)
	}
}

// decider is one of the two resolvers racing on a plan in
// testPlanRoundTripRacingDeciders.
type decider struct {
	s     store.Store
	event protocol.RequestEvent
	text  string
}

// raced is what the two deciders of one plan got: errs[i] is decider i's.
type raced struct {
	id   string
	errs [2]error
}

// testPlanRoundTripRacingDeciders: the plan approval round trip of
// docs/ARCHITECTURE.md, "State machines" across two handles (two connections for NATS), as two
// machines of one team make it. The member asks on one handle; the lead's
// consumer, on the other, approves each plan while at the same instant a
// person on the member's handle rejects it. Of each pair exactly one
// decides, only the winner answers, and the member gets exactly one answer
// per plan, the one its record says, which it settles without a stale.
func testPlanRoundTripRacingDeciders(t *testing.T, open Opener) {
	ctx := ctxOf(t)
	memberSide, leadSide := open(t), open(t)
	deciders := [2]decider{
		{leadSide, protocol.EventApprove, "the lead's runtime"},
		{memberSide, protocol.EventReject, "a person at the other machine"},
	}
	const plans = 8
	races := make(chan raced, plans)
	leadSub, err := leadSide.Consume(ctx, protocol.Lead, func(ctx context.Context, d store.Delivery) error {
		if d.Msg.Type == protocol.TypePlanApprovalRequest {
			races <- race(ctx, deciders, &d.Msg)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	stopAtEnd(t, leadSub)
	answers := &collector{}
	var mu sync.Mutex
	var problems []string
	memberSub, err := memberSide.Consume(ctx, "alice", func(ctx context.Context, d store.Delivery) error {
		answers.add(d)
		if d.Msg.Type != protocol.TypePlanApprovalResponse {
			return nil
		}
		if err := settleAnswer(ctx, memberSide, &d.Msg); err != nil {
			mu.Lock()
			problems = append(problems, err.Error())
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	stopAtEnd(t, memberSub)

	ids := map[string]bool{}
	for range plans {
		p := newPlan(t, "alice")
		if err := memberSide.CreateRequest(ctx, p); err != nil {
			t.Fatal(err)
		}
		m := protocol.NewMessage(protocol.TypePlanApprovalRequest, "alice", protocol.Lead)
		m.RequestID, m.Plan = p.ID, p.Plan
		if err := memberSide.Append(ctx, protocol.Lead, &m); err != nil {
			t.Fatal(err)
		}
		ids[p.ID] = true
	}
	winners := map[string]protocol.RequestEvent{}
	for range plans {
		select {
		case r := <-races:
			winners[r.id] = winnerOf(t, deciders, r)
		case <-time.After(wait):
			t.Fatalf("the lead raced %d of %d plans", len(winners), plans)
		}
	}
	// Every answer was appended before this line, so once it is handled
	// every answer has been: a second answer to a plan would be seen.
	if err := leadSide.Append(ctx, "alice", message(protocol.Lead, "alice", "that was all")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the member's last message", func() bool {
		got := answers.all()
		return len(got) > 0 && got[len(got)-1].Msg.Content == "that was all"
	})
	mu.Lock()
	defer mu.Unlock()
	if len(problems) > 0 {
		t.Fatalf("the member refused answers: %v", problems)
	}
	got := answers.all()
	if len(got) != plans+1 {
		t.Fatalf("the member got %d messages for %d plans and a last line: %v", len(got), plans, got)
	}
	for _, d := range got[:plans] {
		id := d.Msg.RequestID
		if !ids[id] || d.Msg.Event() != winners[id] {
			t.Fatalf("answer %s (%s) for plans %v won by %v", id, d.Msg.Event(), ids, winners)
		}
		delete(ids, id)
	}
}

// race runs both deciders on the plan asked by m at one instant; the one
// whose Decide wins answers the member, as team.Decide does.
func race(ctx context.Context, deciders [2]decider, m *protocol.Message) raced {
	out := raced{id: m.RequestID}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, dc := range deciders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := dc.s.Decide(ctx, m.RequestID, store.Decision{Event: dc.event, By: protocol.Lead, Text: dc.text})
			if err == nil {
				resp := protocol.NewMessage(protocol.TypePlanApprovalResponse, protocol.Lead, m.From)
				resp.RequestID, resp.Approve, resp.Feedback = m.RequestID, protocol.Bool(dc.event == protocol.EventApprove), dc.text
				err = dc.s.Append(ctx, m.From, &resp)
			}
			out.errs[i] = err
		}()
	}
	close(start)
	wg.Wait()
	return out
}

// winnerOf checks that exactly one decider of r won and the other was
// told the outcome, and returns the winner's event.
func winnerOf(t *testing.T, deciders [2]decider, r raced) protocol.RequestEvent {
	t.Helper()
	for i, err := range r.errs {
		other := r.errs[1-i]
		if err != nil {
			continue
		}
		want, _ := protocol.RequestPending.Next(protocol.KindPlan, deciders[i].event)
		var already *store.AlreadyError
		if !errors.As(other, &already) || already.Status != want || already.ID != r.id {
			t.Fatalf("plan %s: %s won, the other decider got %v", r.id, deciders[i].event, other)
		}
		return deciders[i].event
	}
	t.Fatalf("plan %s: no decider won: %v", r.id, r.errs)
	return ""
}

// settleAnswer is the member's side of an answer, as the runtime does it:
// the record must allow it (CheckAnswer), agree with it (Settle: not
// stale) and say what the answer says.
func settleAnswer(ctx context.Context, s store.Store, m *protocol.Message) error {
	r, err := s.Request(ctx, m.RequestID)
	if err != nil {
		return err
	}
	if err := store.CheckAnswer(r, m.Type, m.From, m.To); err != nil {
		return err
	}
	got, err := store.Settle(ctx, s, r, store.Decision{Event: m.Event(), By: m.From, Text: m.Feedback})
	if err != nil {
		return err
	}
	if want, _ := protocol.RequestPending.Next(got.Kind, m.Event()); got.Status != want || got.Feedback != m.Feedback {
		return fmt.Errorf("plan %s answered %s (%q) reads %s (%q)", m.RequestID, m.Event(), m.Feedback, got.Status, got.Feedback)
	}
	return nil
}

// testArchive: a final record archived leaves the live listing for every
// handle and stays readable; a pending one is refused; archiving twice is
// no error; a later decision still loses to the archived one.
func testArchive(t *testing.T, open Opener) {
	ctx := ctxOf(t)
	a, b := open(t), open(t)
	pending, decided := newPlan(t, "alice"), newPlan(t, "bob")
	for _, r := range []*protocol.Request{pending, decided} {
		if err := a.CreateRequest(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Decide(ctx, decided.ID, store.Decision{Event: protocol.EventApprove, By: protocol.Lead, Text: "go"}); err != nil {
		t.Fatal(err)
	}
	if err := b.Archive(ctx, pending.ID); err == nil {
		t.Fatal("a pending request was archived")
	}
	// As a set: the two were created within the clock's resolution.
	ids := func(rs []protocol.Request) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.ID+":"+string(r.Status))
		}
		slices.Sort(out)
		return out
	}
	sorted := func(s ...string) []string { slices.Sort(s); return s }
	live, _, err := a.LiveRequests(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ids(live), []string{pending.ID + ":pending", decided.ID + ":approved"}; !slices.Equal(got, sorted(want...)) {
		t.Fatalf("live before the archive: %v, want %v", got, want)
	}
	for range 2 {
		if err := b.Archive(ctx, decided.ID); err != nil {
			t.Fatalf("archive: %v", err)
		}
	}
	for _, h := range []store.Store{a, b} {
		live, _, err := h.LiveRequests(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := ids(live), []string{pending.ID + ":pending"}; !slices.Equal(got, sorted(want...)) {
			t.Fatalf("live after the archive: %v, want %v", got, want)
		}
		all, _, err := h.Requests(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := ids(all), []string{pending.ID + ":pending", decided.ID + ":approved"}; !slices.Equal(got, sorted(want...)) {
			t.Fatalf("every request after the archive: %v, want %v", got, want)
		}
		r, err := h.Request(ctx, decided.ID)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != protocol.RequestApproved || r.ResolvedBy != protocol.Lead || r.Feedback != "go" {
			t.Fatalf("the archived record: %+v", r)
		}
	}
	_, err = b.Decide(ctx, decided.ID, store.Decision{Event: protocol.EventReject, By: "late"})
	var already *store.AlreadyError
	if !errors.As(err, &already) || already.By != protocol.Lead {
		t.Fatalf("a decision after the archive: %v", err)
	}
	if r, err := a.Request(ctx, decided.ID); err != nil || r.Status != protocol.RequestApproved {
		t.Fatalf("after a late decision: %+v, %v", r, err)
	}
}

// testReschedule: a pending request's deadline moves, for every handle; a
// decided one stays as its decision made it; an unknown id is not found.
func testReschedule(t *testing.T, open Opener) {
	ctx := ctxOf(t)
	a, b := open(t), open(t)
	p := newPlan(t, "alice")
	if err := a.CreateRequest(ctx, p); err != nil {
		t.Fatal(err)
	}
	later := p.Deadline.Add(90 * time.Minute)
	r, err := b.Reschedule(ctx, p.ID, later)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Deadline.Equal(later) || r.Status != protocol.RequestPending {
		t.Fatalf("rescheduled: %+v, want the deadline %v", r, later)
	}
	if r, err := a.Request(ctx, p.ID); err != nil || !r.Deadline.Equal(later) {
		t.Fatalf("read after the reschedule: %+v, %v; want the deadline %v", r, err, later)
	}
	if _, err := a.Decide(ctx, p.ID, store.Decision{Event: protocol.EventReject, By: protocol.Lead, Text: "no"}); err != nil {
		t.Fatal(err)
	}
	r, err = b.Reschedule(ctx, p.ID, later.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != protocol.RequestRejected || !r.Deadline.Equal(later) {
		t.Fatalf("a decided request rescheduled: %+v", r)
	}
	if _, err := a.Reschedule(ctx, "plan-nosuch", later); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an unknown id: %v", err)
	}
}

// testPermissionAllowedForTheSession: a permission decided on one handle
// reads allowed, with its scope, on another; a second decision is told
// the first's status; a scope on anything else is refused; and a deadline
// denies a permission.
func testPermissionAllowedForTheSession(t *testing.T, open Opener) {
	ctx := ctxOf(t)
	a, b := open(t), open(t)
	newPermission := func() *protocol.Request {
		r := protocol.NewRequest(protocol.KindPermission, protocol.NewRequestID(protocol.KindPermission), "alice", protocol.Lead, time.Now(), time.Hour)
		r.Permission = &protocol.Permission{Tool: "Bash", Input: []byte(`{"command":"go test ./..."}`), Summary: "$ go test ./..."}
		r.Rule = "Bash(go test:*)"
		if err := a.CreateRequest(ctx, &r); err != nil {
			t.Fatal(err)
		}
		return &r
	}
	p := newPermission()
	if _, err := a.Decide(ctx, p.ID, store.Decision{Event: protocol.EventReject, By: protocol.Lead, Scope: protocol.ScopeSession}); err == nil {
		t.Fatal("a denial with a scope was taken")
	}
	if _, err := a.Decide(ctx, p.ID, store.Decision{Event: protocol.EventApprove, By: protocol.Lead, Scope: protocol.ScopeSession}); err != nil {
		t.Fatal(err)
	}
	got, err := b.Request(ctx, p.ID)
	if err != nil || got.Status != protocol.RequestAllowed || got.Scope != protocol.ScopeSession || got.Rule != p.Rule || got.Permission.Tool != "Bash" {
		t.Fatalf("the permission on the other handle: %+v, %v; want allowed for the session", got, err)
	}
	var already *store.AlreadyError
	if _, err := b.Decide(ctx, p.ID, store.Decision{Event: protocol.EventReject, By: "late", Text: "no"}); !errors.As(err, &already) || already.Status != protocol.RequestAllowed {
		t.Fatalf("a second decision: %v; want AlreadyError allowed", err)
	}
	if d := store.DecisionOf(got); d.Event != protocol.EventApprove || d.Scope != protocol.ScopeSession {
		t.Errorf("DecisionOf the allowed permission = %+v", d)
	}
	late := newPermission()
	r, err := b.Decide(ctx, late.ID, store.Decision{Event: protocol.EventDeadline, By: "huddle", Text: "no answer before the deadline"})
	if err != nil || r.Status != protocol.RequestDenied || r.Scope != "" {
		t.Fatalf("a permission past its deadline: %+v, %v; want denied", r, err)
	}
	if fr, ok := store.FromDecision(late.ID, store.Decision{Event: protocol.EventDeadline, By: "huddle"}); !ok || fr.Kind != protocol.KindPermission || fr.Status != protocol.RequestDenied {
		t.Errorf("FromDecision of a permission's deadline = %+v, %v", fr, ok)
	}
}

// testReviewRace: a review is merged, sent back and discarded at one
// instant by resolvers on two handles; exactly one wins, each other one
// is told the winner and its final state (merged, changes_requested or
// discarded), the record says the winner's, and an archived review still
// refuses a late merge.
func testReviewRace(t *testing.T, open Opener) {
	ctx := ctxOf(t)
	handles := []store.Store{open(t), open(t)}
	r := protocol.NewRequest(protocol.KindReview, protocol.NewRequestID(protocol.KindReview), "alice", protocol.Lead, time.Now(), time.Hour)
	r.Review = &protocol.Review{Branch: "huddle/crew/alice", Base: "main", BaseCommit: "1111", Head: "2222", Files: 1, Added: 3}
	if err := handles[0].CreateRequest(ctx, &r); err != nil {
		t.Fatal(err)
	}
	events := []protocol.RequestEvent{protocol.EventApprove, protocol.EventApprove, protocol.EventReject, protocol.EventDiscard}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		won    []protocol.RequestEvent
		by     []string
		losers []*store.AlreadyError
		others []error
	)
	start := make(chan struct{})
	for i, ev := range events {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			who := fmt.Sprintf("lead-%d", i)
			_, err := handles[i%2].Decide(ctx, r.ID, store.Decision{Event: ev, By: who, Text: string(ev)})
			mu.Lock()
			defer mu.Unlock()
			var already *store.AlreadyError
			switch {
			case err == nil:
				won, by = append(won, ev), append(by, who)
			case errors.As(err, &already):
				losers = append(losers, already)
			default:
				others = append(others, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if len(won) != 1 || len(others) != 0 || len(losers) != len(events)-1 {
		t.Fatalf("winners %v, losers %d, other errors %v", won, len(losers), others)
	}
	want, _ := protocol.RequestPending.Next(protocol.KindReview, won[0])
	for _, l := range losers {
		if l.By != by[0] || l.Status != want {
			t.Fatalf("a loser was told %s %s, not %s %s", l.By, l.Status, by[0], want)
		}
	}
	for _, h := range handles {
		got, err := h.Request(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != want || got.ResolvedBy != by[0] || got.Review == nil || got.Review.Head != "2222" {
			t.Fatalf("record after the race: %+v", got)
		}
	}
	if err := handles[0].Archive(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	var already *store.AlreadyError
	if _, err := handles[1].Decide(ctx, r.ID, store.Decision{Event: protocol.EventApprove, By: "late"}); !errors.As(err, &already) || already.Status != want {
		t.Fatalf("a merge after the archive: %v", err)
	}
	if _, err := handles[0].Decide(ctx, "pl-0123456789ab", store.Decision{Event: protocol.EventDiscard, By: "x"}); err == nil {
		t.Fatal("a discard of a request that is no review (and does not exist) was accepted")
	}
}
