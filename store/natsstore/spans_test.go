package natsstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"huddle/ipc/trace"
	"huddle/protocol"
)

// TestSpansReadsWhatIsThere: Spans reads every span the stream holds when
// called, in order, counts a message that is no span, and returns on an
// empty stream.
func TestSpansReadsWhatIsThere(t *testing.T) {
	team := fmt.Sprintf("t%d", teams.Add(1))
	s := openURL(t, server.URL(team))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	spans, skipped, err := s.Spans(ctx)
	if err != nil || len(spans) != 0 || skipped != 0 {
		t.Fatalf("Spans of an empty stream = %v, %d, %v", spans, skipped, err)
	}
	at := time.Now()
	for i := range 5 {
		sp := trace.Span{Span: trace.SpanStart, TS: at.Add(time.Duration(i) * time.Millisecond), RequestID: fmt.Sprintf("req-%d", i),
			CorrelationID: "corr-1", Caller: "lead", Target: "coder", Action: "write"}
		if err := s.AppendSpan(ctx, sp); err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			// A foreign publisher's line that is no span.
			if err := s.Conn().Publish("huddle."+team+".traces", []byte("not a span")); err != nil {
				t.Fatal(err)
			}
			if err := s.Conn().Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	spans, skipped, err = s.Spans(ctx)
	if err != nil || skipped != 1 || len(spans) != 5 {
		t.Fatalf("Spans = %d spans, %d skipped, %v; want 5 and 1", len(spans), skipped, err)
	}
	for i, sp := range spans {
		if sp.RequestID != fmt.Sprintf("req-%d", i) {
			t.Fatalf("span %d is %s", i, sp.RequestID)
		}
	}
}

// TestDeadLettersCountsWhatIsNone: an entry of the dead-letter subject
// that is not a dead letter (a foreign publisher's) is counted as skipped,
// not left out silently, and the dead letters around it are read.
func TestDeadLettersCountsWhatIsNone(t *testing.T) {
	team := fmt.Sprintf("t%d", teams.Add(1))
	s := openURL(t, server.URL(team))
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for i, raw := range []string{"first", "", "second"} {
		if raw == "" {
			for _, junk := range []string{"not a dead letter", `{"reason":"no source"}`} {
				if err := s.Conn().Publish("huddle."+team+".deadletter", []byte(junk)); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Conn().Flush(); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := s.DeadLetter(ctx, protocol.DeadLetterLine{Source: "exec:alice", Offset: int64(i), Reason: "bad", Raw: raw}); err != nil {
			t.Fatal(err)
		}
	}
	dls, skipped, err := s.DeadLetters(ctx)
	if err != nil || skipped != 2 || len(dls) != 2 || dls[0].Raw != "first" || dls[1].Raw != "second" {
		t.Fatalf("DeadLetters = %+v, %d skipped, %v; want first and second, 2 skipped", dls, skipped, err)
	}
}
