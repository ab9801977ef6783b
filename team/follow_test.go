package team

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func joined(lines [][]byte) string {
	var b strings.Builder
	for _, l := range lines {
		b.Write(l)
	}
	return b.String()
}

// TestReadLinesLeavesAPartialLine: a line still being written is not read,
// and is read whole once its newline lands.
func TestReadLinesLeavesAPartialLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.log")
	if lines, end, err := ReadLines(path, 0); err != nil || len(lines) != 0 || end != 0 {
		t.Fatalf("missing file: %q %d %v", lines, end, err)
	}
	appendFile(t, path, "one\ntw")
	lines, end, err := ReadLines(path, 0)
	if err != nil || joined(lines) != "one\n" || end != 4 {
		t.Fatalf("got %q end %d err %v, want one line and end 4", joined(lines), end, err)
	}
	appendFile(t, path, "o\n")
	lines, end, err = ReadLines(path, end)
	if err != nil || joined(lines) != "two\n" || end != 8 {
		t.Fatalf("got %q end %d err %v, want two and end 8", joined(lines), end, err)
	}
}

// TestTailStartCutsAtALineStart: the tail of a long file starts at a whole
// line, and a short file is read from the start.
func TestTailStartCutsAtALineStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.log")
	appendFile(t, path, "aaaa\nbbbb\ncccc\n")
	if off, err := TailStart(path, 100); err != nil || off != 0 {
		t.Fatalf("short file: %d %v, want 0", off, err)
	}
	off, err := TailStart(path, 7) // the cut falls in "bbbb"
	if err != nil {
		t.Fatal(err)
	}
	lines, _, err := ReadLines(path, off)
	if err != nil || joined(lines) != "cccc\n" {
		t.Fatalf("tail from %d: %q %v, want cccc", off, joined(lines), err)
	}
}

// TestFollowerSeesCreationAppendsAndTruncation: a follower of a file that
// does not exist yet gets its lines once written, waits for more, starts
// over after a truncation, and a Close ends a waiting Next.
func TestFollowerSeesCreationAppendsAndTruncation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.transcript.jsonl")
	f, err := Follow(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	next := func() string {
		t.Helper()
		lines, err := f.Next(ctx)
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		return joined(lines)
	}
	got := make(chan string, 1)
	go func() { l, _ := f.Next(ctx); got <- joined(l) }()
	appendFile(t, path, "first\n")
	if s := <-got; s != "first\n" {
		t.Fatalf("after creation: %q", s)
	}
	appendFile(t, path, "sec")
	appendFile(t, path, "ond\n")
	var s string
	for !strings.Contains(s, "second\n") {
		s += next()
	}
	if s != "second\n" {
		t.Fatalf("after appends: %q", s)
	}
	if err := os.WriteFile(path, []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if s := next(); s != "new\n" {
		t.Fatalf("after truncation: %q", s)
	}

	done := make(chan error, 1)
	go func() { _, err := f.Next(ctx); done <- err }()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, io.EOF) {
		t.Fatalf("Next after Close: %v, want io.EOF", err)
	}
}

// TestMoreFollowersThanInotifyInstances: 300 followers of files in one
// directory, more than the kernel's default 128 inotify instances a user
// may hold, as a runtime on a store follows every exec and llm member's
// file: each starts, each sees its own file's line and no other's, and a
// follower closed leaves the others following.
func TestMoreFollowersThanInotifyInstances(t *testing.T) {
	const n = 300
	dir := t.TempDir()
	fs := make([]*Follower, n)
	for i := range fs {
		f, err := Follow(filepath.Join(dir, fmt.Sprintf("m%03d.log", i)), 0)
		if err != nil {
			t.Fatalf("follower %d of %d: %v", i+1, n, err)
		}
		defer f.Close()
		fs[i] = f
	}
	if err := fs[0].Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 1; i < n; i++ {
		appendFile(t, filepath.Join(dir, fmt.Sprintf("m%03d.log", i)), fmt.Sprintf("line of m%03d\n", i))
	}
	for i := 1; i < n; i++ {
		lines, err := fs[i].Next(ctx)
		if err != nil {
			t.Fatalf("follower %d: %v", i, err)
		}
		if got, want := joined(lines), fmt.Sprintf("line of m%03d\n", i); got != want {
			t.Fatalf("follower %d read %q, want %q", i, got, want)
		}
	}
}

// TestLastLineIsTheLastWords: the last non-empty line, printable and cut;
// nothing for a missing or empty file.
func TestLastLineIsTheLastWords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.log")
	if got := LastLine(path); got != "" {
		t.Fatalf("missing file: %q", got)
	}
	appendFile(t, path, "starting\npanic: \x1b[31mboom\x1b[0m\n\n  \n")
	if got := LastLine(path); got != "panic: ?[31mboom?[0m" {
		t.Fatalf("got %q", got)
	}
	appendFile(t, path, strings.Repeat("x", 300)+"\n")
	if got := LastLine(path); len([]rune(got)) != 201 || !strings.HasSuffix(got, "…") {
		t.Fatalf("a long line: %d runes %q", len([]rune(got)), got)
	}
}

// TestReadStatusHistoryTail: the last n changes, oldest first; a torn
// last line (a crash mid-append) and a line that is not a change are
// skipped; no file is no history.
func TestReadStatusHistoryTail(t *testing.T) {
	dir := t.TempDir()
	if h, err := ReadStatusHistory(dir, "alice", 3); err != nil || len(h) != 0 {
		t.Fatalf("no file: %+v %v", h, err)
	}
	path := filepath.Join(dir, "members", "alice.history.jsonl")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC()
	var lines []string
	for i, st := range []string{"starting", "working", "awaiting_approval", "revising", "awaiting_approval", "working"} {
		lines = append(lines, fmt.Sprintf(`{"ts":%q,"status":%q,"activity":"step %d"}`, at.Add(time.Duration(i)*time.Second).Format(time.RFC3339Nano), st, i))
	}
	lines = append(lines[:3], append([]string{"not a change"}, lines[3:]...)...)
	appendFile(t, path, strings.Join(lines, "\n")+"\n"+`{"ts":"2026-`) // torn
	all, err := ReadStatusHistory(dir, "alice", 0)
	if err != nil || len(all) != 6 {
		t.Fatalf("all: %d changes, %v", len(all), err)
	}
	last, err := ReadStatusHistory(dir, "alice", 2)
	if err != nil || len(last) != 2 || last[0] != all[4] || last[1] != all[5] || last[1].Activity != "step 5" {
		t.Fatalf("the last 2: %+v, %v", last, err)
	}
}
