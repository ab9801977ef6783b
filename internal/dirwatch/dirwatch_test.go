package dirwatch

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestOneWatchPerDirectory: 300 followers of files in one directory, more
// than the kernel's default 128 inotify instances a user may hold, share
// one watch; each is woken by a write to its own file and not by another's;
// the last one closed stops the watch, and a follower after it starts one
// again.
func TestOneWatchPerDirectory(t *testing.T) {
	const n = 300
	d := t.TempDir()
	var s Set
	subs := make([]*Sub, n)
	for i := range subs {
		sub, err := s.Follow(filepath.Join(d, fmt.Sprintf("f%03d", i)))
		if err != nil {
			t.Fatalf("follower %d of %d: %v", i+1, n, err)
		}
		subs[i] = sub
	}
	if len(s.dirs) != 1 {
		t.Fatalf("%d watches for one directory", len(s.dirs))
	}
	if err := os.WriteFile(filepath.Join(d, "f007"), []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case <-subs[7].Changed():
	case <-time.After(10 * time.Second):
		t.Fatal("the follower of the file written was not woken")
	}
	// The write's events have all been handed out once the follower of a
	// file written after it is woken: the others saw none.
	if err := os.WriteFile(filepath.Join(d, "f008"), []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case <-subs[8].Changed():
	case <-time.After(10 * time.Second):
		t.Fatal("the follower of the second file written was not woken")
	}
	for i, sub := range subs {
		if i == 7 || i == 8 {
			continue
		}
		select {
		case <-sub.Changed():
			t.Fatalf("follower %d woken by another file's write", i)
		default:
		}
	}
	for _, sub := range subs {
		if err := sub.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if len(s.dirs) != 0 {
		t.Fatalf("%d watches left after every follower closed", len(s.dirs))
	}
	again, err := s.Follow(filepath.Join(d, "f000"))
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if err := os.WriteFile(filepath.Join(d, "f000"), []byte("y\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case <-again.Changed():
	case <-time.After(10 * time.Second):
		t.Fatal("a follower after the watch stopped was not woken")
	}
}
