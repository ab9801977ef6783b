package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"huddle/protocol"
	"huddle/store"
)

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
	dls, _, err := s.DeadLetters(ctx)
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
	if err := s.Append(ctx, "carol", huge); !errors.Is(err, protocol.ErrTooLarge) {
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

// testDeadLetters: dead letters come back in order, raw input cut to 4 KiB.
func testDeadLetters(t *testing.T, open Opener) {
	ctx := ctxOf(t)
	s := open(t)
	if dls, skipped, err := s.DeadLetters(ctx); err != nil || len(dls) != 0 || skipped != 0 {
		t.Fatalf("an empty team's dead letters: %v %+v (%d skipped)", err, dls, skipped)
	}
	big := strings.Repeat("z", 10_000)
	for i, raw := range []string{"not json", big} {
		if err := s.DeadLetter(ctx, protocol.DeadLetterLine{Source: "exec:alice", Offset: int64(i), Reason: fmt.Sprintf("reason %d", i), Raw: raw}); err != nil {
			t.Fatal(err)
		}
	}
	dls, skipped, err := open(t).DeadLetters(ctx)
	if err != nil || skipped != 0 {
		t.Fatalf("dead letters: %v, %d skipped", err, skipped)
	}
	if len(dls) != 2 || dls[0].Reason != "reason 0" || dls[0].Raw != "not json" || dls[1].Reason != "reason 1" || len(dls[1].Raw) != 4096 || dls[1].TS == "" || dls[1].Source != "exec:alice" {
		t.Fatalf("dead letters: %d %+v", len(dls), dls)
	}
}

// testUnread: Unread counts what the member's consumer has not committed,
// all of it before a consumer ever ran, the message a stopped handler was
// holding among it, on any handle.
func testUnread(t *testing.T, open Opener) {
	ctx := ctxOf(t)
	s := open(t)
	if n, err := s.Unread(ctx, "alice"); err != nil || n != 0 {
		t.Fatalf("unread of an empty inbox: %d %v", n, err)
	}
	if _, err := s.Unread(ctx, "../alice"); err == nil {
		t.Fatal("an invalid name was counted")
	}
	const total, commit = 5, 2
	for i := range total {
		if err := s.Append(ctx, "alice", message("lead", "alice", fmt.Sprintf("m%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Append(ctx, "bob", message("lead", "bob", "not alice's")); err != nil {
		t.Fatal(err)
	}
	if n, err := open(t).Unread(ctx, "alice"); err != nil || n != total {
		t.Fatalf("unread before any consumer: %d %v, want %d", n, err, total)
	}
	// The first two are committed; the third is held until the stop.
	other := open(t)
	sub := CommitThenHold(t, ctx, s, "alice", commit, total)
	if n, err := other.Unread(ctx, "alice"); err != nil || n != total-commit {
		t.Fatalf("unread on another handle after two commits: %d %v, want %d", n, err, total-commit)
	}
	if err := sub.Stop(); err != nil {
		t.Fatal(err)
	}
	if n, err := open(t).Unread(ctx, "alice"); err != nil || n != total-commit {
		t.Fatalf("unread after the stop: %d %v, want %d", n, err, total-commit)
	}
	if n, err := other.Unread(ctx, "bob"); err != nil || n != 1 {
		t.Fatalf("bob's unread: %d %v, want 1", n, err)
	}
	Drain(t, ctx, open(t), "alice", total-commit)
	waitFor(t, "no unread once all are committed", func() bool {
		n, err := other.Unread(ctx, "alice")
		return err == nil && n == 0
	})
}

// testWatchInbox: a watch of an inbox sees the messages appended after it
// started, once each, in order of their Seq, none from before and none of
// another member's; the member's consumer, on another handle, still gets
// every message, the watched ones included.
func testWatchInbox(t *testing.T, open Opener) {
	ctx := ctxOf(t)
	s := open(t)
	w, ok := s.(store.InboxWatcher)
	if !ok {
		t.Skipf("%T has no inbox watch", s)
	}
	var (
		mu      sync.Mutex
		watched []store.Delivery
	)
	ids := func(ds []store.Delivery) map[string]bool {
		out := map[string]bool{}
		for _, d := range ds {
			out[d.Msg.ID] = true
		}
		return out
	}
	before := AppendN(t, s, "lead", "alice", "before", 3)
	sub, err := w.WatchInbox(ctx, "alice", func(d store.Delivery) {
		mu.Lock()
		watched = append(watched, d)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Stop() })
	after := AppendN(t, s, "lead", "alice", "after", 5)
	AppendN(t, s, "lead", "bob", "to bob", 2)
	waitFor(t, "the watch sees the messages appended after it", func() bool {
		mu.Lock()
		defer mu.Unlock()
		got := ids(watched)
		for _, id := range after {
			if !got[id] {
				return false
			}
		}
		return true
	})
	var consumed []store.Delivery
	csub, err := open(t).Consume(ctx, "alice", func(_ context.Context, d store.Delivery) error {
		mu.Lock()
		consumed = append(consumed, d)
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = csub.Stop() })
	waitFor(t, "the consumer gets every message", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(consumed) == len(before)+len(after)
	})
	mu.Lock()
	got := append([]store.Delivery(nil), watched...)
	mu.Unlock()
	if len(got) != len(after) {
		t.Fatalf("the watch saw %d messages, want the %d appended to alice after it", len(got), len(after))
	}
	for i, d := range got {
		if d.Msg.ID != after[i] || (i > 0 && d.Seq <= got[i-1].Seq) {
			t.Fatalf("the watch saw %v, want %v in order of Seq", got, after)
		}
	}
	if _, err := w.WatchInbox(ctx, "../x", func(store.Delivery) {}); err == nil {
		t.Fatal("an invalid member name was accepted")
	}
}

// testWatchAnswers: a caller's watch for its answers is handed the
// messages appended to its inbox after it started, once each, in order,
// none from before and none of another member's, whatever take says.
func testWatchAnswers(t *testing.T, open Opener) {
	ctx := ctxOf(t)
	s := open(t)
	w, ok := s.(store.AnswerWatcher)
	if !ok {
		t.Skipf("%T has no answer watch", s)
	}
	var (
		mu     sync.Mutex
		handed []string
	)
	AppendN(t, s, "lead", "cli", "before", 2)
	sub, err := w.WatchAnswers(ctx, "cli", func(d store.Delivery) bool {
		mu.Lock()
		defer mu.Unlock()
		handed = append(handed, d.Msg.ID)
		return len(handed)%2 == 0 // taken or not, each is handed once
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Stop() })
	after := AppendN(t, open(t), "lead", "cli", "after", 4)
	AppendN(t, s, "lead", "bob", "to bob", 2)
	waitFor(t, "the watch hands on the messages appended after it", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(handed) >= len(after)
	})
	mu.Lock()
	got := append([]string(nil), handed...)
	mu.Unlock()
	if strings.Join(got, ",") != strings.Join(after, ",") {
		t.Fatalf("the watch handed %v, want %v", got, after)
	}
	if _, err := w.WatchAnswers(ctx, "../x", func(store.Delivery) bool { return false }); err == nil {
		t.Fatal("an invalid caller name was accepted")
	}
}

// testWatchDeadLetters: a store that watches its dead letters
// (store.DeadLetterWatcher) tells the watch as it starts and after each
// one recorded on another handle, so a reader that reads on each call sees
// every one.
func testWatchDeadLetters(t *testing.T, open Opener) {
	ctx := ctxOf(t)
	s := open(t)
	w, ok := s.(store.DeadLetterWatcher)
	if !ok {
		t.Skipf("%T does not watch its dead letters", s)
	}
	var mu sync.Mutex
	calls := 0
	seen := 0 // dead letters read at the last call
	read := make(chan struct{}, 1)
	sub, err := w.WatchDeadLetters(ctx, func() {
		mu.Lock()
		calls++
		mu.Unlock()
		select {
		case read <- struct{}{}:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	stopAtEnd(t, sub)
	waitFor(t, "the call as the watch starts", func() bool { mu.Lock(); defer mu.Unlock(); return calls > 0 })
	<-read // that call's: from here on a read is one a dead letter told
	writer := open(t)
	for i := range 3 {
		if err := writer.DeadLetter(ctx, protocol.DeadLetterLine{Source: "exec:alice", Offset: int64(i), Reason: "watched"}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, fmt.Sprintf("dead letter %d told and read", i), func() bool {
			select {
			case <-read:
				dls, _, err := s.DeadLetters(ctx)
				if err == nil {
					seen = len(dls)
				}
			default:
			}
			return seen == i+1
		})
	}
}
