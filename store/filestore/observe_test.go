package filestore_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"huddle/inbox"
	"huddle/internal/testkit"
	"huddle/protocol"
	"huddle/store"
	"huddle/teamdir"
)

const within = 15 * time.Second

// TestWatchCommitsFollowsTheConsumer: WatchCommits tells where the
// consumer stands before it returns (0 with no journal), then each commit
// as the consumer makes it, up to the offset past the last message.
func TestWatchCommitsFollowsTheConsumer(t *testing.T) {
	dir, s := openTemp(t)
	ctx := t.Context()
	var mu sync.Mutex
	var got []int64
	sub, err := s.WatchCommits(ctx, "alice", func(c int64) { mu.Lock(); got = append(got, c); mu.Unlock() })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	mu.Lock()
	if len(got) != 1 || got[0] != 0 {
		t.Fatalf("before any commit WatchCommits told %v, want [0] before it returned", got)
	}
	mu.Unlock()
	for i := range 3 {
		m := protocol.NewMessage(protocol.TypeMessage, protocol.Lead, "alice")
		m.Content = fmt.Sprint("m", i)
		if err := s.Append(ctx, "alice", &m); err != nil {
			t.Fatal(err)
		}
	}
	c, err := inbox.NewConsumer(dir, "alice", func(context.Context, inbox.Delivery) error { return nil }, inbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	end, err := inbox.Committed(dir, "alice")
	if err != nil || end == 0 {
		t.Fatalf("committed after the drain: %d %v", end, err)
	}
	testkit.WaitFor(t, within, "the last commit told", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return got[len(got)-1] == end
	})
	mu.Lock()
	defer mu.Unlock()
	for i := 1; i < len(got); i++ {
		if got[i] <= got[i-1] {
			t.Fatalf("commits told %v: each must move forward", got)
		}
	}
	if _, err := s.WatchCommits(ctx, "../alice", func(int64) {}); err == nil {
		t.Fatal("an invalid name was watched")
	}
}

// counter counts the calls of a watch.
type counter struct{ n atomic.Int64 }

func (c *counter) call() { c.n.Add(1) }

// waitMore waits for a call after the first n.
func (c *counter) waitMore(t *testing.T, what string, n int64) int64 {
	t.Helper()
	testkit.WaitFor(t, within, what, func() bool { return c.n.Load() > n })
	return c.n.Load()
}

// TestWatchConfigAndRuntime: WatchConfig tells an edit of team.json and
// WatchRuntime one of runtime.lock (a runtime starting, then stopping),
// each once as it starts; an edit of another file tells neither.
func TestWatchConfigAndRuntime(t *testing.T) {
	dir, s := openTemp(t)
	ctx := t.Context()
	var config, runtime counter
	sub, err := s.WatchConfig(ctx, store.ConfigTeam, config.call)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	rsub, err := s.WatchRuntime(ctx, runtime.call)
	if err != nil {
		t.Fatal(err)
	}
	defer rsub.Stop()
	nc := config.waitMore(t, "the config watch's first call", 0)
	nr := runtime.waitMore(t, "the runtime watch's first call", 0)
	if err := s.PutConfig(ctx, store.ConfigTeam, []byte(`{"name":"t"}`)); err != nil {
		t.Fatal(err)
	}
	nc = config.waitMore(t, "team.json put", nc)
	if err := os.WriteFile(teamdir.ConfigPath(dir), []byte(`{"name":"u"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	config.waitMore(t, "team.json edited", nc)
	unlock, err := teamdir.LockRuntime(dir)
	if err != nil {
		t.Fatal(err)
	}
	nr = runtime.waitMore(t, "runtime.lock taken", nr)
	unlock()
	runtime.waitMore(t, "runtime.lock released", nr)
	if _, err := s.WatchConfig(ctx, "../team.json", func() {}); err == nil {
		t.Fatal("a name no configuration file has was watched")
	}
}

// TestHistoryReadsTheNewestArchived: History reads the newest archived
// records alone, by when they were archived, newest resolution first, and
// names one that does not read.
func TestHistoryReadsTheNewestArchived(t *testing.T) {
	dir, s := openTemp(t)
	ctx := t.Context()
	base := time.Now().Add(-time.Hour).UTC()
	var ids []string
	for i := range 6 {
		r := protocol.NewRequest(protocol.KindPlan, fmt.Sprintf("pl-%012d", i), "alice", protocol.Lead, base.Add(time.Duration(i)*time.Minute), time.Hour)
		r.Plan = "p"
		if err := s.CreateRequest(ctx, &r); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Decide(ctx, r.ID, store.Decision{Event: protocol.EventApprove, By: "lead", At: base.Add(time.Duration(i)*time.Minute + time.Second)}); err != nil {
			t.Fatal(err)
		}
		if i < 5 {
			if err := s.Archive(ctx, r.ID); err != nil {
				t.Fatal(err)
			}
			// Archived in order, a second apart, whatever the clock's grain.
			p, _ := teamdir.DoneRequestPath(dir, r.ID)
			at := base.Add(time.Duration(i) * time.Second)
			if err := os.Chtimes(p, at, at); err != nil {
				t.Fatal(err)
			}
		}
		ids = append(ids, r.ID)
	}
	hist, bad, err := s.History(ctx, 3)
	if err != nil || len(bad) != 0 {
		t.Fatalf("history: %v %v", err, bad)
	}
	if len(hist) != 3 || hist[0].ID != ids[4] || hist[1].ID != ids[3] || hist[2].ID != ids[2] || hist[0].Status != protocol.RequestApproved {
		t.Fatalf("history of 3: %+v", hist)
	}
	p, _ := teamdir.DoneRequestPath(dir, ids[4])
	if err := os.WriteFile(p, []byte("{garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	hist, bad, err = s.History(ctx, 0)
	if err != nil || len(hist) != 4 || len(bad) != 1 || bad[0].Name != ids[4] {
		t.Fatalf("history with a corrupt record: %d records, bad %v, %v", len(hist), bad, err)
	}
}
