package tui

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"huddle/inbox"
	"huddle/internal/testkit/dirrecords"
	"huddle/internal/testkit/files"
	"huddle/ipc/trace"
	"huddle/protocol"
	"huddle/team"
	"huddle/team/view"
)

// bigSnapshot has 1,000 members, 5,000 requests (500 pending), 10,000 spans
// (5,000 calls in 2,500 two-hop chains) and 5,000 messages.
func bigSnapshot() view.Snapshot {
	s := view.Snapshot{Version: 1, Team: &team.Team{Name: "big"}}
	for i := range 1000 {
		name := fmt.Sprintf("m%04d", i)
		s.Members = append(s.Members, view.MemberView{
			Spec:   team.MemberSpec{Name: name, Role: "worker"},
			Record: protocol.Member{Name: name, Status: protocol.MemberStatuses[i%len(protocol.MemberStatuses)], Activity: "step " + name, Since: t0},
			Unread: i % 3,
		})
	}
	for i := range 5000 {
		r := planRequest(fmt.Sprintf("pl-%012x", i), fmt.Sprintf("m%04d", i%1000), "a plan of some length that wraps in the detail pane "+fmt.Sprint(i), t0.Add(-time.Duration(i)*time.Second))
		if i >= 500 {
			r.Apply(protocol.EventApprove, "lead", t0.Add(-time.Duration(i)*time.Millisecond), "")
		}
		s.Requests = append(s.Requests, r)
	}
	s.Pending = 500
	var chains []trace.Chain
	for i := range 2500 {
		a := &trace.Call{RequestID: fmt.Sprintf("req-%d-a", i), CorrelationID: fmt.Sprintf("corr-%d", i), Caller: "m0001", Target: "m0002", Action: "pay", Start: t0, Status: trace.CallOK, DurationMS: 40}
		b := &trace.Call{RequestID: fmt.Sprintf("req-%d-b", i), CorrelationID: a.CorrelationID, ParentRequestID: a.RequestID, Caller: "m0002", Target: "m0003", Action: "write", Hop: 1, Start: t0, Status: trace.CallError, ErrorCode: "DENIED", DurationMS: 1}
		chains = append(chains, trace.Chain{CorrelationID: a.CorrelationID, Start: t0, Rows: []trace.Row{{Call: a}, {Call: b, Depth: 1}}})
	}
	s.Chains = trace.ChainListOf(chains...)
	for i := range view.MaxMessages {
		s.Messages = append(s.Messages, view.MessageView{Inbox: "m0001", Offset: int64(i), Msg: textMessage("m0002", "m0001", "hello "+fmt.Sprint(i), t0)})
	}
	return s
}

// BenchmarkView measures one frame of View() at 120×36 on the big team, on
// each pane, and the same on the small demo snapshot: the cost follows the
// rows on screen, not the totals.
func BenchmarkView(b *testing.B) {
	for _, tc := range []struct {
		name string
		snap func(testing.TB) view.Snapshot
	}{
		{"big", func(testing.TB) view.Snapshot { return bigSnapshot() }},
		{"demo", busySnapshot},
	} {
		for _, p := range []string{"2", "3", "4"} {
			b.Run(tc.name+"/pane"+p, func(b *testing.B) {
				m, _ := newTestModel(b, 120, 36)
				m.styles = NewStyles(true, true)
				m.Update(SnapshotMsg(tc.snap(b)))
				send(m, p, "j", "j")
				b.ResetTimer()
				start := time.Now()
				for range b.N {
					_ = m.View()
				}
				b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N)/1000, "ms/frame")
			})
		}
	}
}

// BenchmarkKeystrokeUnderLoad: a real observer folds a team directory that
// changes about 10,000 times a second (member records, request records,
// inbox lines, spans) while a key is pressed every 5 ms. Snapshots and keys
// go through one loop, as in Bubble Tea (Update, then View). Reported: the
// p99 from a key's arrival to its frame being drawn.
func BenchmarkKeystrokeUnderLoad(b *testing.B) {
	dir := b.TempDir()
	if err := team.Init(dir); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type ev struct {
		msg tea.Msg
		at  time.Time
	}
	loop := make(chan ev, 1024)
	stop, err := Connect(ctx, files.Open(b, dir), func(msg tea.Msg) { loop <- ev{msg, time.Now()} })
	if err != nil {
		b.Fatal(err)
	}
	defer stop()

	// The load: four writers, each about 2,500 changes a second (inbox
	// lines and spans, with a member record or a request now and then), for
	// as long as the run.
	var loadWG sync.WaitGroup
	var changes atomic.Int64
	names := []string{"reservas", "finanzas", "data", "auditor"}
	for w, n := range names {
		loadWG.Add(1)
		go func() {
			defer loadWG.Done()
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
			for i := 0; ; i++ {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				for j := range 4 {
					switch {
					case j == 0 && i%10 == 0:
						rec := protocol.Member{Name: n, Status: protocol.MemberWorking, Activity: fmt.Sprint("step ", i), Since: time.Now()}
						dirrecords.WriteMember(dir, &rec)
					case j == 0 && i%100 == 1:
						r := planRequest(fmt.Sprintf("pl-%02x%010x", w, i), n, "plan", time.Now())
						dirrecords.CreateRequest(dir, &r)
					case j == 1:
						inbox.Append(dir, n, msg2("lead", n, fmt.Sprint("note ", i)))
					default:
						trace.AppendSpan(dir, trace.Span{Span: trace.SpanStart, RequestID: fmt.Sprintf("req-%d-%d-%d", w, i, j), CorrelationID: fmt.Sprintf("corr-%d", i%50), Caller: n, Target: "data", Action: "escribir"})
					}
					changes.Add(1)
				}
			}
		}()
	}
	go func() {
		for range b.N {
			time.Sleep(5 * time.Millisecond) // a person typing fast, not a wait for a condition
			loop <- ev{press("j"), time.Now()}
		}
	}()

	m, _ := newTestModel(b, 120, 36)
	m.styles = NewStyles(true, true)
	var lat []time.Duration
	snaps := 0
	b.ResetTimer()
	start := time.Now()
	for len(lat) < b.N {
		e := <-loop
		if _, ok := e.msg.(SnapshotMsg); ok {
			snaps++
		}
		m.Update(e.msg)
		_ = m.View()
		if _, ok := e.msg.(tea.KeyPressMsg); ok {
			lat = append(lat, time.Since(e.at))
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	cancel()
	loadWG.Wait()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-key-ms")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-key-ms")
	b.ReportMetric(float64(changes.Load())/elapsed.Seconds(), "changes/s")
	b.ReportMetric(float64(snaps)/elapsed.Seconds(), "snapshots/s")
}

// appSpans are the spans of calls [from, to): two calls a chain (a root
// and its child, a start and an end span each), a chain a millisecond
// newer than the one before, from start.
func appSpans(start time.Time, from, to int) []trace.Span {
	var out []trace.Span
	for i := from; i < to; i++ {
		corr := fmt.Sprintf("corr-%d", i)
		at := start.Add(time.Duration(i) * time.Millisecond)
		a := trace.Span{Span: trace.SpanStart, TS: at, RequestID: fmt.Sprintf("req-%d-a", i), CorrelationID: corr,
			Caller: "reservas", Target: "finanzas", Action: "pagar_factura"}
		b := trace.Span{Span: trace.SpanStart, TS: at, RequestID: fmt.Sprintf("req-%d-b", i), CorrelationID: corr, ParentRequestID: a.RequestID,
			Caller: "finanzas", Target: "data", Action: "escribir", Hop: 1}
		bEnd := b
		bEnd.Span, bEnd.Status, bEnd.DurationMS = trace.SpanEnd, "error", 1
		bEnd.Error = &trace.SpanError{Code: "DENIED", Message: "DENIED: max_hops", Details: []byte(`{"reason":"max_hops"}`)}
		aEnd := a
		aEnd.Span, aEnd.Status, aEnd.DurationMS = trace.SpanEnd, "ok", 40
		out = append(out, a, b, bEnd, aEnd)
	}
	return out
}

// BenchmarkSnapshotApplyView measures what one change costs the UI: one
// span folded beforehand (a new chain's root call, its child, their ends,
// in turn), the snapshot that shows it applied (every pane takes it) and
// the frame drawn, with the traces pane on screen and a chain chosen (so
// the selection is followed), at 1k, 10k and 100k spans. The snapshots
// come from a real fold (trace.Traces), as an observer's do; their making
// is not measured. Each change is paired with its floor, the same frame
// drawn again with nothing changed: µs/change is the mean of apply and
// View, p50-µs its median, p50-view-µs the floor's, apply/view their ratio.
//
// paired interleaves the same changes on a 1k and a 100k history in one
// run (the machine's noise hits both alike) and reports 100k÷1k.
//
//	go test -run '^$' -bench SnapshotApplyView -benchtime 2000x -count 3 ./tui
func BenchmarkSnapshotApplyView(b *testing.B) {
	for _, spans := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("spans=%d", spans), func(b *testing.B) {
			ab := newApplyBench(b, spans, b.N)
			change, view := make([]time.Duration, b.N), make([]time.Duration, b.N)
			var sum time.Duration
			b.ResetTimer()
			for i := range b.N {
				change[i], view[i] = ab.apply(i)
				sum += change[i]
			}
			b.StopTimer()
			ab.check(b)
			b.ReportMetric(float64(sum.Microseconds())/float64(b.N), "µs/change")
			b.ReportMetric(median(change), "p50-µs")
			b.ReportMetric(median(view), "p50-view-µs")
			b.ReportMetric(median(change)/median(view), "apply/view")
		})
	}
	b.Run("paired", func(b *testing.B) {
		small, big := newApplyBench(b, 1_000, b.N), newApplyBench(b, 100_000, b.N)
		ts, tb := make([]time.Duration, b.N), make([]time.Duration, b.N)
		b.ResetTimer()
		for i := range b.N {
			ts[i], _ = small.apply(i)
			tb[i], _ = big.apply(i)
		}
		b.StopTimer()
		small.check(b)
		big.check(b)
		b.ReportMetric(median(ts), "p50-µs-1k")
		b.ReportMetric(median(tb), "p50-µs-100k")
		b.ReportMetric(median(tb)/median(ts), "100k/1k")
	})
}

// applyBench is a model showing the traces pane over a history of spans,
// and the snapshots of the changes to come.
type applyBench struct {
	m      *Model
	snaps  []view.Snapshot
	chosen string // the chain the person chose
}

func newApplyBench(b *testing.B, spans, changes int) *applyBench {
	b.Helper()
	m, _ := newTestModel(b, 120, 36)
	m.styles = NewStyles(true, true)
	base := busySnapshot(b)
	start := time.Now().Add(-time.Hour)
	tr := trace.NewTraces()
	for _, s := range appSpans(start, 0, spans/4) {
		tr.Add(s)
	}
	first := base
	first.Chains = tr.List()
	m.Update(SnapshotMsg(first))
	send(m, "3", "j")
	more := appSpans(start, spans/4, spans/4+changes/4+1)
	snaps := make([]view.Snapshot, changes)
	for i := range snaps {
		tr.Add(more[i])
		snaps[i] = base
		snaps[i].Version = uint64(i) + 2
		snaps[i].Chains = tr.List()
	}
	return &applyBench{m: m, snaps: snaps, chosen: fmt.Sprint("corr-", spans/4-1)}
}

// apply applies change i and draws the frame, then draws it again: how
// long each took.
func (ab *applyBench) apply(i int) (change, view time.Duration) {
	t := time.Now()
	ab.m.Update(SnapshotMsg(ab.snaps[i]))
	_ = ab.m.View()
	change = time.Since(t)
	t = time.Now()
	_ = ab.m.View()
	return change, time.Since(t)
}

// check fails unless the chain chosen is still selected.
func (ab *applyBench) check(b *testing.B) {
	if tr, ok := ab.m.traces.list.selected(); !ok || tr.chain.CorrelationID != ab.chosen {
		b.Fatalf("the chosen chain %s is no longer selected: %+v", ab.chosen, tr)
	}
}

// median is the median of d in µs. It sorts d.
func median(d []time.Duration) float64 {
	slices.Sort(d)
	return float64(d[len(d)/2].Nanoseconds()) / 1000
}

// BenchmarkMemberGather measures what one change costs the member view's
// card while the view is open: one span folded beforehand (as in
// SnapshotApplyView), then the member's facts gathered from the snapshot
// that shows it, at 1k, 10k and 100k spans of history; the member shown
// (finanzas) made a failed call in every chain. µs/change is the mean,
// p50-µs the median. paired interleaves the same changes on a 1k and a
// 100k history in one run and reports 100k÷1k: 1 is flat.
//
//	go test -run '^$' -bench MemberGather -benchtime 2000x -count 3 ./tui
func BenchmarkMemberGather(b *testing.B) {
	for _, spans := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("spans=%d", spans), func(b *testing.B) {
			gb := newGatherBench(b, spans, b.N)
			d := make([]time.Duration, b.N)
			var sum time.Duration
			b.ResetTimer()
			for i := range b.N {
				d[i] = gb.gather(i)
				sum += d[i]
			}
			b.StopTimer()
			gb.check(b)
			b.ReportMetric(float64(sum.Nanoseconds())/1000/float64(b.N), "µs/change")
			b.ReportMetric(median(d), "p50-µs")
		})
	}
	b.Run("paired", func(b *testing.B) {
		small, big := newGatherBench(b, 1_000, b.N), newGatherBench(b, 100_000, b.N)
		ts, tb := make([]time.Duration, b.N), make([]time.Duration, b.N)
		b.ResetTimer()
		for i := range b.N {
			ts[i] = small.gather(i)
			tb[i] = big.gather(i)
		}
		b.StopTimer()
		small.check(b)
		big.check(b)
		b.ReportMetric(median(ts), "p50-µs-1k")
		b.ReportMetric(median(tb), "p50-µs-100k")
		b.ReportMetric(median(tb)/median(ts), "100k/1k")
	})
}

// gatherBench is a member view open on finanzas over a history of spans,
// and the snapshots of the changes to come.
type gatherBench struct {
	v     *memberView
	snaps []view.Snapshot
}

func newGatherBench(b *testing.B, spans, changes int) *gatherBench {
	b.Helper()
	m, _ := newTestModel(b, 120, 36)
	base := busySnapshot(b)
	start := time.Now().Add(-time.Hour)
	tr := trace.NewTraces()
	for _, s := range appSpans(start, 0, spans/4) {
		tr.Add(s)
	}
	v := m.member
	v.open, v.name = true, "finanzas"
	v.snap = base
	v.snap.Chains = tr.List()
	v.gather()
	more := appSpans(start, spans/4, spans/4+changes/4+1)
	snaps := make([]view.Snapshot, changes)
	for i := range snaps {
		tr.Add(more[i])
		snaps[i] = base
		snaps[i].Version = uint64(i) + 2
		snaps[i].Chains = tr.List()
	}
	return &gatherBench{v: v, snaps: snaps}
}

// gather takes change i's snapshot and gathers the card's facts from it:
// how long that took.
func (gb *gatherBench) gather(i int) time.Duration {
	t := time.Now()
	gb.v.snap = gb.snaps[i]
	gb.v.gather()
	return time.Since(t)
}

// check fails unless the card counts every call finanzas made.
func (gb *gatherBench) check(b *testing.B) {
	last := gb.v.snap.Chains
	want := 0
	for _, c := range last.All() {
		for _, r := range c.Rows {
			if r.Call != nil && r.Call.Caller == "finanzas" {
				want++
			}
		}
	}
	if gb.v.facts.calls != want || want == 0 {
		b.Fatalf("the card counts %d calls of finanzas, the chains hold %d", gb.v.facts.calls, want)
	}
}
