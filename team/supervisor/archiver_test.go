package supervisor

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/internal/testkit/dirrecords"
	"huddle/internal/testkit/files"
	"huddle/internal/testkit/teamkit"
	"huddle/store"
)

// gatedArchive is a store whose Archive waits for open to be closed, counts
// its calls and fails the first failures of them.
type gatedArchive struct {
	store.Store
	open     chan struct{}
	calls    atomic.Int64
	failures int64
}

func (g *gatedArchive) Archive(ctx context.Context, ids ...string) error {
	<-g.open
	if g.calls.Add(1) <= g.failures {
		return errors.New("no space left on device (injected)")
	}
	return g.Store.Archive(ctx, ids...)
}

func runGated(t *testing.T, dir string, g *gatedArchive) *events {
	t.Helper()
	ev := &events{}
	teamkit.Run(t, func(ctx context.Context) error {
		return Run(ctx, g, dir, Options{Tick: 20 * time.Millisecond, OnEvent: ev.add})
	})
	return ev
}

// A start over a history no one archived does not wait for it: the team
// starts while every Archive call is held, then the history moves in
// batches, not a call a record, and every record still reads.
func TestHistoryNeverDelaysTheStart(t *testing.T) {
	const n = 2000
	dir := historyTeam(t, n)
	g := &gatedArchive{Store: files.Open(t, dir), open: make(chan struct{})}
	var once sync.Once
	release := func() { once.Do(func() { close(g.open) }) }
	ev := runGated(t, dir, g)
	t.Cleanup(release) // before Run's own cleanup stops it
	testkit.WaitFor(t, 30*time.Second, "team_started while archiving is held", func() bool {
		return ev.has(func(e Event) bool { return e["event"] == "team_started" })
	})
	if live := liveRecords(t, dir); live != n {
		t.Fatalf("%d records live at team_started with archiving held, want all %d", live, n)
	}
	release()
	testkit.WaitFor(t, time.Minute, "every final record archived", func() bool { return liveRecords(t, dir) == 0 })
	// How full each batch is depends on when the archiver looks (it takes
	// what is queued); a call a record would be n.
	if calls, most := g.calls.Load(), int64(n/20); calls > most {
		t.Errorf("%d Archive calls for %d records, want batches: at most %d", calls, n, most)
	}
	all, err := dirrecords.ListRequests(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != n {
		t.Errorf("%d records read after archiving, want %d", len(all), n)
	}
}

// An archive that keeps failing is said once for the whole run of
// failures, retried with backoff, and said to work again when it does.
func TestArchiveFailureSaidOnceAndRetried(t *testing.T) {
	const n = 50
	dir := historyTeam(t, n)
	g := &gatedArchive{Store: files.Open(t, dir), open: make(chan struct{}), failures: 3}
	close(g.open)
	ev := runGated(t, dir, g)
	testkit.WaitFor(t, time.Minute, "every final record archived after the failures", func() bool { return liveRecords(t, dir) == 0 })
	testkit.WaitFor(t, 10*time.Second, "the archive said to work again", func() bool {
		return ev.has(func(e Event) bool {
			return e["event"] == "warning" && e["warning"] == "archiving final requests works again"
		})
	})
	ev.mu.Lock()
	defer ev.mu.Unlock()
	said := 0
	for _, e := range ev.es {
		if s, _ := e["error"].(string); e["event"] == "error" && s != "" {
			said++
			t.Logf("said: %s", s)
		}
	}
	if said != 1 {
		t.Errorf("the failing archive was said %d times, want once", said)
	}
	if calls := g.calls.Load(); calls < 4 {
		t.Errorf("%d Archive calls, want the 3 failed ones retried", calls)
	}
}
