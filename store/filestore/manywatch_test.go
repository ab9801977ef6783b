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

// TestMoreConsumersThanInotifyInstances: a team of 300 members on the
// files store, each consumed and each watched by a UI, more followers than
// the kernel's default 128 inotify instances a user may hold: every
// consumer starts, and every message reaches its consumer and its watch.
func TestMoreConsumersThanInotifyInstances(t *testing.T) {
	const members = 300
	st, err := filestore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var mu sync.Mutex
	consumed, watched := map[string]bool{}, map[string]bool{}
	for i := range members {
		name := fmt.Sprintf("m%03d", i)
		sub, err := st.Consume(ctx, name, func(_ context.Context, d store.Delivery) error {
			mu.Lock()
			consumed[d.Msg.To] = true
			mu.Unlock()
			return nil
		})
		if err != nil {
			t.Fatalf("consumer %d of %d: %v", i+1, members, err)
		}
		defer sub.Stop()
		w, err := st.WatchInbox(ctx, name, func(d store.Delivery) {
			mu.Lock()
			watched[d.Msg.To] = true
			mu.Unlock()
		})
		if err != nil {
			t.Fatalf("inbox watch %d of %d: %v", i+1, members, err)
		}
		defer w.Stop()
	}
	for i := range members {
		m := protocol.NewMessage(protocol.TypeMessage, protocol.Lead, fmt.Sprintf("m%03d", i))
		m.Content = "hello"
		if err := st.Append(ctx, m.To, &m); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		mu.Lock()
		c, w := len(consumed), len(watched)
		mu.Unlock()
		if c == members && w == members {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30s: %d of %d consumers and %d of %d watches got their message", c, members, w, members)
		}
		<-tick.C
	}
}
