package inbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/protocol"
	"huddle/teamdir"
)

// TestIdleWatcherDrainsNothing: with the default options a watcher whose
// inboxes do not change runs no drain after the first one of each
// follower: no periodic rescan, no file opened.
func TestIdleWatcherDrainsNothing(t *testing.T) {
	team := t.TempDir()
	members := []string{protocol.Lead, "alice", "bob"}
	for _, m := range members {
		if err := Append(team, m, msg("carol", m, "before the watcher")); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := NewWatcher(ctx, team, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got collect
	for _, m := range members {
		if err := w.Consume(m, got.handle); err != nil {
			t.Fatal(err)
		}
	}
	var observed atomic.Int64
	if _, err := w.Observe("alice", true, func(Delivery) { observed.Add(1) }); err != nil {
		t.Fatal(err)
	}
	followers := int64(len(members) + 1)
	testkit.WaitFor(t, 10*time.Second, "the first drains", func() bool {
		return got.len() == len(members) && observed.Load() == 1 && w.drains.Load() == followers
	})
	// Asserting that nothing happens needs a window. It outlasts the old
	// default rescan period (1 s), so a periodic rescan would show here,
	// and is short enough not to slow the suite much.
	window := time.NewTimer(1200 * time.Millisecond)
	<-window.C
	if n := w.drains.Load(); n != followers {
		t.Fatalf("%d drains while idle (%d followers drained once each at the start)", n-followers, followers)
	}
	cancel()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestOverflowDrainsEverything: events lost to a real inotify queue
// overflow cost no message without any periodic rescan: fsnotify reports
// the overflow and the watcher drains every inbox.
func TestOverflowDrainsEverything(t *testing.T) {
	limit := maxQueuedEvents(t)
	team := t.TempDir()
	w, got, cancel := watchBob(t, team)
	defer cancel()
	testkit.WaitFor(t, 10*time.Second, "the first drain", func() bool { return w.drains.Load() == 1 })

	// Holding the watcher's lock stalls its loop at the first kick, so the
	// events pile up in the kernel: fsnotify's reader holds one buffer of
	// them (64 KiB, about 2,000) and the kernel queue the next `limit`.
	// Writing to two files in turn keeps the kernel from merging them.
	w.mu.Lock()
	var files [2]*os.File
	for i := range files {
		f, err := os.OpenFile(filepath.Join(teamdir.InboxDirPath(team), fmt.Sprintf("zz%d.jsonl", i)), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			w.mu.Unlock()
			t.Fatal(err)
		}
		defer f.Close()
		files[i] = f
	}
	for i := range limit + 8192 {
		if _, err := files[i%2].Write([]byte{'\n'}); err != nil {
			w.mu.Unlock()
			t.Fatal(err)
		}
	}
	// The queue has overflowed: this append's event is lost.
	err := Append(team, "bob", msg("alice", "bob", "after the overflow"))
	w.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 30*time.Second, "the message written after the overflow", func() bool { return got.len() == 1 })
	w.mu.Lock()
	rescans := w.rescans
	w.mu.Unlock()
	if rescans == 0 {
		t.Fatal("delivered, but no overflow was reported: the test did not overflow the queue")
	}
	cancel()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// maxQueuedEvents is the kernel's inotify queue length.
func maxQueuedEvents(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/fs/inotify/max_queued_events")
	if err != nil {
		t.Skipf("no inotify queue length: %v", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n > 1<<20 {
		t.Skipf("inotify queue length %q: too long to overflow in a test", b)
	}
	return n
}

// TestInboxDirRecreatedIsWatchedAgain: the inbox directory removed and made
// again takes its watch with it; the watcher watches the new one and drains
// every inbox, so a message written there is delivered without a rescan.
func TestInboxDirRecreatedIsWatchedAgain(t *testing.T) {
	team := t.TempDir()
	w, got, cancel := watchBob(t, team)
	defer cancel()
	if err := Append(team, "bob", msg("alice", "bob", "first")); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the first message", func() bool { return got.len() == 1 })
	if err := os.RemoveAll(teamdir.InboxDirPath(team)); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(teamdir.InboxDirPath(team), 0o700); err != nil {
		t.Fatal(err)
	}
	// Watched again: the watcher drains everything once then.
	testkit.WaitFor(t, 10*time.Second, "the new directory watched", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.rescans > 0
	})
	// Only an event on the new directory can deliver this one.
	if err := Append(team, "bob", msg("alice", "bob", "into the new directory")); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the message in the new directory", func() bool { return got.len() == 2 })
	if c := got.contents(); c[1] != "into the new directory" {
		t.Fatalf("got %v", c)
	}
	cancel()
	w.Close() // the old journal's directory is gone: its clean stop may fail
}

// TestInboxReplacedByRenameIsReadAgain: a consumer keeps its inbox open
// between wake-ups; a file renamed over the inbox is a new file, read from
// its start.
func TestInboxReplacedByRenameIsReadAgain(t *testing.T) {
	team := t.TempDir()
	w, got, cancel := watchBob(t, team)
	defer cancel()
	if err := Append(team, "bob", msg("alice", "bob", "first, a long line so the new file is shorter")); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the first message", func() bool { return got.len() == 1 })
	b, err := protocol.Encode(msg("alice", "bob", "replaced"))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := teamdir.InboxPath(team, "bob")
	if err := os.WriteFile(p+".new", append(b, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p+".new", p); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the message of the new file", func() bool { return got.len() == 2 })
	if err := Append(team, "bob", msg("alice", "bob", "after")); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the message after", func() bool { return got.len() == 3 })
	if c := fmt.Sprint(got.contents()); c != "[first, a long line so the new file is shorter replaced after]" {
		t.Fatalf("got %s", c)
	}
	cancel()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestAppenderWritesToTheFileAtItsPath: an Appender keeps its inbox open,
// yet a file unlinked or renamed over gets no more lines: they go to the
// file at the path.
func TestAppenderWritesToTheFileAtItsPath(t *testing.T) {
	team := t.TempDir()
	a, err := NewAppender(team, "bob")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	p, _ := teamdir.InboxPath(team, "bob")
	contents := func() string {
		var out []string
		for _, d := range readInbox(t, p) {
			out = append(out, d.Content)
		}
		return strings.Join(out, " ")
	}
	if err := a.Append(msg("alice", "bob", "one")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := a.Append(msg("alice", "bob", "two")); err != nil {
		t.Fatal(err)
	}
	if c := contents(); c != "two" {
		t.Fatalf("after an unlink the inbox holds %q, want %q", c, "two")
	}
	if err := os.WriteFile(p+".new", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p+".new", p); err != nil {
		t.Fatal(err)
	}
	if err := a.AppendBatch([]*protocol.Message{msg("alice", "bob", "three"), msg("alice", "", "four")}); err != nil {
		t.Fatal(err)
	}
	if c := contents(); c != "three four" {
		t.Fatalf("after a rename over it the inbox holds %q, want %q", c, "three four")
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Append(msg("alice", "bob", "closed")); err == nil {
		t.Fatal("an append after Close succeeded")
	}
}

// TestAppendBatchIsAllOrNothing: a batch with one refused message writes
// nothing; a good batch arrives whole and in order.
func TestAppendBatchIsAllOrNothing(t *testing.T) {
	team := t.TempDir()
	p, _ := teamdir.InboxPath(team, "bob")
	bad := []*protocol.Message{msg("alice", "bob", "fine"), msg("alice", "carol", "not bob's")}
	if err := AppendBatch(team, "bob", bad); err == nil {
		t.Fatal("a batch with a message for someone else was accepted")
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatalf("a refused batch touched the inbox: %v", err)
	}
	var batch []*protocol.Message
	for i := range 100 {
		batch = append(batch, msg("alice", "bob", fmt.Sprint(i)))
	}
	if err := AppendBatch(team, "bob", batch); err != nil {
		t.Fatal(err)
	}
	var got collect
	c, err := NewConsumer(team, "bob", got.handle, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	contents := got.contents()
	if len(contents) != 100 {
		t.Fatalf("%d delivered, want 100", len(contents))
	}
	for i, s := range contents {
		if s != fmt.Sprint(i) {
			t.Fatalf("delivery %d is %q", i, s)
		}
	}
}

// readInbox decodes every line of the inbox file at p.
func readInbox(t *testing.T, p string) []protocol.Message {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var out []protocol.Message
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l == "" {
			continue
		}
		m, err := protocol.Decode([]byte(l), protocol.Fallback{})
		if err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// watchBob starts a watcher with no periodic rescan on team and a consumer
// of bob's inbox that collects what it is handed. cancel stops the
// watcher's context; the test closes the watcher.
func watchBob(t *testing.T, team string) (*Watcher, *collect, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := NewWatcher(ctx, team, Options{})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	got := &collect{}
	if err := w.Consume("bob", got.handle); err != nil {
		cancel()
		t.Fatal(err)
	}
	return w, got, cancel
}

// TestInPlaceRewritesAreReadOnWriteEvents: a woken consumer reads without
// a stat of the file (its read says where the file ends); the rewrites in
// place that only a stat or the anchor tell apart from "nothing new" are
// still read, each from its first line, with offsets that keep growing.
// A foreign reader empties the inbox and writes a file exactly as long as
// the one consumed (the read at the offset finds nothing), then one
// shorter (the offset is past the end), then one longer (the read at the
// offset finds bytes of the new content, refused by the anchor).
func TestInPlaceRewritesAreReadOnWriteEvents(t *testing.T) {
	team := t.TempDir()
	w, got, cancel := watchBob(t, team)
	defer cancel()
	p, _ := teamdir.InboxPath(team, "bob")
	line := func(content string) []byte {
		m := msg("alice", "bob", content)
		m.ID = "m-" + strings.Repeat("0", 26-len(content)) + strings.ToUpper(content)
		b, err := protocol.Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		return append(b, '\n')
	}
	if err := os.WriteFile(p, line("AAAA"), 0o600); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the first line", func() bool { return got.len() == 1 })
	rewrite := func(b []byte) {
		t.Helper()
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0) // truncate, then write: two events, neither a create
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(b); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	same := line("BBBB")
	if len(same) != len(line("AAAA")) {
		t.Fatal("the rewrite must be exactly as long as the first file")
	}
	rewrite(same)
	testkit.WaitFor(t, 10*time.Second, "the line of the same-length rewrite", func() bool { return got.len() == 2 })
	rewrite(line("C"))
	testkit.WaitFor(t, 10*time.Second, "the line of the shorter rewrite", func() bool { return got.len() == 3 })
	rewrite(append(line("DDDD"), line("EEEE")...))
	testkit.WaitFor(t, 10*time.Second, "the lines of the longer rewrite", func() bool { return got.len() == 5 })
	if c := fmt.Sprint(got.contents()); c != "[AAAA BBBB C DDDD EEEE]" {
		t.Fatalf("got %s", c)
	}
	for i := 1; i < got.len(); i++ {
		if got.ds[i].Offset <= got.ds[i-1].Offset {
			t.Fatalf("offsets go back at %d: %d after %d", i, got.ds[i].Offset, got.ds[i-1].Offset)
		}
	}
	if dl := deadLetters(t, team); len(dl) > 0 {
		t.Fatalf("%d dead letters (a read off a line boundary), first: %+v", len(dl), dl[0])
	}
	cancel()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
