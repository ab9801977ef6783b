package filestore

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
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
	sub, err := s.follow(t.Context(), s.dir, "quiet.jsonl", drainFunc(func(context.Context) error { drains.Add(1); return nil }), 5*time.Millisecond)
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

// TestFollowSaysWhetherTheFileMoved: a drain after a write is told the
// file did not move, so an inbox consumer reads without a stat of its
// name; after a rename onto the name it is told it did.
func TestFollowSaysWhetherTheFileMoved(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p := filepath.Join(s.dir, "watched.jsonl")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var told []bool
	sub, err := s.follow(t.Context(), s.dir, "watched.jsonl", movedFunc(func(moved bool) {
		mu.Lock()
		told = append(told, moved)
		mu.Unlock()
	}), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	since := func(from int, moved bool) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			return slices.Contains(told[min(from, len(told)):], moved)
		}
	}
	testkit.WaitFor(t, 15*time.Second, "the first drain, told the file may have moved", since(0, true))
	mu.Lock()
	n := len(told)
	mu.Unlock()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("{}\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	testkit.WaitFor(t, 15*time.Second, "a drain after the write, told it did not move", since(n, false))
	mu.Lock()
	n = len(told)
	mu.Unlock()
	other := filepath.Join(s.dir, "other.tmp")
	if err := os.WriteFile(other, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other, p); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 15*time.Second, "a drain after the rename, told it moved", since(n, true))
}

// movedFunc is a drainer that records what it is told of the file.
type movedFunc func(moved bool)

func (f movedFunc) drain(_ context.Context, moved bool) error { f(moved); return nil }
func (movedFunc) finish() error                               { return nil }
