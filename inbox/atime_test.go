package inbox

import (
	"context"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"huddle/internal/testkit"
)

// TestReadersLeaveTheAccessTime: a consumer and an observer read an inbox
// without updating its access time, where a plain read of the same file
// does (relatime updates it on the first read after a write): an update
// dirties the inode on every delivery.
func TestReadersLeaveTheAccessTime(t *testing.T) {
	team := t.TempDir()
	if err := Append(team, "bob", msg("alice", "bob", "hello")); err != nil {
		t.Fatal(err)
	}
	p, err := path(team, "bob")
	if err != nil {
		t.Fatal(err)
	}
	// An access time before the modification: the next read updates it,
	// unless the reader asks not to.
	past := func() time.Time {
		t.Helper()
		st := stat(t, p)
		at := time.Unix(st.Mtim.Unix()).Add(-time.Hour)
		if err := os.Chtimes(p, at, time.Unix(st.Mtim.Unix())); err != nil {
			t.Fatal(err)
		}
		return at
	}
	atime := func() time.Time { return time.Unix(stat(t, p).Atim.Unix()) }

	at := past()
	if _, err := os.ReadFile(p); err != nil {
		t.Fatal(err)
	}
	if atime().Equal(at) {
		t.Skip("this file system does not update access times on read (noatime)")
	}

	at = past()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := NewWatcher(ctx, team, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var consumed, observed atomic.Int32
	if err := w.Consume("bob", func(context.Context, Delivery) error { consumed.Add(1); return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Observe("bob", true, func(Delivery) { observed.Add(1) }); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the message consumed and observed", func() bool {
		return consumed.Load() == 1 && observed.Load() == 1
	})
	if got := atime(); !got.Equal(at) {
		t.Fatalf("the inbox's access time went from %v to %v: a reader updated it", at, got)
	}
}

func stat(t *testing.T, p string) *syscall.Stat_t {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return &st
}
