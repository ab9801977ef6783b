package teamdir

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"huddle/internal/testkit"
)

// threads is how many OS threads this process has (/proc/self/status).
func threads(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no Threads: line in /proc/self/status")
	return 0
}

// TestJoinerWaitsOffTheLock: while another holder keeps the file's flock,
// 500 appends wait on one writer, not 500 goroutines each in flock (each
// holding an OS thread: a flood of them ran a runtime out of threads);
// once the lock is free every line is there, whole, once.
func TestJoinerWaitsOffTheLock(t *testing.T) {
	const n = 500
	path := filepath.Join(t.TempDir(), "traces.jsonl")
	holder, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, FileMode)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if err := LockExclusive(holder); err != nil {
		t.Fatal(err)
	}
	before := threads(t)
	j := NewJoiner(path)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs <- j.Append(fmt.Appendf(nil, "{\"n\":%d}\n", i)) })
	}
	testkit.WaitFor(t, 20*time.Second, "every append queued behind the writer", func() bool {
		j.mu.Lock()
		defer j.mu.Unlock()
		return j.writing && len(j.waiting) == n-1
	})
	if grown := threads(t) - before; grown > 16 {
		t.Fatalf("%d appends waiting on a held lock grew the process by %d threads; want one writer in flock", n, grown)
	}
	if err := Unlock(holder); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	seen := map[string]bool{}
	for _, l := range lines {
		if !bytes.HasPrefix(l, []byte(`{"n":`)) || !bytes.HasSuffix(l, []byte("}")) || seen[string(l)] {
			t.Fatalf("line %q: torn or twice", l)
		}
		seen[string(l)] = true
	}
	if len(seen) != n {
		t.Fatalf("%d lines, want %d", len(seen), n)
	}
}

// TestJoinerFailsTheWholeBatch: an append that cannot be made fails for
// every caller whose line it carried, and the next one after the cause is
// gone goes in.
func TestJoinerFailsTheWholeBatch(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gone")
	j := NewJoiner(filepath.Join(dir, "traces.jsonl"))
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if err := j.Append([]byte("{}\n")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("append into a missing directory: %v, want not exist", err)
			}
		})
	}
	wg.Wait()
	if err := os.Mkdir(dir, DirMode); err != nil {
		t.Fatal(err)
	}
	if err := j.Append([]byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "traces.jsonl")); string(b) != "{}\n" {
		t.Fatalf("file holds %q, want one line", b)
	}
}
