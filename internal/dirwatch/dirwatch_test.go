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

// TestPacedWatchMissesNoChange: a paced watch (a screen's) rests between
// bursts, yet every follower of a file written hears of its last write,
// the follower of a file not written hears nothing, and closing the last
// follower while the watch rests ends it.
func TestPacedWatchMissesNoChange(t *testing.T) {
	d := t.TempDir()
	s := Set{Pace: 20 * time.Millisecond}
	names := []string{"a", "b", "c"}
	subs := map[string]*Sub{}
	for _, n := range names {
		sub, err := s.Follow(filepath.Join(d, n))
		if err != nil {
			t.Fatal(err)
		}
		subs[n] = sub
	}
	files := map[string]*os.File{}
	for _, n := range names[:2] {
		f, err := os.OpenFile(filepath.Join(d, n), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		files[n] = f
	}
	const writes = 500
	for i := range writes {
		for _, n := range names[:2] {
			if _, err := fmt.Fprintf(files[n], "%04d\n", i); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, n := range names[:2] {
		// Woken until a wake finds the file whole: the last write was
		// told, however many the rests folded into one.
		deadline := time.After(10 * time.Second)
		for {
			select {
			case <-subs[n].Changed():
			case <-deadline:
				t.Fatalf("the follower of %s never heard of its last write", n)
			}
			fi, err := os.Stat(filepath.Join(d, n))
			if err != nil {
				t.Fatal(err)
			}
			if fi.Size() == writes*5 {
				break
			}
		}
	}
	select {
	case <-subs["c"].Changed():
		t.Fatal("the follower of a file no one wrote was woken by the others' writes")
	default:
	}
	closed := make(chan struct{})
	go func() { // owner: this test; ends when the followers are closed
		defer close(closed)
		for _, sub := range subs {
			_ = sub.Close()
		}
	}()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("closing a resting watch never ended")
	}
}
