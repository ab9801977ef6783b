package storetest

import (
	"errors"
	"fmt"
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
	ms, err := s2.Members(ctx, time.Hour)
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
	all, err := open(t).Requests(ctx)
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
