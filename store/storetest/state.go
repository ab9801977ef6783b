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
	if rs, _, err := s.Requests(ctx); err != nil || len(rs) != 0 {
		t.Fatalf("refused requests left records: %v %+v", err, rs)
	}
	if ms, _, err := s.Members(ctx, time.Hour); err != nil || len(ms) != 0 {
		t.Fatalf("refused members left records: %v %+v", err, ms)
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
	if h, err := b.LeaseHolder(ctx, "alice"); err != nil || h == nil || h.Holder != "host-a" || h.Expires.IsZero() {
		t.Fatalf("LeaseHolder(alice) = %+v, %v; want host-a until its TTL", h, err)
	}
	if h, err := b.LeaseHolder(ctx, "carol"); err != nil || h != nil {
		t.Fatalf("LeaseHolder of a lease never taken = %+v, %v; want none", h, err)
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
	if h, err := a.LeaseHolder(ctx, "alice"); err != nil || h != nil {
		t.Fatalf("LeaseHolder after the release = %+v, %v; want none", h, err)
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
	ms, _, err := s.Members(ctx, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0].Name != "amy" || ms[1].Name != "zed" || ms[1].Activity != "parsing" || ms[0].Lost || ms[1].Lost || ms[1].Seen.IsZero() {
		t.Fatalf("members: %+v", ms)
	}
	one, err := s.Member(ctx, "zed", time.Hour)
	if err != nil || one.Name != "zed" || one.Activity != "parsing" || one.Lost || !one.Seen.Equal(ms[1].Seen) {
		t.Fatalf("member zed alone: %+v, %v (listed %+v)", one, err, ms[1])
	}
	if _, err := s.Member(ctx, "nobody", time.Hour); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("member with no record: %v", err)
	}
	if _, err := s.Member(ctx, "../x", time.Hour); err == nil {
		t.Fatal("an invalid member name was read")
	}
	before := ms[1].Seen
	const deadline = 20 * time.Millisecond
	waitFor(t, "zed lost", func() bool {
		ms, _, err := s.Members(ctx, deadline)
		return err == nil && ms[1].Lost && !ms[0].Lost
	})
	if one, err := s.Member(ctx, "zed", deadline); err != nil || !one.Lost {
		t.Fatalf("member zed alone, past the deadline: %+v, %v", one, err)
	}
	if one, err := s.Member(ctx, "zed", store.RecordOnly); err != nil || one.Lost || one.Activity != "parsing" {
		t.Fatalf("member zed's record alone: %+v, %v; want the record, no verdict", one, err)
	}
	if err := s.Heartbeat(ctx, "zed"); err != nil {
		t.Fatal(err)
	}
	ms, _, err = s.Members(ctx, time.Hour)
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
