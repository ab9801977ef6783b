// Package storetest is the contract every store.Store keeps: one suite of
// tests (Run) that each store's package runs against itself, so the files
// and the NATS store are held to the same guarantees.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"huddle/ipc/trace"
	"huddle/protocol"
	"huddle/store"
)

// Opener opens a new handle on one team: for the files store the same
// directory again, for NATS a new connection. Each call is what a
// restarted process (or another machine) would get. The handle is closed
// when the test ends.
type Opener func(t *testing.T) store.Store

// Factory makes a fresh, empty team for one test and returns its Opener.
type Factory func(t *testing.T) Opener

// wait is the deadline of every condition the suite waits on.
const wait = 15 * time.Second

// Run runs the contract against the stores f makes.
func Run(t *testing.T, f Factory) {
	tests := []struct {
		name string
		fn   func(t *testing.T, open Opener)
	}{
		{"DeliveryInOrderAcrossRestarts", testDeliveryAcrossRestarts},
		{"FailingHandlerDeadLetters", testFailingHandler},
		{"AppendRefusesMisaddressed", testAppendRefuses},
		{"RacingApproversOneWinner", testRacingApprovers},
		{"PendingPlanResumedAfterRestart", testPendingPlanResumed},
		{"ForgedAndStaleResponsesRefused", testForgedAndStale},
		{"InvalidNamesRefused", testInvalidNames},
		{"DeadLetters", testDeadLetters},
		{"LeaseOneHolderTakenOverAfterExpiry", testLease},
		{"MembersHeartbeatAndLost", testMembers},
		{"TraceSpansWatched", testTraces},
		{"ConfigCreatedOnce", testConfig},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, f(t))
		})
	}
}

func ctxOf(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*wait)
	t.Cleanup(cancel)
	return ctx
}

// waitFor waits until cond holds, failing the test at the deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

// stopAtEnd stops sub when the test ends and reports its error.
func stopAtEnd(t *testing.T, sub store.Subscription) {
	t.Cleanup(func() {
		if err := sub.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
}

func message(from, to, text string) *protocol.Message {
	m := protocol.NewMessage(protocol.TypeMessage, from, to)
	m.Content = text
	return &m
}

// collector records deliveries, safe for the consumer's goroutine and the
// test's.
type collector struct {
	mu  sync.Mutex
	got []store.Delivery
}

func (c *collector) add(d store.Delivery) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, d)
}

func (c *collector) all() []store.Delivery {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]store.Delivery(nil), c.got...)
}

func (c *collector) len() int { return len(c.all()) }

func texts(ds []store.Delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Msg.Content
		if d.Redelivery {
			out[i] += "*"
		}
	}
	return out
}

// testDeliveryAcrossRestarts: a consumer stopped while its handler is in
// the middle of a message leaves it to the next consumer, on a new handle,
// which gets it again marked and then the rest in order; an id appended
// twice is delivered once.
func testDeliveryAcrossRestarts(t *testing.T, open Opener) {
	ctx := ctxOf(t)
	s1 := open(t)
	var msgs []*protocol.Message
	for i := 1; i <= 8; i++ {
		msgs = append(msgs, message(protocol.Lead, "alice", fmt.Sprintf("m%d", i)))
	}
	if err := s1.Append(ctx, "alice", msgs[:3]...); err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs[3:] {
		if err := s1.Append(ctx, "alice", m); err != nil {
			t.Fatal(err)
		}
	}
	first := &collector{}
	inM4 := make(chan struct{})
	sub, err := s1.Consume(ctx, "alice", func(ctx context.Context, d store.Delivery) error {
		first.add(d)
		if d.Msg.Content == "m4" {
			close(inM4)
			<-ctx.Done() // interrupted by the stop, not handled
			return ctx.Err()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-inM4:
	case <-time.After(wait):
		t.Fatalf("m4 never delivered; got %v", texts(first.all()))
	}
	if err := sub.Stop(); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(texts(first.all()), " "), "m1 m2 m3 m4"; got != want {
		t.Fatalf("first consumer got %q, want %q", got, want)
	}

	// m2 again, same id: delivered once.
	dup := *msgs[1]
	s2 := open(t)
	if err := s2.Append(ctx, "alice", &dup, message(protocol.Lead, "alice", "m9")); err != nil {
		t.Fatal(err)
	}
	second := &collector{}
	sub2, err := s2.Consume(ctx, "alice", func(_ context.Context, d store.Delivery) error {
		second.add(d)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	stopAtEnd(t, sub2)
	waitFor(t, "m9", func() bool {
		got := second.all()
		return len(got) > 0 && got[len(got)-1].Msg.Content == "m9"
	})
	if got, want := strings.Join(texts(second.all()), " "), "m4* m5 m6 m7 m8 m9"; got != want {
		t.Fatalf("after the restart got %q, want %q (* = marked redelivery)", got, want)
	}
	all := append(first.all(), second.all()...)
	for i := 1; i < len(all); i++ {
		if all[i].Seq < all[i-1].Seq {
			t.Fatalf("Seq went back: %d after %d", all[i].Seq, all[i-1].Seq)
		}
	}
}

// testFailingHandler: a handler that keeps failing on one message has it
// dead-lettered after its retries; the next message is handled.
func testFailingHandler(t *testing.T, open Opener) {
	ctx := ctxOf(t)
	s := open(t)
	if err := s.Append(ctx, "bob", message(protocol.Lead, "bob", "poison"), message(protocol.Lead, "bob", "fine")); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	attempts := 0
	got := &collector{}
	sub, err := s.Consume(ctx, "bob", func(_ context.Context, d store.Delivery) error {
		if d.Msg.Content == "poison" {
			mu.Lock()
			attempts++
			mu.Unlock()
			return errors.New("cannot digest this")
		}
		got.add(d)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	stopAtEnd(t, sub)
	waitFor(t, "the message after the poison one", func() bool { return got.len() == 1 })
	mu.Lock()
	n := attempts
	mu.Unlock()
	if n != store.Retries {
		t.Fatalf("poison tried %d times, want %d", n, store.Retries)
	}
	dls, err := s.DeadLetters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(dls) != 1 || !strings.Contains(dls[0].Reason, "cannot digest this") || !strings.Contains(dls[0].Raw, "poison") || !strings.Contains(dls[0].Source, "bob") {
		t.Fatalf("dead letters: %+v", dls)
	}
}

// testAppendRefuses: a message addressed to someone else, invalid, or
// over 1 MiB is refused and nothing of the batch is written.
func testAppendRefuses(t *testing.T, open Opener) {
	ctx := ctxOf(t)
	s := open(t)
	bad := protocol.NewMessage(protocol.TypeMessage, protocol.Lead, "carol") // no text
	for _, batch := range [][]*protocol.Message{
		{message(protocol.Lead, "bob", "for bob")},
		{message(protocol.Lead, "alice", "fine"), &bad},
	} {
		if err := s.Append(ctx, "carol", batch...); err == nil {
			t.Fatalf("append of %v to carol: no error", batch)
		}
	}
	huge := message(protocol.Lead, "carol", strings.Repeat("x", protocol.MaxLine))
	if err := s.Append(ctx, "carol", huge); !errors.Is(err, store.ErrTooLarge) {
		t.Fatalf("append of a line over 1 MiB: %v, want ErrTooLarge", err)
	}
	if err := s.Append(ctx, "carol", message(protocol.Lead, "carol", "the only one")); err != nil {
		t.Fatal(err)
	}
	got := &collector{}
	sub, err := s.Consume(ctx, "carol", func(_ context.Context, d store.Delivery) error { got.add(d); return nil })
	if err != nil {
		t.Fatal(err)
	}
	stopAtEnd(t, sub)
	waitFor(t, "carol's message", func() bool { return got.len() >= 1 })
	// Another message behind it proves nothing else was queued before it.
	if err := s.Append(ctx, "carol", message(protocol.Lead, "carol", "last")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "carol's last message", func() bool { return got.len() >= 2 })
	if txt := strings.Join(texts(got.all()), " "); txt != "the only one last" {
		t.Fatalf("carol got %q", txt)
	}
}

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

// testInvalidNames: every name and id is checked before it is used.
func testInvalidNames(t *testing.T, open Opener) {
	ctx := ctxOf(t)
	s := open(t)
	badNames := []string{"", "../alice", "Alice", "a/b", "a b", ".hidden", strings.Repeat("a", 64)}
	for _, n := range badNames {
		if err := s.Append(ctx, n, message(protocol.Lead, n, "x")); err == nil {
			t.Errorf("append to %q: no error", n)
		}
		if sub, err := s.Consume(ctx, n, func(context.Context, store.Delivery) error { return nil }); err == nil {
			stopAtEnd(t, sub)
			t.Errorf("consume %q: no error", n)
		}
		if err := s.Heartbeat(ctx, n); err == nil {
			t.Errorf("heartbeat %q: no error", n)
		}
		if _, err := s.AcquireLease(ctx, n, "me", time.Minute); err == nil {
			t.Errorf("lease %q: no error", n)
		}
		m := &protocol.Member{Name: n, Status: protocol.MemberIdle, Since: time.Now()}
		if err := s.PutMember(ctx, m); err == nil {
			t.Errorf("member %q: no error", n)
		}
	}
	for _, id := range []string{"", "../../etc/passwd", "a/b", "-x", strings.Repeat("x", 65)} {
		r := protocol.NewRequest(protocol.KindShutdown, id, protocol.Lead, "alice", time.Now(), time.Hour)
		if err := s.CreateRequest(ctx, &r); err == nil {
			t.Errorf("create request %q: no error", id)
		}
		if _, err := s.Request(ctx, id); err == nil || errors.Is(err, store.ErrNotFound) {
			t.Errorf("request %q: %v, want an invalid-id error", id, err)
		}
		if _, err := s.Decide(ctx, id, store.Decision{Event: protocol.EventApprove, By: "alice"}); err == nil || errors.Is(err, store.ErrNotFound) {
			t.Errorf("decide %q: %v, want an invalid-id error", id, err)
		}
	}
	for _, n := range []string{"../team.json", "ipc/../x.puruto-ipc.json", "ipc/Alice.puruto-ipc.json", "members/alice.json", "/etc/passwd", ""} {
		if err := s.PutConfig(ctx, n, []byte("{}")); err == nil {
			t.Errorf("put config %q: no error", n)
		}
		if _, err := s.Config(ctx, n); err == nil || errors.Is(err, store.ErrNotFound) {
			t.Errorf("config %q: %v, want an invalid-name error", n, err)
		}
	}
	if rs, err := s.Requests(ctx); err != nil || len(rs) != 0 {
		t.Fatalf("refused requests left records: %v %+v", err, rs)
	}
	if ms, err := s.Members(ctx, time.Hour); err != nil || len(ms) != 0 {
		t.Fatalf("refused members left records: %v %+v", err, ms)
	}
}

// testDeadLetters: dead letters come back in order, raw input cut to 4 KiB.
func testDeadLetters(t *testing.T, open Opener) {
	ctx := ctxOf(t)
	s := open(t)
	if dls, err := s.DeadLetters(ctx); err != nil || len(dls) != 0 {
		t.Fatalf("an empty team's dead letters: %v %+v", err, dls)
	}
	big := strings.Repeat("z", 10_000)
	for i, raw := range []string{"not json", big} {
		if err := s.DeadLetter(ctx, store.DeadLetter{Source: "exec:alice", Offset: int64(i), Reason: fmt.Sprintf("reason %d", i), Raw: raw}); err != nil {
			t.Fatal(err)
		}
	}
	dls, err := open(t).DeadLetters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(dls) != 2 || dls[0].Reason != "reason 0" || dls[0].Raw != "not json" || dls[1].Reason != "reason 1" || len(dls[1].Raw) != 4096 || dls[1].TS == "" || dls[1].Source != "exec:alice" {
		t.Fatalf("dead letters: %d %+v", len(dls), dls)
	}
}

// testLease: one holder at a time; renewals keep it; once the holder stops
// renewing, another takes it after the TTL, and the old holder's renewal
// fails; a released lease is free at once.
func testLease(t *testing.T, open Opener) {
	ctx := ctxOf(t)
	a, b := open(t), open(t)
	const ttl = time.Second
	la, err := a.AcquireLease(ctx, "alice", "host-a", ttl)
	if err != nil {
		t.Fatal(err)
	}
	var held *store.HeldError
	if _, err := b.AcquireLease(ctx, "alice", "host-b", ttl); !errors.As(err, &held) || held.Holder != "host-a" {
		t.Fatalf("second holder: %v, want held by host-a", err)
	}
	if err := la.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	// Another member's lease is another lease.
	if _, err := b.AcquireLease(ctx, "bob", "host-b", ttl); err != nil {
		t.Fatal(err)
	}
	// host-a stops renewing (its machine went away): host-b takes over.
	var lb store.Lease
	waitFor(t, "host-b to take alice's lease", func() bool {
		l, err := b.AcquireLease(ctx, "alice", "host-b", ttl)
		if err != nil && !errors.As(err, &held) {
			t.Fatalf("acquire: %v", err)
		}
		lb = l
		return err == nil
	})
	if err := la.Renew(ctx); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("the old holder's renewal: %v, want ErrLeaseLost", err)
	}
	if err := la.Release(ctx); err != nil {
		t.Fatalf("the old holder's release: %v", err)
	}
	if _, err := a.AcquireLease(ctx, "alice", "host-a", ttl); !errors.As(err, &held) || held.Holder != "host-b" {
		t.Fatalf("after the takeover: %v, want held by host-b", err)
	}
	if err := lb.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.AcquireLease(ctx, "alice", "host-c", time.Minute); err != nil {
		t.Fatalf("a released lease: %v", err)
	}
}

// testMembers: records read back sorted with when they were seen; a live
// member unseen past the deadline is lost, a stopped one never.
func testMembers(t *testing.T, open Opener) {
	ctx := ctxOf(t)
	s := open(t)
	since := time.Now().UTC()
	for _, m := range []*protocol.Member{
		{Name: "zed", Status: protocol.MemberWorking, Activity: "parsing", Since: since},
		{Name: "amy", Status: protocol.MemberStopped, Since: since},
	} {
		if err := s.PutMember(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	ms, err := s.Members(ctx, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0].Name != "amy" || ms[1].Name != "zed" || ms[1].Activity != "parsing" || ms[0].Lost || ms[1].Lost || ms[1].Seen.IsZero() {
		t.Fatalf("members: %+v", ms)
	}
	before := ms[1].Seen
	const deadline = 20 * time.Millisecond
	waitFor(t, "zed lost", func() bool {
		ms, err := s.Members(ctx, deadline)
		return err == nil && ms[1].Lost && !ms[0].Lost
	})
	if err := s.Heartbeat(ctx, "zed"); err != nil {
		t.Fatal(err)
	}
	ms, err = s.Members(ctx, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if ms[1].Lost || !ms[1].Seen.After(before) || ms[1].Activity != "parsing" {
		t.Fatalf("after a heartbeat: %+v (seen before %s)", ms[1], before)
	}
	if err := s.Heartbeat(ctx, "nobody"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("heartbeat of a member with no record: %v", err)
	}
}

func span(i int) trace.Span {
	req := protocol.InvocationRequest{
		RequestID: fmt.Sprintf("req-%06d", i), CorrelationID: "corr-000001",
		Caller: protocol.Lead, Target: "alice", Action: "review", Prompt: "p", TimeoutSec: 30,
	}
	return trace.Start(req, time.Now())
}

// testTraces: a watch from now sees what is appended after it, in order; a
// watch from the start sees everything.
func testTraces(t *testing.T, open Opener) {
	ctx := ctxOf(t)
	s := open(t)
	if err := s.AppendSpan(ctx, span(0)); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var live, all []string
	sub, err := s.WatchSpans(ctx, false, func(sp trace.Span) {
		mu.Lock()
		defer mu.Unlock()
		live = append(live, sp.RequestID)
	})
	if err != nil {
		t.Fatal(err)
	}
	stopAtEnd(t, sub)
	w := open(t)
	for i := 1; i <= 3; i++ {
		if err := w.AppendSpan(ctx, span(i)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "three live spans", func() bool { mu.Lock(); defer mu.Unlock(); return len(live) >= 3 })
	sub2, err := s.WatchSpans(ctx, true, func(sp trace.Span) {
		mu.Lock()
		defer mu.Unlock()
		all = append(all, sp.RequestID)
	})
	if err != nil {
		t.Fatal(err)
	}
	stopAtEnd(t, sub2)
	waitFor(t, "four spans from the start", func() bool { mu.Lock(); defer mu.Unlock(); return len(all) >= 4 })
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(live, " "); got != "req-000001 req-000002 req-000003" {
		t.Fatalf("live spans: %s", got)
	}
	if got := strings.Join(all, " "); got != "req-000000 req-000001 req-000002 req-000003" {
		t.Fatalf("spans from the start: %s", got)
	}
	bad := span(9)
	bad.RequestID = ""
	if err := s.AppendSpan(ctx, bad); err == nil {
		t.Fatal("an invalid span was appended")
	}
}

// testConfig: configuration is created once and read back.
func testConfig(t *testing.T, open Opener) {
	ctx := ctxOf(t)
	s := open(t)
	if _, err := s.Config(ctx, store.ConfigTeam); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("config of an empty team: %v", err)
	}
	team := []byte(`{"name":"t","members":[{"name":"alice.x"}]}`)
	policy := []byte(`{"allow":["lead"]}`)
	if err := s.PutConfig(ctx, store.ConfigTeam, team); err != nil {
		t.Fatal(err)
	}
	if err := s.PutConfig(ctx, store.MemberPolicyConfig("alice.x"), policy); err != nil {
		t.Fatal(err)
	}
	if err := s.PutConfig(ctx, store.ConfigTeam, []byte("{}")); !errors.Is(err, store.ErrExists) {
		t.Fatalf("second team.json: %v, want ErrExists", err)
	}
	o := open(t)
	for name, want := range map[string][]byte{store.ConfigTeam: team, store.MemberPolicyConfig("alice.x"): policy} {
		got, err := o.Config(ctx, name)
		if err != nil || string(got) != string(want) {
			t.Fatalf("config %s: %v %q", name, err, got)
		}
	}
}
