package view

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"huddle/internal/testkit/dirrecords"
	"huddle/internal/testkit/teamkit"
	"huddle/ipc/trace"
	"huddle/protocol"
	"huddle/store"
	"huddle/store/filestore"
	"huddle/team"
	"huddle/teamdir"
)

// Sizes of the team BenchmarkObserverFold folds.
const (
	benchMembers  = 1000
	benchRequests = 5000
	benchSpans    = 10000
)

// benchTeam writes a team directory with benchMembers members (each with a
// record), benchRequests request records (a fifth pending) and benchSpans
// spans (start and end of 5,000 calls in 1,000 chains of five, each call
// the child of the one before).
func benchTeam(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	var specs []team.MemberSpec
	for i := range benchMembers {
		name := fmt.Sprintf("m%04d", i)
		specs = append(specs, team.MemberSpec{Name: name, Runtime: team.RuntimeSpec{Kind: team.RuntimeExternal}})
		if err := dirrecords.WriteMember(dir, &protocol.Member{Name: name, Status: protocol.MemberWorking, Activity: "benchmarking", Since: teamkit.T0}); err != nil {
			b.Fatal(err)
		}
	}
	teamkit.WriteTeam(b, dir, team.Team{Name: "bench", Members: specs})
	if err := os.MkdirAll(teamdir.RequestsDirPath(dir), teamdir.DirMode); err != nil {
		b.Fatal(err)
	}
	for i := range benchRequests {
		r := benchRequest(i)
		if err := replaceJSON(filepath.Join(dir, teamdir.RequestsDir, r.ID+".json"), r); err != nil {
			b.Fatal(err)
		}
	}
	for i := range benchSpans / 2 {
		for _, s := range benchCall(i) {
			if err := trace.AppendSpan(dir, s); err != nil {
				b.Fatal(err)
			}
		}
	}
	return dir
}

func benchRequest(i int) *protocol.Request {
	r := teamkit.PlanRequest(fmt.Sprintf("pl-%012x", i), fmt.Sprintf("m%04d", i%benchMembers), teamkit.T0.Add(time.Duration(i)*time.Second))
	if i%5 != 0 {
		_ = r.Apply(protocol.EventApprove, "lead", r.Created.Add(time.Minute), "")
	}
	return r
}

// benchCall is the start and end span of call i.
func benchCall(i int) []trace.Span {
	corr := fmt.Sprintf("corr-%d", i/5)
	parent := ""
	if i%5 != 0 {
		parent = fmt.Sprint("req-", i-1)
	}
	at := teamkit.T0.Add(time.Duration(i) * time.Millisecond)
	start := trace.Span{Span: trace.SpanStart, TS: at, RequestID: fmt.Sprint("req-", i), CorrelationID: corr, ParentRequestID: parent,
		Caller: "m0001", Target: "m0002", Action: "work", Hop: i % 5}
	end := start
	end.Span, end.TS, end.Status, end.DurationMS = trace.SpanEnd, at.Add(3*time.Millisecond), "ok", 3
	return []trace.Span{start, end}
}

// benchObserver is an observer of the team directory dir through its
// files store, loaded as Observe loads it before its first send (the
// spans as the store's WatchSpans reads them first: its trace reader, from
// the start), without its goroutines: a bench calls its reads. The trace
// reader it returns is at the end of traces.jsonl, as WatchSpans's is.
func benchObserver(b *testing.B, st store.Store, dir string) (*Observer, *trace.TraceReader) {
	b.Helper()
	o := newObserver(st, ObserveOptions{}, nil)
	o.load()
	r := trace.NewTraceReader(dir)
	foldSpans(b, o, r)
	return o, r
}

// foldSpans folds what r reads next, as the store's WatchSpans hands it
// on when traces.jsonl changes.
func foldSpans(b *testing.B, o *Observer, r *trace.TraceReader) {
	spans, err := r.Read()
	if err != nil {
		b.Fatal(err)
	}
	for _, sp := range spans {
		o.span(sp)
	}
}

// openBench opens the files store of dir, closed when b ends.
func openBench(b *testing.B, dir string) store.Store {
	b.Helper()
	st, err := filestore.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

// BenchmarkObserverFold measures the observer on a team directory's files
// store holding 1,000 members, 5,000 requests and 10,000 spans:
//
//   - startup: one op reads the whole team and builds the first snapshot,
//     as Observe does before its first send.
//   - snapshot: one op builds a snapshot after a change that touches every
//     part (members, requests, one chain, 5,000 messages out of order).
//   - events: one op is a change written to the directory (a member record
//     rewritten, a request record created or resolved, a span appended)
//     and folded as the store's watch tells it (the record read, or the
//     span read and handed on); folded-events/s counts the fold alone,
//     without the write.
func BenchmarkObserverFold(b *testing.B) {
	dir := benchTeam(b)
	st := openBench(b, dir)
	b.Run("startup", func(b *testing.B) {
		for range b.N {
			o, _ := benchObserver(b, st, dir)
			s, _ := o.m.snapshot()
			if len(s.Members) != benchMembers || s.Chains.Len() < benchSpans/10 {
				b.Fatalf("snapshot: %d members, %d chains", len(s.Members), s.Chains.Len())
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/startup")
	})
	b.Run("snapshot", func(b *testing.B) {
		o, _ := benchObserver(b, st, dir)
		for i := range MaxMessages {
			m := msg("lead", "m0001", "hello")
			m.TS = teamkit.T0.Add(time.Duration(i) * time.Millisecond)
			o.delivered(fmt.Sprintf("m%04d", i%benchMembers), store.Delivery{Msg: *m, Seq: int64(i)})
		}
		first, ok := o.m.snapshot()
		if !ok {
			b.Fatal("no snapshot")
		}
		// The snapshot keeps the pending requests and a bounded number of
		// final ones; every later snapshot must keep as many.
		wantRequests := len(first.Requests)
		next := benchSpans
		b.ResetTimer()
		for range b.N {
			o.m.traces.Add(benchCall(next)[0])
			next++
			o.m.membersStale, o.m.requestsStale, o.m.unsorted, o.m.dirty = true, true, true, true
			s, _ := o.m.snapshot()
			if len(s.Members) != benchMembers || len(s.Requests) < wantRequests || s.Chains.Len() < benchSpans/10 || len(s.Messages) != MaxMessages {
				b.Fatalf("snapshot: %d members, %d requests, %d chains, %d messages", len(s.Members), len(s.Requests), s.Chains.Len(), len(s.Messages))
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/snapshot")
	})
	b.Run("events", func(b *testing.B) {
		o, traces := benchObserver(b, st, dir)
		var fold time.Duration
		next := benchSpans / 2
		b.ResetTimer()
		for i := range b.N {
			var ev func()
			switch i % 3 {
			case 0:
				name := fmt.Sprintf("m%04d", i%benchMembers)
				if err := dirrecords.WriteMember(dir, &protocol.Member{Name: name, Status: protocol.MemberIdle, Since: teamkit.T0,
					Counters: protocol.Counters{Sent: i}}); err != nil {
					b.Fatal(err)
				}
				ev = func() { o.readMember(name) }
			case 1:
				r := benchRequest(benchRequests + i)
				if i%2 == 1 { // resolve one that was pending instead
					r = benchRequest(i % benchRequests / 5 * 5)
					r.Status, r.ResolvedAt, r.ResolvedBy = protocol.RequestPending, nil, ""
					_ = r.Apply(protocol.EventReject, "lead", teamkit.T0.Add(time.Duration(i)*time.Second), "no")
				}
				p := filepath.Join(dir, teamdir.RequestsDir, r.ID+".json")
				if err := replaceJSON(p, r); err != nil {
					b.Fatal(err)
				}
				ev = func() { o.readRequest(r.ID) }
			default:
				if err := trace.AppendSpan(dir, benchCall(next)[0]); err != nil {
					b.Fatal(err)
				}
				next++
				ev = func() { foldSpans(b, o, traces) }
			}
			t0 := time.Now()
			ev()
			fold += time.Since(t0)
		}
		b.ReportMetric(float64(b.N)/fold.Seconds(), "folded-events/s")
		b.ReportMetric(float64(fold.Nanoseconds())/float64(b.N)/1000, "fold-us/event")
	})
}

// BenchmarkObserverFoldPerChange measures what one change costs the
// observer as the trace history grows: one op appends one span to
// traces.jsonl (the start of a call, or the end of the call started before;
// a new chain every five calls, each call the child of the one before), and
// the observer folds it as the store's WatchSpans hands it on and builds
// the snapshot it sends. µs/change is that fold and build alone, without the
// write (mean; p50-µs the median); it should not grow with the spans
// already folded (1k, 10k, 100k).
//
// paired interleaves the same change on a 1k and a 100k history in one run
// (the machine's noise hits both alike) beside the floor: reading the
// appended line back (open, stat, read, close: what any fold of it needs).
// It reports the p50 of each, 100k÷1k and 100k÷floor.
//
//	go test -run '^$' -bench ObserverFoldPerChange -benchtime 2000x -count 3 ./team
func BenchmarkObserverFoldPerChange(b *testing.B) {
	for _, spans := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("spans=%d", spans), func(b *testing.B) {
			fb := newFoldBench(b, spans)
			took := make([]time.Duration, b.N)
			var sum time.Duration
			b.ResetTimer()
			for i := range b.N {
				took[i] = fb.change(b)
				sum += took[i]
			}
			b.ReportMetric(float64(sum.Nanoseconds())/float64(b.N)/1000, "µs/change")
			b.ReportMetric(p50(took), "p50-µs")
		})
	}
	b.Run("paired", func(b *testing.B) {
		small, big := newFoldBench(b, 1_000), newFoldBench(b, 100_000)
		ts, tb, tf := make([]time.Duration, b.N), make([]time.Duration, b.N), make([]time.Duration, b.N)
		b.ResetTimer()
		for i := range b.N {
			ts[i] = small.change(b)
			tb[i] = big.change(b)
			tf[i] = readLast(b, big.dir)
		}
		b.ReportMetric(p50(ts), "p50-µs-1k")
		b.ReportMetric(p50(tb), "p50-µs-100k")
		b.ReportMetric(p50(tf), "p50-µs-floor")
		b.ReportMetric(p50(tb)/p50(ts), "100k/1k")
		b.ReportMetric(p50(tb)/p50(tf), "100k/floor")
	})
}

// foldBench is an observer over a team directory's files store with a
// trace history, ready to take one more span at a time.
type foldBench struct {
	dir     string
	t0      time.Time
	o       *Observer
	traces  *trace.TraceReader
	next    int // the next span to append, counted from the history's end
	calls   int // calls in the history
	version uint64
}

func newFoldBench(b *testing.B, spans int) *foldBench {
	b.Helper()
	fb := &foldBench{dir: b.TempDir(), t0: time.Now().Add(-time.Hour), calls: spans / 2}
	teamkit.WriteTeam(b, fb.dir, team.Team{Name: "bench", Members: []team.MemberSpec{{Name: "m0001", Runtime: team.RuntimeSpec{Kind: team.RuntimeExternal}}}})
	writeSpansB(b, fb.dir, fb.t0, 0, fb.calls)
	fb.o, fb.traces = benchObserver(b, openBench(b, fb.dir), fb.dir)
	s, _ := fb.o.m.snapshot()
	if s.Chains.Calls() != fb.calls {
		b.Fatalf("the history folded into %d calls, want %d", s.Chains.Calls(), fb.calls)
	}
	fb.version = s.Version
	return fb
}

// change appends one span and returns how long the observer took to fold
// it and build the snapshot that shows it.
func (fb *foldBench) change(b *testing.B) time.Duration {
	call := benchCallAt(fb.t0, fb.calls+fb.next/2)
	if err := trace.AppendSpan(fb.dir, call[fb.next%2]); err != nil {
		b.Fatal(err)
	}
	fb.next++
	start := time.Now()
	foldSpans(b, fb.o, fb.traces)
	s, ok := fb.o.m.snapshot()
	took := time.Since(start)
	fb.version++
	if !ok || s.Version != fb.version {
		b.Fatalf("span %d: no new snapshot", fb.next)
	}
	return took
}

// readLast reads the last line of dir's traces.jsonl as a fold of it must
// at least: open, stat, read, close.
func readLast(b *testing.B, dir string) time.Duration {
	start := time.Now()
	f, err := os.Open(teamdir.TracesPath(dir))
	if err != nil {
		b.Fatal(err)
	}
	st, err := f.Stat()
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 512)
	n, err := f.ReadAt(buf, max(st.Size()-int64(len(buf)), 0))
	if err != nil && n == 0 {
		b.Fatal(err)
	}
	f.Close()
	return time.Since(start)
}

// p50 is the median of d in µs. It sorts d.
func p50(d []time.Duration) float64 {
	slices.Sort(d)
	return float64(d[len(d)/2].Nanoseconds()) / 1000
}

// writeSpansB writes the start and end spans of calls [from, to) to dir's
// traces.jsonl in one write (benchCallAt's calls).
func writeSpansB(b *testing.B, dir string, t0 time.Time, from, to int) {
	b.Helper()
	var buf []byte
	for i := from; i < to; i++ {
		for _, s := range benchCallAt(t0, i) {
			line, err := json.Marshal(s)
			if err != nil {
				b.Fatal(err)
			}
			buf = append(append(buf, line...), '\n')
		}
	}
	f, err := os.OpenFile(teamdir.TracesPath(dir), os.O_CREATE|os.O_WRONLY|os.O_APPEND, teamdir.FileMode)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(buf); err != nil {
		b.Fatal(err)
	}
}

// benchCallAt is the start and end span of call i: five calls a chain, each
// the child of the one before, a millisecond apart from t0.
func benchCallAt(t0 time.Time, i int) []trace.Span {
	s := benchCall(i)
	d := t0.Sub(teamkit.T0)
	s[0].TS, s[1].TS = s[0].TS.Add(d), s[1].TS.Add(d)
	return s
}

// replaceJSON rewrites path with v, unsynced, as a rewrite of a record.
func replaceJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return teamdir.ReplaceFile(path, b)
}
