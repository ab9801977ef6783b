package filestore

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"huddle/internal/testkit"
)

// TestFollowRescans: with a rescan, a subscription drains again and again
// though nothing happens to its file, as a consumer must on a file system
// whose changes inotify misses (inbox.Options.Rescan); it stops with the
// subscription.
func TestFollowRescans(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var drains atomic.Int64
	sub, err := s.follow(t.Context(), s.dir, "quiet.jsonl", func(context.Context) error { drains.Add(1); return nil }, nil, 5*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 15*time.Second, "five drains of a file nobody writes", func() bool { return drains.Load() >= 5 })
	if err := sub.Stop(); err != nil {
		t.Fatal(err)
	}
	after := drains.Load()
	if sub.Stop(); drains.Load() != after {
		t.Fatalf("drained after Stop: %d, then %d", after, drains.Load())
	}
}
