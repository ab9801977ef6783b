package ipc

import (
	"context"
	"testing"

	"huddle/inbox"
	"huddle/ipc/trace"
	"huddle/protocol"
)

// answerInto appends res to the inbox of its caller, as a teammate answers.
func answerInto(t *testing.T, dir, from, caller string, res protocol.InvocationResult) {
	t.Helper()
	m := protocol.NewMessage(protocol.TypeInvocationResult, from, caller)
	m.Result = &res
	if err := inbox.Append(dir, caller, &m); err != nil {
		t.Fatal(err)
	}
}

// TestAnswerWatchDeliversAndMarksLate: answers come back through the
// caller's inbox, which an AnswerWatch observes. An answer in time reaches
// its call; one after the deadline reaches no one and is traced as late,
// once, however often the inbox is followed.
func TestAnswerWatchDeliversAndMarksLate(t *testing.T) {
	dir := t.TempDir()
	router := NewRouter(dir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	answers, err := WatchAnswers(ctx, dir, router, inbox.Options{}, "me")
	if err != nil {
		t.Fatal(err)
	}
	defer answers.Close()
	if err := answers.Follow("me"); err != nil { // a second Follow changes nothing
		t.Fatal(err)
	}
	// quick answers at once, into the caller's inbox; slowpoke never does.
	w, err := inbox.NewWatcher(ctx, dir, inbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Consume("quick", func(_ context.Context, d inbox.Delivery) error {
		res, _ := protocol.OK(d.Msg.Invocation, 1, map[string]string{"summary": "hi"})
		m := protocol.NewMessage(protocol.TypeInvocationResult, "quick", d.Msg.From)
		m.Result = &res
		return inbox.Append(dir, d.Msg.From, &m)
	}); err != nil {
		t.Fatal(err)
	}
	c := &Caller{TeamDir: dir, Policy: policy(t, `{"allowed_targets":["quick","slowpoke"]}`),
		Resolve: func(name string) (Target, string) { return InboxTarget{TeamDir: dir, Name: name, Router: router}, "" }}

	if res := c.Call(ctx, protocol.InvocationRequest{Caller: "me", Target: "quick", Action: "hello", TimeoutSec: 10}); res.Status != protocol.ResultOK {
		t.Fatalf("on time: got %+v", res)
	}
	timedOut := c.Call(ctx, protocol.InvocationRequest{Caller: "me", Target: "slowpoke", Action: "think", TimeoutSec: 1})
	if timedOut.Error == nil || timedOut.Error.Code != protocol.ErrTimeout {
		t.Fatalf("got %+v, want TIMEOUT", timedOut)
	}
	var asked []protocol.InvocationRequest
	o, err := inbox.NewObserver(dir, "slowpoke", true, func(d inbox.Delivery) { asked = append(asked, *d.Msg.Invocation) })
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Drain(); err != nil || len(asked) != 1 {
		t.Fatalf("slowpoke's inbox: %+v %v", asked, err)
	}
	late, _ := protocol.OK(&asked[0], 1500, map[string]string{"summary": "finally"})
	answerInto(t, dir, "slowpoke", "me", late)
	// The watch reads the caller's inbox in order: once the next call's
	// answer has arrived, the late answer before it has been handled.
	if res := c.Call(ctx, protocol.InvocationRequest{Caller: "me", Target: "quick", Action: "hello", TimeoutSec: 10}); res.Status != protocol.ResultOK {
		t.Fatalf("after the late answer: got %+v", res)
	}
	var lateEnds []trace.Span
	for _, s := range readSpans(t, dir) {
		if s.Span == trace.SpanEnd && s.Late {
			lateEnds = append(lateEnds, s)
		}
	}
	if len(lateEnds) != 1 || lateEnds[0].RequestID != timedOut.RequestID || lateEnds[0].Status != protocol.ResultOK {
		t.Fatalf("late spans %+v, want one for %s", lateEnds, timedOut.RequestID)
	}
}

// TestRouterTakeLeavesOtherLinesAlone: Take hands on invocation_results
// only; one nobody waits for (another process's, perhaps) is neither
// delivered nor traced.
func TestRouterTakeLeavesOtherLinesAlone(t *testing.T) {
	dir := t.TempDir()
	router := NewRouter(dir)
	plain := protocol.NewMessage(protocol.TypeMessage, "you", "me")
	plain.Content = "hello"
	req := protocol.InvocationRequest{RequestID: protocol.NewInvocationID(), CorrelationID: protocol.NewCorrelationID(),
		Caller: "me", Target: "you", Action: "x", TimeoutSec: 5}
	res, _ := protocol.OK(&req, 1, map[string]string{"summary": "for someone else"})
	unawaited := protocol.NewMessage(protocol.TypeInvocationResult, "you", "me")
	unawaited.Result = &res
	for _, m := range []protocol.Message{plain, unawaited} {
		if router.Take(m) {
			t.Errorf("Take(%s) delivered it", m.Type)
		}
	}
	if spans := readSpans(t, dir); len(spans) != 0 {
		t.Fatalf("Take wrote spans: %+v", spans)
	}
}
