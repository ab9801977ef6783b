package trace

import (
	"fmt"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

func start(req, corr, parent, target string, at time.Duration) Span {
	return Span{Span: SpanStart, TS: t0.Add(at), RequestID: req, CorrelationID: corr, ParentRequestID: parent,
		Caller: "c", Target: target, Action: "do"}
}

func end(req, corr, parent, target string, at time.Duration, status string, ms int64) Span {
	s := start(req, corr, parent, target, at)
	s.Span, s.Status, s.DurationMS = SpanEnd, status, ms
	if status == CallError {
		s.Error = &SpanError{Code: "IPC_ERROR", Message: "boom"}
	}
	return s
}

func TestTracesEndWithoutStart(t *testing.T) {
	tr := NewTraces()
	tr.Add(end("req-1", "corr-1", "", "data", time.Second, CallError, 5))
	c := onlyChain(t, tr)
	equalLines(t, "tree", render(c), []string{"data.do error 5ms IPC_ERROR"})
	call := c.Rows[0].Call
	if !call.Start.IsZero() || !call.End.Equal(t0.Add(time.Second)) || !c.Start.Equal(call.End) {
		t.Fatalf("end-only call: start %v end %v chain start %v", call.Start, call.End, c.Start)
	}
	// Its start arrives later (another writer was slower): the call is whole.
	tr.Add(start("req-1", "corr-1", "", "data", 0))
	call = onlyChain(t, tr).Rows[0].Call
	if !call.Start.Equal(t0) || call.Status != CallError || call.DurationMS != 5 {
		t.Fatalf("after the start: %+v", call)
	}
}

func TestTracesRunningUntilEnd(t *testing.T) {
	tr := NewTraces()
	tr.Add(start("req-1", "corr-1", "", "data", 0))
	if got := onlyChain(t, tr).Rows[0].Call.Status; got != CallRunning {
		t.Fatalf("status %q before the end, want running", got)
	}
	tr.Add(end("req-1", "corr-1", "", "data", 40*time.Millisecond, CallOK, 0))
	call := onlyChain(t, tr).Rows[0].Call
	if call.Status != CallOK || call.DurationMS != 40 {
		t.Fatalf("after the end: %s %dms (a missing duration comes from the times)", call.Status, call.DurationMS)
	}
}

func TestTracesFirstEndDecides(t *testing.T) {
	tr := NewTraces()
	tr.Add(start("req-1", "corr-1", "", "data", 0))
	// The late answer's line lands before the timeout's (two writers).
	late := end("req-1", "corr-1", "", "data", 2*time.Second, CallOK, 2000)
	late.Late, late.Result = true, `{"x":1}`
	tr.Add(late)
	if call := onlyChain(t, tr).Rows[0].Call; call.Status != CallRunning || !call.Late || call.Result != "" {
		t.Fatalf("a late answer decided the call: %+v", call)
	}
	timeout := end("req-1", "corr-1", "", "data", time.Second, CallError, 1000)
	timeout.Error = &SpanError{Code: "TIMEOUT", Message: "1s"}
	tr.Add(timeout)
	before := tr.Chains()
	// A repeated end (at-least-once) and a repeated start change nothing.
	tr.Add(end("req-1", "corr-1", "", "data", 3*time.Second, CallOK, 3000))
	tr.Add(start("req-1", "corr-1", "", "other", 0))
	after := tr.Chains()
	if &after[0] != &before[0] {
		t.Fatal("a repeated span rebuilt the chains")
	}
	equalLines(t, "tree", render(after[0]), []string{"data.do error 1000ms TIMEOUT late"})
}

func TestTracesOrphansAndCyclesAreRoots(t *testing.T) {
	tr := NewTraces()
	tr.Add(start("req-b", "corr-1", "req-missing", "orphan", 2*time.Millisecond))
	tr.Add(start("req-a", "corr-1", "", "root", 1*time.Millisecond))
	tr.Add(start("req-c", "corr-1", "req-a", "child", 3*time.Millisecond))
	tr.Add(start("req-x", "corr-1", "req-y", "cyc1", 4*time.Millisecond))
	tr.Add(start("req-y", "corr-1", "req-x", "cyc2", 5*time.Millisecond))
	tr.Add(start("req-s", "corr-1", "req-s", "self", 6*time.Millisecond))
	equalLines(t, "tree", render(onlyChain(t, tr)), []string{
		"root.do running 0ms",
		"  child.do running 0ms",
		"orphan.do running 0ms",
		"self.do running 0ms",
		"cyc1.do running 0ms",
		"  cyc2.do running 0ms",
	})
}

func TestTracesRebuildOnlyChangedChains(t *testing.T) {
	tr := NewTraces()
	for i := range 3 {
		corr := fmt.Sprintf("corr-%d", i)
		tr.Add(start("req-"+corr, corr, "", "data", time.Duration(i)*time.Second))
	}
	first := tr.Chains()
	if again := tr.Chains(); &again[0] != &first[0] {
		t.Fatal("Chains without a new span built a new slice")
	}
	oldRows := first[1].Rows
	tr.Add(end("req-corr-1", "corr-1", "", "data", 1500*time.Millisecond, CallOK, 500))
	second := tr.Chains()
	if &second[0] == &first[0] {
		t.Fatal("a changed chain came back in the same slice")
	}
	// Unchanged chains are shared; the changed one is new; what was handed
	// out before is untouched.
	if &second[0].Rows[0] != &first[0].Rows[0] || &second[2].Rows[0] != &first[2].Rows[0] {
		t.Fatal("an unchanged chain was rebuilt")
	}
	if &second[1].Rows[0] == &oldRows[0] || second[1].Rows[0].Call.Status != CallOK {
		t.Fatal("the changed chain was not rebuilt")
	}
	if oldRows[0].Call.Status != CallRunning {
		t.Fatal("a call handed out before was modified")
	}
	// A chain whose start moves earlier moves in the order.
	tr.Add(start("req-early", "corr-2", "", "data", -time.Hour))
	var ids []string
	for _, c := range tr.Chains() {
		ids = append(ids, c.CorrelationID)
	}
	equalLines(t, "order", ids, []string{"corr-1", "corr-0", "corr-2"})
}

// BenchmarkTracesFold folds 10,000 spans (5,000 calls in 1,000 chains), then
// measures Chains after each further span.
func BenchmarkTracesFold(b *testing.B) {
	spans := make([]Span, 0, 10000)
	for i := range 5000 {
		corr := fmt.Sprintf("corr-%d", i%1000)
		parent := ""
		if i >= 1000 {
			parent = fmt.Sprintf("req-%d", i-1000)
		}
		req := fmt.Sprintf("req-%d", i)
		spans = append(spans, start(req, corr, parent, "data", time.Duration(i)*time.Millisecond))
		spans = append(spans, end(req, corr, parent, "data", time.Duration(i+3)*time.Millisecond, CallOK, 3))
	}
	b.Run("fold-10k", func(b *testing.B) {
		for range b.N {
			tr := NewTraces()
			for _, s := range spans {
				tr.Add(s)
			}
			tr.Chains()
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/10k-spans")
	})
	b.Run("chains-after-one-span", func(b *testing.B) {
		tr := NewTraces()
		for _, s := range spans {
			tr.Add(s)
		}
		tr.Chains()
		b.ResetTimer()
		for i := range b.N {
			s := start(fmt.Sprintf("req-x%d", i), fmt.Sprintf("corr-%d", i%1000), "", "data", time.Duration(i)*time.Millisecond)
			tr.Add(s)
			tr.Chains()
		}
	})
}
