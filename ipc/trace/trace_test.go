package trace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"huddle/teamdir"
)

// fixture copies testdata/<names...> into a fresh team directory as its
// traces.jsonl and returns the directory.
func fixture(t *testing.T, names ...string) string {
	t.Helper()
	var all []byte
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join("testdata", n))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	dir := t.TempDir()
	if err := os.WriteFile(teamdir.TracesPath(dir), all, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// fold reads every span of dir's traces.jsonl into a Traces.
func fold(t *testing.T, dir string) (*Traces, *TraceReader) {
	t.Helper()
	r := NewTraceReader(dir)
	spans, err := r.Read()
	if err != nil {
		t.Fatal(err)
	}
	tr := NewTraces()
	for _, s := range spans {
		tr.Add(s)
	}
	return tr, r
}

// render writes a chain as one line per row: indentation by depth, then
// target.action, status, duration, error code and reason, late.
func render(c Chain) []string {
	var out []string
	for _, r := range c.Rows {
		l := fmt.Sprintf("%s%s.%s %s %dms", strings.Repeat("  ", r.Depth), r.Call.Target, r.Call.Action, r.Call.Status, r.Call.DurationMS)
		if r.Call.ErrorCode != "" {
			l += " " + r.Call.ErrorCode
		}
		if r.Call.ErrorReason != "" {
			l += "(" + r.Call.ErrorReason + ")"
		}
		if r.Call.Late {
			l += " late"
		}
		out = append(out, l)
	}
	return out
}

func equalLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s:\ngot\n%s\nwant\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func onlyChain(t *testing.T, tr *Traces) Chain {
	t.Helper()
	cs := tr.Chains()
	if len(cs) != 1 {
		t.Fatalf("got %d chains, want 1", len(cs))
	}
	return cs[0]
}

func TestChainOKTwoHops(t *testing.T) {
	tr, r := fold(t, fixture(t, "ok_two_hops.jsonl"))
	if r.Skipped() != 0 {
		t.Fatalf("skipped %d valid lines", r.Skipped())
	}
	c := onlyChain(t, tr)
	if c.CorrelationID != "corr-ok" || !c.Start.Equal(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)) {
		t.Fatalf("chain %s start %v", c.CorrelationID, c.Start)
	}
	// req-c1 started before req-b1 though its line came after: children
	// go by start time.
	equalLines(t, "tree", render(c), []string{
		"finanzas.pagar_factura ok 120ms",
		"  data.leer ok 3ms",
		"  data.escribir ok 40ms",
	})
	root := c.Rows[0].Call
	if root.Caller != "reservas" || root.Hop != 0 || root.Prompt != "pay invoice 42" || root.Result != `{"paid":true}` {
		t.Fatalf("root call: %+v", root)
	}
	if got := c.Rows[2].Call; got.ParentRequestID != "req-a1" || got.Hop != 1 || got.Caller != "finanzas" {
		t.Fatalf("hop 1 call: %+v", got)
	}
	if !root.End.Equal(time.Date(2026, 11, 30, 9, 0, 0, 120e6, time.UTC)) {
		t.Fatalf("root end %v", root.End)
	}
}

func TestChainDeniedAtMaxHops(t *testing.T) {
	tr, _ := fold(t, fixture(t, "denied_max_hops.jsonl"))
	c := onlyChain(t, tr)
	equalLines(t, "tree", render(c), []string{
		"finanzas.pagar_factura ok 45ms",
		"  data.escribir error 20ms DENIED",
		"    auditoria.registrar error 0ms DENIED(max_hops)",
	})
	denied := c.Rows[2].Call
	if denied.Hop != 2 || denied.ErrorMessage != "hop 2 is not below max_hops 2" || denied.Caller != "data" {
		t.Fatalf("denied call: %+v", denied)
	}
}

func TestChainTimeoutWithLateAnswer(t *testing.T) {
	tr, _ := fold(t, fixture(t, "timeout_late.jsonl"))
	c := onlyChain(t, tr)
	equalLines(t, "tree", render(c), []string{
		"finanzas.conciliar error 1000ms TIMEOUT late",
	})
	call := c.Rows[0].Call
	// The late answer is recorded, never delivered as if on time.
	if call.Result != "" || call.ErrorMessage != "no answer within 1s" ||
		!call.End.Equal(time.Date(2026, 11, 30, 9, 2, 1, 0, time.UTC)) {
		t.Fatalf("late answer leaked into the call: %+v", call)
	}
}

func TestChainsNewestFirst(t *testing.T) {
	tr, _ := fold(t, fixture(t, "ok_two_hops.jsonl", "timeout_late.jsonl", "denied_max_hops.jsonl"))
	var ids []string
	for _, c := range tr.Chains() {
		ids = append(ids, c.CorrelationID)
	}
	equalLines(t, "order", ids, []string{"corr-late", "corr-deny", "corr-ok"})
}

func TestTraceReaderTornLastLine(t *testing.T) {
	dir := fixture(t, "torn.jsonl")
	r := NewTraceReader(dir)
	spans, err := r.Read()
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != 2 || spans[0].RequestID != "req-t1" || spans[1].Span != SpanEnd || r.Skipped() != 0 {
		t.Fatalf("torn file: %d spans %+v, skipped %d", len(spans), spans, r.Skipped())
	}
	if again, _ := r.Read(); len(again) != 0 {
		t.Fatalf("the partial line was read before its newline: %+v", again)
	}
	// The writer finishes the line: it is read once, whole.
	f, err := os.OpenFile(teamdir.TracesPath(dir), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`get":"data","action":"escribir","hop":0}` + "\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	spans, err = r.Read()
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != 1 || spans[0].RequestID != "req-t2" || spans[0].Target != "data" || r.Skipped() != 0 {
		t.Fatalf("completed line: %+v, skipped %d", spans, r.Skipped())
	}
}

func TestTraceReaderSkipsGarbage(t *testing.T) {
	tr, r := fold(t, fixture(t, "garbage.jsonl"))
	if r.Skipped() != 9 {
		t.Fatalf("skipped %d lines, want 9", r.Skipped())
	}
	c := onlyChain(t, tr)
	equalLines(t, "tree", render(c), []string{"data.leer ok 200ms"})
	if tr.Len() != 1 {
		t.Fatalf("%d calls, want 1: an invalid line made a call", tr.Len())
	}
}

func TestTraceReaderRestartsWhenTheFileShrinks(t *testing.T) {
	dir := fixture(t, "ok_two_hops.jsonl")
	r := NewTraceReader(dir)
	if spans, _ := r.Read(); len(spans) != 6 {
		t.Fatalf("read %d spans, want 6", len(spans))
	}
	late, err := os.ReadFile(filepath.Join("testdata", "timeout_late.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// Truncated in place to something shorter.
	if err := os.WriteFile(teamdir.TracesPath(dir), late, 0o600); err != nil {
		t.Fatal(err)
	}
	spans, err := r.Read()
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != 3 || spans[0].RequestID != "req-a3" || r.Restarts() != 1 {
		t.Fatalf("after a shrink: %d spans, restarts %d", len(spans), r.Restarts())
	}
	// Replaced by rename with a longer file: also from its first line.
	both, _ := os.ReadFile(filepath.Join("testdata", "ok_two_hops.jsonl"))
	both = append(both, late...)
	tmp := filepath.Join(dir, "new")
	if err := os.WriteFile(tmp, both, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, teamdir.TracesPath(dir)); err != nil {
		t.Fatal(err)
	}
	spans, _ = r.Read()
	if len(spans) != 9 || spans[0].RequestID != "req-a1" || r.Restarts() != 2 {
		t.Fatalf("after a replacement: %d spans, restarts %d", len(spans), r.Restarts())
	}
}

func TestAppendSpanWireForm(t *testing.T) {
	dir := t.TempDir()
	ts := time.Date(2026, 11, 30, 9, 12, 58, 123456789, time.FixedZone("CET", 3600))
	s := Span{Span: SpanEnd, TS: ts, RequestID: "req-1", CorrelationID: "corr-1", Caller: "reservas", Target: "data",
		Action: "leer", Hop: 1, Status: "error", DurationMS: 7,
		Error: &SpanError{Code: "DENIED", Message: "no", Details: json.RawMessage(`{"reason":"max_hops"}`)}}
	if err := AppendSpan(dir, s); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(teamdir.TracesPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Count(b, []byte("\n")) != 1 || b[len(b)-1] != '\n' {
		t.Fatalf("not one line: %q", b)
	}
	if !bytes.Contains(b, []byte(`"ts":"2026-11-30T08:12:58.123456Z"`)) || bytes.Count(b, []byte(`"ts"`)) != 1 {
		t.Fatalf("ts not in the wire form: %s", b)
	}
	spans, err := NewTraceReader(dir).Read()
	if err != nil || len(spans) != 1 {
		t.Fatalf("read back: %v %+v", err, spans)
	}
	got := spans[0]
	if !got.TS.Equal(ts.Truncate(time.Microsecond)) || got.Error.Code != "DENIED" || string(got.Error.Details) != `{"reason":"max_hops"}` || got.Hop != 1 {
		t.Fatalf("round trip: %+v", got)
	}
	if st, _ := os.Stat(teamdir.TracesPath(dir)); st.Mode().Perm() != 0o600 {
		t.Fatalf("traces.jsonl mode %v, want 0600", st.Mode().Perm())
	}
}

func TestAppendSpanRefusesBadSpans(t *testing.T) {
	dir := t.TempDir()
	good := Span{Span: SpanStart, RequestID: "req-1", CorrelationID: "corr-1", Caller: "a", Target: "b", Action: "c"}
	bad := map[string]func(*Span){
		"request id with a slash": func(s *Span) { s.RequestID = "../x" },
		"empty correlation id":    func(s *Span) { s.CorrelationID = "" },
		"bad parent":              func(s *Span) { s.ParentRequestID = "a b" },
		"unknown kind":            func(s *Span) { s.Span = "middle" },
		"negative hop":            func(s *Span) { s.Hop = -1 },
		"end without status":      func(s *Span) { s.Span = SpanEnd },
	}
	for name, spoil := range bad {
		s := good
		spoil(&s)
		if err := AppendSpan(dir, s); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := os.Stat(teamdir.TracesPath(dir)); !os.IsNotExist(err) {
		t.Fatalf("a refused span touched traces.jsonl: %v", err)
	}
	if err := AppendSpan(dir, good); err != nil {
		t.Fatalf("good span: %v", err)
	}
	spans, _ := NewTraceReader(dir).Read()
	if len(spans) != 1 || spans[0].TS.IsZero() {
		t.Fatalf("a zero ts is stamped: %+v", spans)
	}
}

func TestAppendSpanConcurrentWithReader(t *testing.T) {
	dir := t.TempDir()
	const writers, each = 6, 400
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				s := Span{Span: SpanStart, RequestID: fmt.Sprintf("req-%d-%d", w, i), CorrelationID: fmt.Sprintf("corr-%d", w),
					Caller: "a", Target: "b", Action: "c", Prompt: strings.Repeat("x", i%300)}
				if err := AppendSpan(dir, s); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	r := NewTraceReader(dir)
	seen := make(map[string]int)
	order := make(map[string]int) // per writer: the last index seen
	deadline := time.Now().Add(20 * time.Second)
	for len(seen) < writers*each && time.Now().Before(deadline) {
		spans, err := r.Read()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range spans {
			seen[s.RequestID]++
			var w, i int
			fmt.Sscanf(s.RequestID, "req-%d-%d", &w, &i)
			if last, ok := order[s.CorrelationID]; ok && i != last+1 {
				t.Fatalf("writer %d: span %d after %d", w, i, last)
			}
			order[s.CorrelationID] = i
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if spans, _ := r.Read(); len(spans) != 0 {
		t.Fatalf("%d spans left after all were seen", len(spans))
	}
	if len(seen) != writers*each || r.Skipped() != 0 {
		t.Fatalf("saw %d distinct spans of %d, skipped %d", len(seen), writers*each, r.Skipped())
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("%s read %d times", id, n)
		}
	}
}
