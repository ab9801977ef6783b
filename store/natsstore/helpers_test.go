package natsstore_test

import (
	"sync"
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
