package filestore_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"huddle/ipc/trace"
	"huddle/store/filestore"
	"huddle/teamdir"
)

// TestSpansReadsWhatIsThere: Spans reads every span of traces.jsonl, in
// order, and counts a line that is no span.
func TestSpansReadsWhatIsThere(t *testing.T) {
	dir := t.TempDir()
	s, err := filestore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if spans, skipped, err := s.Spans(ctx); err != nil || len(spans) != 0 || skipped != 0 {
		t.Fatalf("Spans without traces.jsonl = %v, %d, %v", spans, skipped, err)
	}
	at := time.Now()
	for i := range 3 {
		sp := trace.Span{Span: trace.SpanStart, TS: at, RequestID: fmt.Sprintf("req-%d", i), CorrelationID: "corr-1", Caller: "lead", Target: "coder", Action: "write"}
		if err := s.AppendSpan(ctx, sp); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.OpenFile(teamdir.TracesPath(dir), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("not a span\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	spans, skipped, err := s.Spans(ctx)
	if err != nil || len(spans) != 3 || skipped != 1 || spans[2].RequestID != "req-2" {
		t.Fatalf("Spans = %v, %d skipped, %v; want 3 and 1", spans, skipped, err)
	}
}
