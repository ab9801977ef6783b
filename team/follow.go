package team

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"

	"huddle/internal/dirwatch"
)

// ReadLines reads the whole lines of path from off on, and returns them
// with the offset after the last one: a line still being written is left
// for the next read. A file that does not exist yet has no lines.
func ReadLines(path string, off int64) (lines [][]byte, end int64, err error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, off, nil
	}
	if err != nil {
		return nil, off, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() < off {
		off = 0 // truncated or replaced: from the start again
	}
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return nil, off, err
	}
	br := bufio.NewReader(f)
	end = off
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			lines = append(lines, line)
			end += int64(len(line))
		}
		if errors.Is(err, io.EOF) {
			return lines, end, nil
		}
		if err != nil {
			return lines, end, err
		}
	}
}

// TailStart is the offset from which the last (about) max bytes of path
// hold whole lines: the start of the line that follows the cut, or 0 when
// the file is smaller than max. A screen shows a long log from there
// without reading all of it.
func TailStart(path string, max int64) (int64, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if fi.Size() <= max {
		return 0, nil
	}
	from := fi.Size() - max
	br := bufio.NewReader(io.NewSectionReader(f, from, max))
	skipped, err := br.ReadBytes('\n') // the line the cut falls in
	if err != nil {
		return fi.Size(), nil // one line longer than max: nothing whole to show
	}
	return from + int64(len(skipped)), nil
}

// lastLineBytes is how far back LastLine looks.
const lastLineBytes = 4 << 10

// LastLine is the last non-empty whole line of path, made printable and cut
// to 200 characters; "" when there is none or it cannot be read.
func LastLine(path string) string {
	off, err := TailStart(path, lastLineBytes)
	if err != nil {
		return ""
	}
	lines, _, err := ReadLines(path, off)
	if err != nil {
		return ""
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if s := Printable(string(lines[i])); s != "" {
			if r := []rune(s); len(r) > 200 {
				s = string(r[:200]) + "…"
			}
			return s
		}
	}
	return ""
}

// Follower follows the lines appended to one file (a member's log or
// transcript), woken by fsnotify on its directory: the file may not exist
// yet, and may be replaced. The followers of one process share one watch
// per directory (follows): a runtime on a store follows every exec and
// llm member's file in members/.
type Follower struct {
	path string
	off  int64
	w    *dirwatch.Sub
}

// follows are the directories this process's Followers watch.
var follows dirwatch.Set

// Follow starts following path from off.
func Follow(path string, off int64) (*Follower, error) {
	w, err := follows.Follow(path)
	if err != nil {
		return nil, err
	}
	return &Follower{path: path, off: off, w: w}, nil
}

// Next returns the whole lines appended since the last call, waiting for
// some when there are none. It returns io.EOF once the follower is closed
// and ctx's error once ctx ends.
func (f *Follower) Next(ctx context.Context) ([][]byte, error) {
	for {
		// Read before waiting: what was written between the last read and
		// the watch (or between two events) is not missed.
		lines, end, err := ReadLines(f.path, f.off)
		f.off = end
		if err != nil || len(lines) > 0 {
			return lines, err
		}
		if err := f.wait(ctx); err != nil {
			return nil, err
		}
	}
}

// wait blocks until something happens to the file.
func (f *Follower) wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case _, open := <-f.w.Changed():
		if !open {
			return io.EOF
		}
		return f.w.Err()
	}
}

// Close stops the follower; a Next waiting returns io.EOF.
func (f *Follower) Close() error { return f.w.Close() }

// Offset is where the next read starts.
func (f *Follower) Offset() int64 { return f.off }

// Rewind makes the next read start at off, to read again lines a reader
// could not use.
func (f *Follower) Rewind(off int64) { f.off = off }

// Drain returns the whole lines the file holds past the offset, without
// waiting: the last read before a follower closes.
func (f *Follower) Drain() ([][]byte, error) {
	lines, end, err := ReadLines(f.path, f.off)
	if err == nil {
		f.off = end
	}
	return lines, err
}
