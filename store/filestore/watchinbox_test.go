package filestore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"huddle/protocol"
	"huddle/store"
	"huddle/store/filestore"
)

// waitFor waits until cond holds, failing the test at the deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// seen collects the ids a watch or a consumer is handed, with each one's
// Seq.
type seen struct {
	mu   sync.Mutex
	ids  []string
	seqs []int64
}

func (s *seen) add(d store.Delivery) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids = append(s.ids, d.Msg.ID)
	s.seqs = append(s.seqs, d.Seq)
}

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

func appendN(t *testing.T, st store.Store, member, prefix string, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		m := protocol.NewMessage(protocol.TypeMessage, "lead", member)
		m.Content = fmt.Sprintf("%s %d", prefix, i)
		if err := st.Append(context.Background(), member, &m); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	return ids
}

// TestWatchInboxFollowsFromTheEndAndTakesNothing: the file store's watch of
// an inbox sees the messages appended after it started, once each, in
// offset order, none from before and none of another member's; the
// member's consumer, on another handle, still gets every message.
func TestWatchInboxFollowsFromTheEndAndTakesNothing(t *testing.T) {
	open := factory(t)
	st, ok := open(t).(*filestore.Store)
	if !ok {
		t.Fatal("not a *filestore.Store")
	}
	other := open(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	before := appendN(t, st, "alice", "before", 3)
	var watched seen
	sub, err := st.WatchInbox(ctx, "alice", watched.add)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	after := appendN(t, st, "alice", "after", 5)
	appendN(t, st, "bob", "to bob", 2)
	waitFor(t, "the watch sees the messages appended after it", func() bool { return watched.has(after...) })
	var consumed seen
	csub, err := other.Consume(ctx, "alice", func(_ context.Context, d store.Delivery) error { consumed.add(d); return nil })
	if err != nil {
		t.Fatal(err)
	}
	defer csub.Stop()
	waitFor(t, "the consumer gets every message", func() bool { return consumed.has(append(before, after...)...) })
	watched.mu.Lock()
	ids, seqs := append([]string(nil), watched.ids...), append([]int64(nil), watched.seqs...)
	watched.mu.Unlock()
	if len(ids) != len(after) {
		t.Fatalf("the watch saw %d messages, want the %d appended to alice after it: %v", len(ids), len(after), ids)
	}
	for i := range ids {
		if ids[i] != after[i] || (i > 0 && seqs[i] <= seqs[i-1]) {
			t.Fatalf("the watch saw %v at %v, want %v in offset order", ids, seqs, after)
		}
	}
	if _, err := st.WatchInbox(ctx, "../x", func(store.Delivery) {}); err == nil {
		t.Fatal("an invalid member name was accepted")
	}
}
