package inbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/protocol"
	"huddle/teamdir"
)

// legacyLayout turns a team directory into one written before cursors/:
// the lead's journal back at inbox/lead.cursor and no cursors/ directory.
func legacyLayout(t *testing.T, team string) string {
	t.Helper()
	legacy, err := teamdir.LegacyCursorPath(team, protocol.Lead)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(cursorPath(team, protocol.Lead), legacy); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(teamdir.CursorsDirPath(team)); err != nil {
		t.Fatal(err)
	}
	return legacy
}

// TestLegacyJournalMovesWithoutLossOrUnmarkedRedelivery: a team directory
// whose journal is still at inbox/<name>.cursor, left by a clean stop or by
// a kill -9, is read where it is (Committed, an Observer), and the consumer
// that opens it moves it to cursors/ and goes on from its position; a
// consumer process killed just before or just after the move changes
// nothing of that. Every message is handled once, only the first one after
// a kill -9 is marked, and nothing after a clean stop is.
func TestLegacyJournalMovesWithoutLossOrUnmarkedRedelivery(t *testing.T) {
	// 500 lines are past runConsumer's 64 KiB CompactAt, so the journal's
	// base is past 0 as well as its offset.
	const before, after = 500, 5
	for _, tc := range []struct {
		name    string
		killed  bool   // the consumer that wrote the legacy journal was killed
		crashAt string // the next consumer dies at this step of the move
	}{
		{"clean", false, ""}, {"killed", true, ""},
		{"clean,crash-before-move", false, "journal-move"}, {"clean,crash-after-move", false, "journal-moved"},
		{"killed,crash-before-move", true, "journal-move"}, {"killed,crash-after-move", true, "journal-moved"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			team := t.TempDir()
			logPath := filepath.Join(t.TempDir(), "handled.log")
			runChild(t, "writer", "DIR="+team, "WRITER=old", fmt.Sprint("N=", before))
			c := child(t, "consumer", "DIR="+team, "LOG="+logPath)
			testkit.WaitFor(t, time.Minute, "the old lines", func() bool { return uniqueContents(t, logPath) == before })
			// The consumer drains the 500 lines in one go, then compacts:
			// the journal's base moves past 0.
			testkit.WaitFor(t, time.Minute, "the compaction", func() bool {
				base, err := readBase(journalPaths{path: cursorPath(team, protocol.Lead)})
				return err == nil && base > 0
			})
			if tc.killed {
				if err := c.Process.Kill(); err != nil {
					t.Fatal(err)
				}
				_ = c.Wait()
			} else {
				stopConsumer(t, c)
			}
			committed, err := Committed(team, protocol.Lead)
			if err != nil || committed == 0 {
				t.Fatalf("committed %d, %v", committed, err)
			}
			legacy := legacyLayout(t, team)

			// Read where it is, before any consumer moves it.
			if got, err := Committed(team, protocol.Lead); err != nil || got != committed {
				t.Fatalf("Committed on the legacy journal: %d, %v; want %d", got, err, committed)
			}
			var seen []Delivery
			obs, err := NewObserver(team, protocol.Lead, false, func(d Delivery) { seen = append(seen, d) })
			if err != nil {
				t.Fatal(err)
			}
			runChild(t, "writer", "DIR="+team, "WRITER=new", fmt.Sprint("N=", after))
			if err := obs.Drain(); err != nil {
				t.Fatal(err)
			}
			if len(seen) != after || seen[0].Offset != committed {
				t.Fatalf("an observer from the end saw %d lines, the first at %d; want %d from %d", len(seen), firstOffset(seen), after, committed)
			}

			if tc.crashAt != "" {
				err := waitExit(t, child(t, "consumer", "DIR="+team, "LOG="+logPath, "CRASH_AT="+tc.crashAt), time.Minute)
				var exit *exec.ExitError
				if !errors.As(err, &exit) || exit.ExitCode() != crashExit {
					t.Fatalf("the consumer did not die at %q: %v", tc.crashAt, err)
				}
			}
			c = child(t, "consumer", "DIR="+team, "LOG="+logPath)
			want := writerContents("old", before)
			for s := range writerContents("new", after) {
				want[s] = true
			}
			testkit.WaitFor(t, time.Minute, "the new lines", func() bool { return uniqueContents(t, logPath) == len(want) })
			stopConsumer(t, c)
			if lost := checkEachOnce(t, logPath, want); lost > 0 {
				t.Fatalf("lost %d", lost)
			}
			entries := readLog(t, logPath)
			if len(entries) != before+after {
				t.Fatalf("%d deliveries, want %d: the move lost the position", len(entries), before+after)
			}
			for i, e := range entries[before:] {
				if want := tc.killed && i == 0; e.redelivery != want {
					t.Errorf("%q after the move: redelivery %v, want %v", e.content, e.redelivery, want)
				}
			}
			if _, err := os.Stat(legacy); !os.IsNotExist(err) {
				t.Errorf("the legacy journal is still there: %v", err)
			}
			if got, err := Committed(team, protocol.Lead); err != nil || got <= committed {
				t.Errorf("committed %d after the new lines, %v; want past %d", got, err, committed)
			}
		})
	}
}

// waitExit waits for a child process to end, killing it if it has not
// within the deadline (a crash point it never reached).
func waitExit(t *testing.T, c *exec.Cmd, within time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(within):
		_ = c.Process.Kill()
		<-done
		t.Fatalf("the process did not end within %v", within)
		return nil
	}
}

func firstOffset(ds []Delivery) int64 {
	if len(ds) == 0 {
		return -1
	}
	return ds[0].Offset
}

// TestJournalsUnderBothNamesKeepTheOneWrittenLast: an older huddle that ran
// after the move started a journal of its own at inbox/<name>.cursor. Only
// one consumer runs at a time, so whichever journal was written last holds
// the position: it is kept at cursors/<name>.cursor, the other is removed,
// and Warn says which.
func TestJournalsUnderBothNamesKeepTheOneWrittenLast(t *testing.T) {
	for _, legacyNewer := range []bool{true, false} {
		t.Run(fmt.Sprint("legacy newer ", legacyNewer), func(t *testing.T) {
			team := t.TempDir()
			// Two journals of the same inbox: one at the first line, one at the second.
			var offs []int64
			var journals [][]byte
			for i := range 2 {
				if err := Append(team, "bob", msg("alice", "bob", fmt.Sprint("m", i))); err != nil {
					t.Fatal(err)
				}
				c, err := NewConsumer(team, "bob", func(context.Context, Delivery) error { return nil }, Options{})
				if err != nil {
					t.Fatal(err)
				}
				if err := c.Drain(context.Background()); err != nil {
					t.Fatal(err)
				}
				if err := c.Close(); err != nil {
					t.Fatal(err)
				}
				off, err := Committed(team, "bob")
				if err != nil {
					t.Fatal(err)
				}
				b, err := os.ReadFile(cursorPath(team, "bob"))
				if err != nil {
					t.Fatal(err)
				}
				offs, journals = append(offs, off), append(journals, b)
			}
			legacy, err := teamdir.LegacyCursorPath(team, "bob")
			if err != nil {
				t.Fatal(err)
			}
			newer, older := legacy, cursorPath(team, "bob")
			if !legacyNewer {
				newer, older = older, newer
			}
			now := time.Now()
			for _, f := range []struct {
				path string
				data []byte
				at   time.Time
			}{{newer, journals[1], now}, {older, journals[0], now.Add(-time.Minute)}} {
				if err := os.WriteFile(f.path, f.data, teamdir.FileMode); err != nil {
					t.Fatal(err)
				}
				if err := os.Chtimes(f.path, f.at, f.at); err != nil {
					t.Fatal(err)
				}
			}
			var warned []error
			var got []string
			c, err := NewConsumer(team, "bob", func(_ context.Context, d Delivery) error {
				got = append(got, d.Msg.Content)
				return nil
			}, Options{Warn: func(_ string, err error) { warned = append(warned, err) }})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if err := Append(team, "bob", msg("alice", "bob", "m2")); err != nil {
				t.Fatal(err)
			}
			if err := c.Drain(context.Background()); err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0] != "m2" {
				t.Fatalf("delivered %q, want only m2: the journal written last (at %d) was not kept", got, offs[1])
			}
			if _, err := os.Stat(legacy); !os.IsNotExist(err) {
				t.Errorf("the legacy journal is still there: %v", err)
			}
			if len(warned) != 1 || !strings.Contains(warned[0].Error(), older) {
				t.Errorf("warnings %v, want one naming %s", warned, older)
			}
		})
	}
}
