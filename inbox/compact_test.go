package inbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/protocol"
	"huddle/teamdir"
)

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// TestCompactionKeepsFilesBoundedAndObserverFollows: a watching consumer and a
// watching read-only observer while 5,000 messages flow through an inbox that
// compacts every 4 KiB.
func TestCompactionKeepsFilesBoundedAndObserverFollows(t *testing.T) {
	const n, compactAt = 5000, 4 << 10
	team := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := NewWatcher(ctx, team, Options{CompactAt: compactAt})
	if err != nil {
		t.Fatal(err)
	}
	var consumed, observed collect
	if err := w.Consume("bob", consumed.handle); err != nil {
		t.Fatal(err)
	}
	obs, err := w.Observe("bob", true, func(d Delivery) { observed.handle(context.TODO(), d) })
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(teamdir.InboxDirPath(team), "bob.jsonl")
	// The file's size is a matter of the schedule; what is not: once the
	// consumer has caught up with a quiet inbox of at least CompactAt, the
	// file is compacted. So each burst starts on a file under CompactAt,
	// and the file never holds more than that plus one burst.
	const burst = 50
	var maxSize, maxBurst, burstBytes int64
	for i := range n {
		m := msg("alice", "bob", fmt.Sprint(i))
		if err := Append(team, "bob", m); err != nil {
			t.Fatal(err)
		}
		line, err := protocol.Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		burstBytes += int64(len(line)) + 1
		if i%burst == burst-1 || i == n-1 {
			maxSize, maxBurst, burstBytes = max(maxSize, fileSize(t, path)), max(maxBurst, burstBytes), 0
			// The observer is waited for too: one that lags by more than the
			// kept generations misses lines by design (Gaps counts them), and
			// how far it lags is the scheduler's to decide.
			testkit.WaitFor(t, time.Minute, "the consumer to catch up and compact, and the observer to follow", func() bool {
				return consumed.len() >= i+1 && observed.len() >= i+1 && fileSize(t, path) < compactAt
			})
		}
	}
	if maxBurst < compactAt {
		t.Fatalf("a burst of %d bytes never reaches CompactAt %d: the test compacts nothing", maxBurst, compactAt)
	}
	testkit.WaitFor(t, time.Minute, "consumer and observer to see every message", func() bool {
		return consumed.len() >= n && observed.len() >= n
	})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*collect{"consumer": &consumed, "observer": &observed} {
		got := c.contents()
		if len(got) != n {
			t.Fatalf("%s saw %d messages, want %d", name, len(got), n)
		}
		for i, s := range got {
			if s != fmt.Sprint(i) {
				t.Fatalf("%s: message %d is %q: missed or repeated", name, i, s)
			}
		}
		for i := 1; i < len(c.ds); i++ {
			if c.ds[i].Offset <= c.ds[i-1].Offset {
				t.Fatalf("%s: offsets go back at %d: %d after %d", name, i, c.ds[i].Offset, c.ds[i-1].Offset)
			}
		}
	}
	if obs.Gaps() != 0 {
		t.Errorf("observer reports a gap of %d bytes", obs.Gaps())
	}
	base, _ := readBase(journalPaths{path: cursorPath(team, "bob")})
	if base == 0 {
		t.Fatal("the inbox was never compacted")
	}
	// Total traffic is about 150× the threshold; the file stays within the
	// threshold plus one burst, and each compaction keeps at most a few
	// generations of at most that size.
	if bound := compactAt + maxBurst; maxSize > bound {
		t.Errorf("inbox grew to %d bytes with compaction at %d and bursts of at most %d", maxSize, compactAt, maxBurst)
	}
	if prev, bound := fileSize(t, prevPath(team, "bob")), prevGenerations*(compactAt+maxBurst)+64; prev > bound {
		t.Errorf("previous generations hold %d bytes, want at most %d", prev, bound)
	}
}

// TestObserverReadsAcrossSeveralCompactions drives the consumer and a lagging
// observer by hand: the observer catches up over two compactions without a
// miss, and one that lagged past every kept generation reports the gap.
func TestObserverReadsAcrossSeveralCompactions(t *testing.T) {
	team := t.TempDir()
	var consumed, observed collect
	c, err := NewConsumer(team, "bob", consumed.handle, Options{CompactAt: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	o, err := NewObserver(team, "bob", true, func(d Delivery) { observed.handle(context.TODO(), d) })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	next := 0
	round := func(k int) {
		for range k {
			if err := Append(team, "bob", msg("alice", "bob", fmt.Sprint(next))); err != nil {
				t.Fatal(err)
			}
			next++
		}
		if err := c.Drain(ctx); err != nil {
			t.Fatal(err)
		}
		if sz := fileSize(t, filepath.Join(teamdir.InboxDirPath(team), "bob.jsonl")); sz != 0 {
			t.Fatalf("fully consumed inbox not compacted: %d bytes", sz)
		}
	}
	round(3)
	round(4)
	if err := o.Drain(); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(observed.contents()) != "[0 1 2 3 4 5 6]" || o.Gaps() != 0 {
		t.Fatalf("observer after two compactions: %v, gaps %d", observed.contents(), o.Gaps())
	}
	// A new observer from the end sees only what comes next.
	var tail collect
	o2, err := NewObserver(team, "bob", false, func(d Delivery) { tail.handle(context.TODO(), d) })
	if err != nil {
		t.Fatal(err)
	}
	round(2)
	if err := o2.Drain(); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(tail.contents()) != "[7 8]" {
		t.Fatalf("tail observer: %v", tail.contents())
	}
	// Lag far behind: with CompactAt 1 the kept window is a few bytes, so the
	// observer must say what it could not read instead of pretending.
	for range 50 {
		round(20)
	}
	if err := o.Drain(); err != nil {
		t.Fatal(err)
	}
	if o.Gaps() == 0 {
		t.Fatal("an observer that lagged past the kept generations reports no gap")
	}
	got := observed.contents()
	if got[len(got)-1] != fmt.Sprint(next-1) {
		t.Fatalf("observer did not reach the end: last %q, want %d", got[len(got)-1], next-1)
	}
}

func TestWatcherStopsEveryGoroutine(t *testing.T) {
	before := runtime.NumGoroutine()
	team := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := NewWatcher(ctx, team, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got collect
	var observed atomic.Int64
	sent := 0
	for _, m := range []string{"lead", "alice", "bob"} {
		if err := w.Consume(m, got.handle); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Observe(m, true, func(Delivery) { observed.Add(1) }); err != nil {
			t.Fatal(err)
		}
		if err := Append(team, m, msg(protocol.Lead, m, "hi")); err != nil {
			if m != protocol.Lead {
				t.Fatal(err)
			}
		} else {
			sent++
		}
	}
	if err := Append(team, protocol.Lead, msg("alice", protocol.Lead, "hi")); err != nil {
		t.Fatal(err)
	}
	sent++
	// Every line is consumed (and so committed) before the stop: the check
	// after the restart below counts on bob's line being behind the cursor.
	testkit.WaitFor(t, 10*time.Second, fmt.Sprintf("%d deliveries", sent), func() bool { return got.len() == sent })
	cancel()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, fmt.Sprintf("goroutines back to %d", before), func() bool {
		return runtime.NumGoroutine() <= before
	})
	// A clean stop is recorded: a restarted consumer marks nothing as a
	// redelivery.
	if err := Append(team, "bob", msg("alice", "bob", "after restart")); err != nil {
		t.Fatal(err)
	}
	var again collect
	c, err := NewConsumer(team, "bob", again.handle, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if again.len() != 1 || again.ds[0].Redelivery || again.ds[0].Msg.Content != "after restart" {
		t.Fatalf("after a clean stop: %+v", again.ds)
	}
}

// TestCompactionThatBackedOffCopiesOnlyWhatIsNew: a writer that gets in
// before every compaction takes its lock, as one that appends right after
// each delivery does, makes the compaction back off and try again. Each
// try copies only the lines consumed since the last one; the previous
// generation finally written holds every consumed line once, in order, and
// no temp file is left.
func TestCompactionThatBackedOffCopiesOnlyWhatIsNew(t *testing.T) {
	team, c, consumed := compactingConsumer(t)
	next := 0
	send := func() {
		if err := Append(team, "bob", msg("alice", "bob", fmt.Sprint(next))); err != nil {
			t.Fatal(err)
		}
		next++
	}
	for range 3 {
		send()
	}
	// Five writers in first: three in the first drain (each of its passes
	// backs off), two in the second.
	const cutIn = 5
	tries := 0
	stepHook = func(step string) {
		if step == "prev-written" {
			if tries++; tries <= cutIn {
				send()
			}
		}
	}
	defer func() { stepHook = nil }()
	inboxPath := filepath.Join(teamdir.InboxDirPath(team), "bob.jsonl")
	ctx := context.Background()
	if err := c.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if sz := fileSize(t, inboxPath); sz == 0 {
		t.Fatal("the inbox was compacted although a writer got in before each try")
	}
	if n := len(temps(t, team)); n != 1 {
		t.Fatalf("after a drain that backed off, %d temp files, want the one kept for the next try", n)
	}
	if err := c.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if sz := fileSize(t, inboxPath); sz != 0 {
		t.Fatalf("fully consumed inbox not compacted: %d bytes", sz)
	}
	if tries != cutIn+1 {
		t.Fatalf("%d tries, want %d", tries, cutIn+1)
	}
	prev, err := os.ReadFile(prevPath(team, "bob"))
	if err != nil {
		t.Fatal(err)
	}
	content := prev[bytes.IndexByte(prev, '\n')+1:]
	if c.prevCopied != int64(len(content)) {
		t.Fatalf("copied %d bytes into the previous generation for %d bytes of it: the tries copied the inbox again", c.prevCopied, len(content))
	}
	want := "[0 1 2 3 4 5 6 7]"
	if got, gaps := observeAll(t, team); fmt.Sprint(got) != want || gaps != 0 {
		t.Fatalf("previous generation holds %v (gaps %d), want %s", got, gaps, want)
	}
	if got := fmt.Sprint(consumed.contents()); got != want {
		t.Fatalf("consumed %s, want %s", got, want)
	}
	if n := len(temps(t, team)); n != 0 {
		t.Fatalf("%d temp files left after the compaction", n)
	}
}

// TestCompactionKeptForAReplacedInboxIsDropped: a compaction kept for its
// next try belongs to one inbox file. When the file is replaced, the next
// compaction starts again from the new file, and the kept one's temp file
// goes; so does it when the consumer closes.
func TestCompactionKeptForAReplacedInboxIsDropped(t *testing.T) {
	team, c, _ := compactingConsumer(t)
	for i := range 3 {
		if err := Append(team, "bob", msg("alice", "bob", fmt.Sprint("old", i))); err != nil {
			t.Fatal(err)
		}
	}
	cutIn := true
	stepHook = func(step string) {
		if step == "prev-written" && cutIn {
			if err := Append(team, "bob", msg("alice", "bob", "late")); err != nil {
				t.Error(err)
			}
		}
	}
	defer func() { stepHook = nil }()
	ctx := context.Background()
	if err := c.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	kept := temps(t, team)
	if len(kept) != 1 {
		t.Fatalf("after a drain that backed off, %d temp files, want 1", len(kept))
	}
	cutIn = false
	// Another process replaces the inbox with a file of its own.
	inboxPath := filepath.Join(teamdir.InboxDirPath(team), "bob.jsonl")
	other := filepath.Join(t.TempDir(), "other.jsonl")
	if err := os.WriteFile(other, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// More bytes than the kept try covers, so only its file's identity
	// tells it is of no use.
	var want []string
	for i := range 10 {
		want = append(want, fmt.Sprint("new", i))
		line, err := protocol.Encode(msg("carol", "bob", want[i]))
		if err != nil {
			t.Fatal(err)
		}
		if err := teamdir.AppendLine(other, append(line, '\n')); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Rename(other, inboxPath); err != nil {
		t.Fatal(err)
	}
	if err := c.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if sz := fileSize(t, inboxPath); sz != 0 {
		t.Fatalf("the replaced inbox, consumed, was not compacted: %d bytes", sz)
	}
	if left := temps(t, team); len(left) != 0 {
		t.Fatalf("temp files left: %v (the one kept for the old file was %v)", left, kept)
	}
	if got, _ := observeAll(t, team); len(got) < len(want) || !slices.Equal(got[len(got)-len(want):], want) {
		t.Fatalf("the previous generation ends %v, want it to end with the new file's %v", got, want)
	}

	// A kept try goes with the consumer that kept it.
	cutIn = true
	for range 2 {
		if err := Append(team, "bob", msg("alice", "bob", "more")); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(temps(t, team)); n != 1 {
		t.Fatalf("after a drain that backed off, %d temp files, want 1", n)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if left := temps(t, team); len(left) != 0 {
		t.Fatalf("temp files left after Close: %v", left)
	}
}

// compactingConsumer is a consumer of bob's inbox in a new team directory
// that compacts whenever the inbox is fully consumed; Close is the test's
// cleanup.
func compactingConsumer(t *testing.T) (string, *Consumer, *collect) {
	t.Helper()
	team := t.TempDir()
	consumed := new(collect)
	c, err := NewConsumer(team, "bob", consumed.handle, Options{CompactAt: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return team, c, consumed
}

// observeAll reads bob's inbox from its oldest kept line with a new
// observer: the contents, and the gaps it reported.
func observeAll(t *testing.T, team string) ([]string, int64) {
	t.Helper()
	var observed collect
	o, err := NewObserver(team, "bob", true, func(d Delivery) { observed.handle(context.TODO(), d) })
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Drain(); err != nil {
		t.Fatal(err)
	}
	return observed.contents(), o.Gaps()
}

// temps lists the temp files in the team's inbox directory.
func temps(t *testing.T, team string) []string {
	t.Helper()
	ents, err := os.ReadDir(teamdir.InboxDirPath(team))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), teamdir.TempPrefix) {
			out = append(out, e.Name())
		}
	}
	return out
}
