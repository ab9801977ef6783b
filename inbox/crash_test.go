package inbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/protocol"
	"huddle/teamdir"
)

// child starts the test binary in role with the extra environment, and a
// READY file a consumer creates once it stops cleanly on SIGTERM.
func child(t *testing.T, role string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	ready := filepath.Join(t.TempDir(), "ready")
	cmd.Env = append(append(os.Environ(), roleEnv+"="+role, "READY="+ready), env...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// runChild runs the test binary in role to its end.
func runChild(t *testing.T, role string, env ...string) {
	t.Helper()
	if err := child(t, role, env...).Wait(); err != nil {
		t.Fatalf("%s: %v", role, err)
	}
}

// stopConsumer asks a consumer process for a clean stop, once it takes
// SIGTERM as one, and waits for it.
func stopConsumer(t *testing.T, c *exec.Cmd) {
	t.Helper()
	for _, kv := range c.Env {
		if p, ok := strings.CutPrefix(kv, "READY="); ok {
			testkit.WaitFor(t, time.Minute, "the consumer to take SIGTERM", func() bool { _, err := os.Stat(p); return err == nil })
		}
	}
	if err := c.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(); err != nil {
		t.Fatalf("consumer: %v", err)
	}
}

// eventually polls cond until it holds (true) or the deadline passes
// (false); the caller says what a miss means.
func eventually(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// uniqueContents counts the distinct contents a consumer process logged.
func uniqueContents(t *testing.T, logPath string) int {
	t.Helper()
	seen := map[string]bool{}
	for _, e := range readLog(t, logPath) {
		seen[e.content] = true
	}
	return len(seen)
}

// checkEachOnce fails unless every content in want was handled, nothing
// else was, and a second handling of a message is marked as a redelivery.
// It returns how many were lost.
func checkEachOnce(t *testing.T, logPath string, want map[string]bool) (lost int) {
	t.Helper()
	count := map[string]int{}
	for _, e := range readLog(t, logPath) {
		if !want[e.content] {
			t.Errorf("handled a message never sent (a read off a line boundary?): %q", e.content)
			continue
		}
		count[e.content]++
		if count[e.content] > 1 && !e.redelivery {
			t.Errorf("%q handled %d times without the redelivery mark", e.content, count[e.content])
		}
	}
	for c := range want {
		if count[c] == 0 {
			lost++
		}
	}
	return lost
}

func writerContents(writer string, n int) map[string]bool {
	out := map[string]bool{}
	for i := range n {
		out[fmt.Sprintf("%s:%d", writer, i)] = true
	}
	return out
}

// TestCrashInsideCompactionLosesNothing kills a consumer process at each
// step of a compaction, appends 3 or 2,500 messages from another process
// (fewer bytes than were compacted, and many more), and starts a consumer in
// a fresh process: every message is handled, once, from a line boundary
// (docs/ARCHITECTURE.md, "Delivery").
func TestCrashInsideCompactionLosesNothing(t *testing.T) {
	const before = 500 // 500 lines are past the 64 KiB CompactAt of runConsumer
	for _, tc := range []struct {
		step  string
		after int
	}{{"prev-written", 2500}, {"prev-renamed", 2500}, {"truncated", 3}, {"truncated", 2500}, {"rebased", 2500}} {
		step, after := tc.step, tc.after
		t.Run(fmt.Sprintf("%s,then%d", step, after), func(t *testing.T) {
			team := t.TempDir()
			logPath := filepath.Join(t.TempDir(), "handled.log")
			runChild(t, "writer", "DIR="+team, "WRITER=old", fmt.Sprint("N=", before))
			err := child(t, "consumer", "DIR="+team, "LOG="+logPath, "CRASH_AT="+step).Wait()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != crashExit {
				t.Fatalf("the consumer did not die inside its compaction at %q: %v", step, err)
			}
			runChild(t, "writer", "DIR="+team, "WRITER=new", fmt.Sprint("N=", after))
			want := writerContents("old", before)
			for c := range writerContents("new", after) {
				want[c] = true
			}
			c := child(t, "consumer", "DIR="+team, "LOG="+logPath)
			eventually(time.Minute, func() bool { return uniqueContents(t, logPath) >= len(want) || len(deadLetters(t, team)) > 0 })
			stopConsumer(t, c)
			if dl := deadLetters(t, team); len(dl) > 0 {
				t.Errorf("%d dead letters (a read off a line boundary), first: %+v", len(dl), dl[0])
			}
			if lost := checkEachOnce(t, logPath, want); lost > 0 {
				t.Fatalf("lost %d of %d messages appended after a crash at %q", lost, after, step)
			}
		})
	}
}

// TestForeignTruncationThenBurstLosesNothing: a foreign process drains the
// inbox the way learn-claude-code's bus does (reads it whole and truncates
// it, with and without the inbox's flock), then appends 60 lines, before
// huddle looks. Every line of the burst is delivered, once, whether the
// consumer stayed open or starts again from its journal.
func TestForeignTruncationThenBurstLosesNothing(t *testing.T) {
	// The burst holds more bytes than the consumed lines, so the file does
	// not look shrunk when huddle looks.
	const consumed, burst = 10, 60
	for _, lock := range []string{"0", "1"} {
		for _, reopen := range []bool{false, true} {
			t.Run(fmt.Sprintf("lock=%s,reopen=%v", lock, reopen), func(t *testing.T) {
				team := t.TempDir()
				for i := range consumed {
					if err := Append(team, protocol.Lead, msg("alice", protocol.Lead, fmt.Sprint("old", i))); err != nil {
						t.Fatal(err)
					}
				}
				var got collect
				c, err := NewConsumer(team, protocol.Lead, got.handle, Options{})
				if err != nil {
					t.Fatal(err)
				}
				ctx := context.Background()
				if err := c.Drain(ctx); err != nil {
					t.Fatal(err)
				}
				if reopen {
					if err := c.Close(); err != nil {
						t.Fatal(err)
					}
				}
				runChild(t, "foreign", "DIR="+team, "LOCK="+lock, "ROUND=0", fmt.Sprint("N=", burst))
				if reopen {
					if c, err = NewConsumer(team, protocol.Lead, got.handle, Options{}); err != nil {
						t.Fatal(err)
					}
				}
				defer c.Close()
				if err := c.Drain(ctx); err != nil {
					t.Fatal(err)
				}
				seen := map[string]int{}
				for _, s := range got.contents()[consumed:] {
					seen[s]++
				}
				lost := 0
				for i := range burst {
					switch n := seen[fmt.Sprint("burst0:", i)]; {
					case n == 0:
						lost++
					case n > 1:
						t.Errorf("burst0:%d delivered %d times", i, n)
					}
				}
				if dl := deadLetters(t, team); len(dl) > 0 {
					t.Errorf("%d dead letters (a read off a line boundary), first: %+v", len(dl), dl[0])
				}
				if lost > 0 || got.len() != consumed+burst {
					t.Fatalf("lost %d of %d lines after a foreign truncation; %d deliveries, want %d", lost, burst, got.len(), consumed+burst)
				}
				for i := 1; i < got.len(); i++ {
					if got.ds[i].Offset <= got.ds[i-1].Offset {
						t.Fatalf("offsets go back at %d: %d after %d", i, got.ds[i].Offset, got.ds[i-1].Offset)
					}
				}
			})
		}
	}
}

// TestForeignTruncationWhileConsuming: the same foreign drain and burst, 8
// rounds, while a consumer process follows the inbox live. Each round starts
// once huddle has handled everything before it, so the foreign drain takes
// only consumed lines; every line of every burst must reach huddle.
func TestForeignTruncationWhileConsuming(t *testing.T) {
	const rounds, burst = 8, 60
	team := t.TempDir()
	logPath := filepath.Join(t.TempDir(), "handled.log")
	if err := Append(team, protocol.Lead, msg("alice", protocol.Lead, "first")); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"first": true}
	c := child(t, "consumer", "DIR="+team, "LOG="+logPath)
	for r := range rounds {
		if !eventually(time.Minute, func() bool { return uniqueContents(t, logPath) >= len(want) }) {
			t.Errorf("round %d: the consumer never caught up", r)
			break
		}
		lock := fmt.Sprint(r % 2)
		runChild(t, "foreign", "DIR="+team, "LOCK="+lock, fmt.Sprint("ROUND=", r), fmt.Sprint("N=", burst))
		for i := range burst {
			want[fmt.Sprintf("burst%d:%d", r, i)] = true
		}
	}
	eventually(time.Minute, func() bool { return uniqueContents(t, logPath) >= len(want) || len(deadLetters(t, team)) > 0 })
	stopConsumer(t, c)
	if dl := deadLetters(t, team); len(dl) > 0 {
		t.Errorf("%d dead letters (a read off a line boundary), first: %+v", len(dl), dl[0])
	}
	if lost := checkEachOnce(t, logPath, want); lost > 0 {
		t.Fatalf("lost %d of %d lines", lost, len(want))
	}
}

// TestDamagedJournalIsACrash overwrites a stopped consumer's journal with
// garbage: the next consumer process hands every line still in the inbox
// again marked as a redelivery, tells its Warn, and is back to normal for
// what comes after.
func TestDamagedJournalIsACrash(t *testing.T) {
	const n = 5
	team := t.TempDir()
	logPath := filepath.Join(t.TempDir(), "handled.log")
	warnPath := filepath.Join(t.TempDir(), "warn.log")
	for i := range n {
		if err := Append(team, protocol.Lead, msg("alice", protocol.Lead, fmt.Sprint("m", i))); err != nil {
			t.Fatal(err)
		}
	}
	c := child(t, "consumer", "DIR="+team, "LOG="+logPath, "WARNLOG="+warnPath)
	testkit.WaitFor(t, time.Minute, "the first run", func() bool { return uniqueContents(t, logPath) == n })
	stopConsumer(t, c)
	if err := os.WriteFile(cursorPath(team, protocol.Lead), []byte("\x00\x17garbage{{{\nnot a record\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c = child(t, "consumer", "DIR="+team, "LOG="+logPath, "WARNLOG="+warnPath)
	testkit.WaitFor(t, time.Minute, "the old lines again", func() bool { return len(readLog(t, logPath)) >= 2*n })
	if err := Append(team, protocol.Lead, msg("alice", protocol.Lead, "after")); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, time.Minute, "the new line", func() bool { return uniqueContents(t, logPath) == n+1 })
	stopConsumer(t, c)
	entries := readLog(t, logPath)
	if len(entries) != 2*n+1 {
		t.Fatalf("%d deliveries, want %d: %+v", len(entries), 2*n+1, entries)
	}
	for _, e := range entries[n:] {
		if want := e.content != "after"; e.redelivery != want {
			t.Errorf("%q after the damaged journal: redelivery %v, want %v", e.content, e.redelivery, want)
		}
	}
	warn, _ := os.ReadFile(warnPath)
	if !bytes.Contains(warn, []byte("lead: ")) || !strings.Contains(string(warn), "cursor") {
		t.Fatalf("no warning about the damaged journal reached Warn: %q", warn)
	}
}

// TestUncommittedAnchorIsNotTrusted: a drain stopped while handling the
// first line commits nothing; if the file is then truncated and written
// again, the next drain reads the new content from 0 rather than refusing
// it against the first line it never committed.
func TestUncommittedAnchorIsNotTrusted(t *testing.T) {
	team := t.TempDir()
	if err := Append(team, "bob", msg("alice", "bob", "taken by a foreign reader")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var got collect
	c, err := NewConsumer(team, "bob", func(hctx context.Context, d Delivery) error {
		if d.Msg.Content == "taken by a foreign reader" {
			cancel() // the consumer stops in the middle of the handler
			return hctx.Err()
		}
		return got.handle(hctx, d)
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if err := drainLikeABus(filepath.Join(teamdir.InboxDirPath(team), "bob.jsonl"), false); err != nil {
		t.Fatal(err)
	}
	if err := Append(team, "bob", msg("alice", "bob", "new")); err != nil {
		t.Fatal(err)
	}
	if err := c.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.contents()) != "[new]" {
		t.Fatalf("after a truncation the uncommitted first line did not anchor: got %v", got.contents())
	}
}
