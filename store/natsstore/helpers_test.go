package natsstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"huddle/protocol"
	"huddle/store"
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
