package teamdir

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestRuntimeLockRecordsPIDAndTimes: the lock file names the pid and start
// time while held, and the stop time after a clean unlock; a probe tells a
// held lock from a free one.
func TestRuntimeLockRecordsPIDAndTimes(t *testing.T) {
	dir := t.TempDir()
	if st, err := ProbeRuntime(dir); err != nil || st.Running || st.Last.PID != 0 {
		t.Fatalf("before any runtime: %+v %v", st, err)
	}
	if _, err := os.Stat(RuntimeLockPath(dir)); !os.IsNotExist(err) {
		t.Fatalf("the probe created runtime.lock: %v", err)
	}
	before := time.Now().Add(-time.Second)
	unlock, err := LockRuntime(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := ProbeRuntime(dir)
	if err != nil || !st.Running || st.Last.PID != os.Getpid() || st.Last.Started.Before(before) || st.Last.Stopped != nil {
		t.Fatalf("while held: %+v %v", st, err)
	}
	unlock()
	st, err = ProbeRuntime(dir)
	if err != nil || st.Running || st.Last.PID != os.Getpid() || st.Last.Stopped == nil || st.Last.Stopped.Before(st.Last.Started) {
		t.Fatalf("after a clean stop: %+v %v", st, err)
	}
}

// TestProbeNeverStopsARuntimeFromStarting: readers probe the lock often
// (huddle status in a loop, every UI's rescan: here two readers, each every
// millisecond, far more than any real one); a runtime starting meanwhile
// still gets it.
func TestProbeNeverStopsARuntimeFromStarting(t *testing.T) {
	dir := t.TempDir()
	unlock, err := LockRuntime(dir)
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
			for !stop.Load() {
				if _, err := ProbeRuntime(dir); err != nil {
					t.Error(err)
					return
				}
				<-tick.C
			}
		}()
	}
	for i := range 50 {
		unlock, err := LockRuntime(dir)
		if err != nil {
			stop.Store(true)
			wg.Wait()
			t.Fatalf("lock %d with readers probing: %v", i, err)
		}
		unlock()
	}
	stop.Store(true)
	wg.Wait()
}

// TestLockRuntimeReadsABarePID: a lock file in the format before the record
// (a bare pid) still names its pid.
func TestLockRuntimeReadsABarePID(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(RuntimeLockPath(dir), []byte("4242"), FileMode); err != nil {
		t.Fatal(err)
	}
	st, err := ProbeRuntime(dir)
	if err != nil || st.Running || st.Last.PID != 4242 {
		t.Fatalf("%+v %v", st, err)
	}
}

// TestShareRuntimeKeepsATeamDirectorysRuntimeOut: runtimes of a team in a
// store share the lock of their local directory, and write no record in
// it; a team directory's runtime is refused there while they hold it, and
// refuses them while it does, each in one line that says why.
func TestShareRuntimeKeepsATeamDirectorysRuntimeOut(t *testing.T) {
	dir := t.TempDir()
	first, err := ShareRuntime(dir)
	if err != nil {
		t.Fatal(err)
	}
	second, err := ShareRuntime(dir)
	if err != nil {
		t.Fatalf("a second runtime of a team in a store: %v", err)
	}
	if b, err := os.ReadFile(RuntimeLockPath(dir)); err != nil || len(b) != 0 {
		t.Fatalf("runtime.lock while shared: %q %v", b, err)
	}
	if _, err := LockRuntime(dir); err == nil || !strings.Contains(err.Error(), "runtimes of a team in a store keep this machine's files in "+dir) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("a team directory's runtime while shared: %v", err)
	}
	first()
	second()
	unlock, err := LockRuntime(dir)
	if err != nil {
		t.Fatalf("once they stopped: %v", err)
	}
	defer unlock()
	want := fmt.Sprintf("a huddle runtime runs the team directory %s (pid %d)", dir, os.Getpid())
	if _, err := ShareRuntime(dir); err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("a runtime of a team in a store in a team directory that runs: %v, want %q…", err, want)
	}
}
