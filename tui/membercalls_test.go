package tui

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"huddle/ipc/trace"
)

// spanSource makes spans of a few members' calls: new chains, calls
// within them, and the ends of running calls, ok or failed, with starts
// often equal (ties must not change which failure is the latest); and
// failures whose end comes before their start, the start then naming
// another caller at times (a failure that moves to another member).
type spanSource struct {
	rng     *rand.Rand
	start   time.Time
	chains  int
	running []trace.Span // started, not ended
	late    []trace.Span // starts of calls whose end came first
	n       int
}

var tallyMembers = []string{"alice", "bob", "carol"}

func (s *spanSource) next() trace.Span {
	s.n++
	at := s.start.Add(time.Duration(s.rng.IntN(s.n+1)/3) * time.Millisecond)
	caller := tallyMembers[s.rng.IntN(len(tallyMembers))]
	switch k := s.rng.IntN(10); {
	case k == 9 && len(s.late) > 0: // the start of a call that ended
		sp := s.late[0]
		s.late = s.late[1:]
		return sp
	case k == 8 && s.chains > 0: // a failure whose start comes later
		sp := trace.Span{Span: trace.SpanStart, TS: at, RequestID: fmt.Sprint("req-", s.n), CorrelationID: fmt.Sprint("corr-", s.rng.IntN(s.chains)),
			Caller: tallyMembers[s.rng.IntN(len(tallyMembers))], Target: "data", Action: "write", Hop: 1}
		s.late = append(s.late, sp)
		end := sp
		end.Caller, end.Span, end.Status, end.DurationMS = caller, trace.SpanEnd, "error", 1
		end.Error = &trace.SpanError{Code: "FAILED", Message: "FAILED: no"}
		return end
	case k < 4 && len(s.running) > 0: // a running call ends
		i := s.rng.IntN(len(s.running))
		end := s.running[i]
		s.running = append(s.running[:i], s.running[i+1:]...)
		end.Span, end.Status, end.DurationMS = trace.SpanEnd, "ok", 1
		if s.rng.IntN(2) == 0 {
			end.Status = "error"
			end.Error = &trace.SpanError{Code: "DENIED", Message: "DENIED: no"}
		}
		return end
	case k < 7 && s.chains > 0: // a call in an existing chain
		corr := fmt.Sprint("corr-", s.rng.IntN(s.chains))
		sp := trace.Span{Span: trace.SpanStart, TS: at, RequestID: fmt.Sprint("req-", s.n), CorrelationID: corr,
			Caller: caller, Target: "data", Action: "read", Hop: 1}
		s.running = append(s.running, sp)
		return sp
	}
	corr := fmt.Sprint("corr-", s.chains) // a new chain
	s.chains++
	sp := trace.Span{Span: trace.SpanStart, TS: at, RequestID: fmt.Sprint("req-", s.n), CorrelationID: corr,
		Caller: caller, Target: "finanzas", Action: "pay"}
	s.running = append(s.running, sp)
	return sp
}

// walkTally is the member's tally by the plain walk over every call.
func walkTally(list trace.ChainList, name string) callTally {
	var t callTally
	for _, c := range list.All() {
		for _, row := range c.Rows {
			if call := row.Call; call != nil && call.Caller == name {
				t.calls++
				if call.Status == trace.CallError {
					t.failed++
					if laterCall(call, t.lastFailed) {
						t.lastFailed = call
					}
				}
			}
		}
	}
	return t
}

func checkTally(t *testing.T, step string, got callTally, list trace.ChainList, name string) {
	t.Helper()
	want := walkTally(list, name)
	if got != want {
		t.Fatalf("%s: %s's tally %+v, the walk over all %d chains gives %+v", step, name, got, list.Len(), want)
	}
	fresh := (&callTallies{}).of(name, list)
	if got != fresh {
		t.Fatalf("%s: %s's tally %+v, counted from scratch %+v", step, name, got, fresh)
	}
}

// TestMemberCallsIncremental follows a fold's lists as the member view
// does and checks, after each, that the tally kept from list to list is
// the one counted from scratch over every chain: with one span between
// lists, with none, with several lists skipped, past what ChangedSince
// remembers, for another member, and on a new fold.
func TestMemberCallsIncremental(t *testing.T) {
	src := &spanSource{rng: rand.New(rand.NewPCG(1, 2)), start: time.Now().Add(-time.Hour)}
	tr := trace.NewTraces()
	var tallies callTallies
	name := "alice"
	for range 40 { // a history before the view opens
		tr.Add(src.next())
	}
	checkTally(t, "first", tallies.of(name, tr.List()), tr.List(), name)
	if tallies.recounts != 1 {
		t.Fatalf("the first list: %d counts from scratch, want 1", tallies.recounts)
	}
	for i := range 400 {
		step := fmt.Sprintf("step %d", i)
		switch i % 7 {
		case 3: // nothing changed
		case 5: // several lists the view never saw
			for range 3 {
				tr.Add(src.next())
				_ = tr.List()
			}
		default:
			tr.Add(src.next())
		}
		list := tr.List()
		checkTally(t, step, tallies.of(name, list), list, name)
	}
	if tallies.recounts != 1 {
		t.Fatalf("400 lists of one fold: %d counts from scratch, want 1 (the first)", tallies.recounts)
	}
	// Past what ChangedSince remembers: counted again, the same.
	for range 100 {
		tr.Add(src.next())
		_ = tr.List()
	}
	list := tr.List()
	checkTally(t, "far ahead", tallies.of(name, list), list, name)
	// Another member: counted again for it.
	checkTally(t, "bob", tallies.of("bob", list), list, "bob")
	tr.Add(src.next())
	list = tr.List()
	checkTally(t, "bob, one more", tallies.of("bob", list), list, "bob")
	// A new fold (the observer started over): counted again.
	tr2 := trace.NewTraces()
	src2 := &spanSource{rng: rand.New(rand.NewPCG(3, 4)), start: time.Now().Add(-time.Hour)}
	for range 30 {
		tr2.Add(src2.next())
	}
	list = tr2.List()
	checkTally(t, "new fold", tallies.of("bob", list), list, "bob")
	if tallies.recounts != 4 {
		t.Fatalf("far ahead, another member, a new fold: %d counts from scratch in all, want 4", tallies.recounts)
	}
	for i := range 50 {
		tr2.Add(src2.next())
		list = tr2.List()
		checkTally(t, fmt.Sprintf("new fold, step %d", i), tallies.of("bob", list), list, "bob")
	}
	if tallies.recounts != 4 {
		t.Fatalf("the new fold's lists: %d counts from scratch in all, want 4", tallies.recounts)
	}
	if walkTally(list, "bob").failed == 0 {
		t.Fatal("the spans made no failed call of bob's: the test checks less than it says")
	}
}

// TestMemberViewGathersIncrementally checks the member view's card
// through snapshots: the calls it shows are the walk's, and the latest
// failure the same call.
func TestMemberViewGathersIncrementally(t *testing.T) {
	m, _ := newTestModel(t, 120, 36)
	base := busySnapshot(t)
	src := &spanSource{rng: rand.New(rand.NewPCG(5, 6)), start: time.Now().Add(-time.Hour)}
	tr := trace.NewTraces()
	v := m.member
	v.snap = base
	v.open, v.name = true, "carol"
	for i := range 200 {
		tr.Add(src.next())
		snap := base
		snap.Chains = tr.List()
		v.snap = snap
		v.gather()
		want := walkTally(snap.Chains, "carol")
		if got := (callTally{v.facts.calls, v.facts.failed, v.facts.lastFailed}); got != want {
			t.Fatalf("snapshot %d: the card counts %+v, the walk %+v", i, got, want)
		}
	}
	if v.tallies.recounts != 1 {
		t.Fatalf("200 snapshots of one fold: %d counts from scratch, want 1", v.tallies.recounts)
	}
}

// TestMemberCallsFailureMovesAway checks the one change that takes the
// latest failure away from a member: failed calls whose ends came first,
// naming alice (no start yet: they sort by request id), one of whose
// starts then names bob.
func TestMemberCallsFailureMovesAway(t *testing.T) {
	at := time.Now().Add(-time.Minute)
	tr := trace.NewTraces()
	var tallies callTallies
	steps := []trace.Span{
		{Span: trace.SpanStart, TS: at, RequestID: "r1", CorrelationID: "c1", Caller: "alice", Target: "data"},
		{Span: trace.SpanEnd, TS: at, RequestID: "r1", CorrelationID: "c1", Caller: "alice", Target: "data", Status: "ok"},
		{Span: trace.SpanEnd, TS: at, RequestID: "r2", CorrelationID: "c2", Caller: "alice", Target: "data", Status: "error"},
		{Span: trace.SpanEnd, TS: at, RequestID: "r3", CorrelationID: "c3", Caller: "alice", Target: "data", Status: "error"},
		{Span: trace.SpanStart, TS: at.Add(time.Second), RequestID: "r3", CorrelationID: "c3", Caller: "bob", Target: "data"},
	}
	for i, s := range steps {
		tr.Add(s)
		list := tr.List()
		checkTally(t, fmt.Sprint("span ", i), tallies.of("alice", list), list, "alice")
		if i == 3 && (tallies.total.lastFailed == nil || tallies.total.lastFailed.RequestID != "r3") {
			t.Fatalf("alice's latest failure before r3 moved: %+v, want r3", tallies.total.lastFailed)
		}
	}
	if got := tallies.total; got.failed != 1 || got.lastFailed == nil || got.lastFailed.RequestID != "r2" {
		t.Fatalf("alice's failures after r3 moved to bob: %+v, want r2 alone", got)
	}
	if tallies.recounts != 1 {
		t.Fatalf("%d counts from scratch, want 1", tallies.recounts)
	}
}
