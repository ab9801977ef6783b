package natsstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"huddle/protocol"
	"huddle/store"
	"huddle/store/natsstore"
)

// seen collects the ids a watch or a consumer is handed.
type seen struct {
	mu  sync.Mutex
	ids []string
}

func (s *seen) add(id string) { s.mu.Lock(); s.ids = append(s.ids, id); s.mu.Unlock() }
func (s *seen) has(ids ...string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	got := map[string]bool{}
	for _, id := range s.ids {
		got[id] = true
	}
	for _, id := range ids {
		if !got[id] {
			return false
		}
	}
	return true
}
func (s *seen) count() int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.ids) }

func appendN(t *testing.T, st store.Store, member, prefix string, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var ids []string
	for i := range n {
		m := protocol.NewMessage(protocol.TypeMessage, "lead", member)
		m.Content = fmt.Sprintf("%s %d", prefix, i)
		if err := st.Append(ctx, member, &m); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	return ids
}

// TestWatchInboxFollowsFromTheEndAndTakesNothing: a watch of an inbox sees
// the messages appended after it started, none from before, and none of
// another member's; the member's durable consumer, on another connection,
// still gets every message, the watched ones included.
func TestWatchInboxFollowsFromTheEndAndTakesNothing(t *testing.T) {
	open := factory(t)
	st, ok := open(t).(*natsstore.Store)
	if !ok {
		t.Fatal("not a *natsstore.Store")
	}
	other := open(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	before := appendN(t, st, "alice", "before", 3)
	var watched seen
	sub, err := st.WatchInbox(ctx, "alice", func(d store.Delivery) { watched.add(d.Msg.ID) })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	after := appendN(t, st, "alice", "after", 5)
	appendN(t, st, "bob", "to bob", 2)
	waitFor(t, "the watch sees the messages appended after it", func() bool { return watched.has(after...) })
	var consumed seen
	csub, err := other.Consume(ctx, "alice", func(_ context.Context, d store.Delivery) error { consumed.add(d.Msg.ID); return nil })
	if err != nil {
		t.Fatal(err)
	}
	defer csub.Stop()
	waitFor(t, "the durable consumer gets every message", func() bool { return consumed.has(append(before, after...)...) })
	if watched.has(before[0]) || watched.has(before[1]) || watched.has(before[2]) {
		t.Fatal("the watch saw a message appended before it started")
	}
	if n := watched.count(); n != len(after) {
		t.Fatalf("the watch saw %d messages, want the %d appended to alice after it", n, len(after))
	}
	if _, err := st.WatchInbox(ctx, "../x", func(store.Delivery) {}); err == nil {
		t.Fatal("an invalid member name was accepted")
	}
}
