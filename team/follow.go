package team

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/fsnotify/fsnotify"
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
// per directory (followedDir): a runtime on a store follows every exec and
// llm member's file in members/, and an inotify instance each would run
// out at the kernel's per-user limit (128 by default).
type Follower struct {
	path string
	off  int64
	dir  *followedDir
	// wake says the file changed (or events were lost); errs a watch
	// error; both hold one, never waited on by the watch.
	wake      chan struct{}
	errs      chan error
	closed    chan struct{}
	closeOnce sync.Once
}

// followedDir is the one fsnotify watch of a directory, for every
// Follower of a file in it.
type followedDir struct {
	name string
	w    *fsnotify.Watcher
	done chan struct{}

	mu        sync.Mutex
	followers map[*Follower]bool
}

// followedDirs are the directories followed in this process.
var followedDirs = struct {
	sync.Mutex
	m map[string]*followedDir
}{m: map[string]*followedDir{}}

// Follow starts following path from off.
func Follow(path string, off int64) (*Follower, error) {
	path = filepath.Clean(path)
	f := &Follower{path: path, off: off, wake: make(chan struct{}, 1), errs: make(chan error, 1), closed: make(chan struct{})}
	dir := filepath.Dir(path)
	followedDirs.Lock()
	defer followedDirs.Unlock()
	d := followedDirs.m[dir]
	if d == nil {
		w, err := fsnotify.NewWatcher()
		if err != nil {
			return nil, err
		}
		if err := w.Add(dir); err != nil {
			w.Close()
			return nil, err
		}
		d = &followedDir{name: dir, w: w, done: make(chan struct{}), followers: map[*Follower]bool{}}
		followedDirs.m[dir] = d
		go d.run()
	}
	d.mu.Lock()
	d.followers[f] = true
	d.mu.Unlock()
	f.dir = d
	return f, nil
}

// run hands the watch's events to the followers until it is closed.
func (d *followedDir) run() {
	defer close(d.done)
	for {
		select {
		case ev, ok := <-d.w.Events:
			if !ok {
				return
			}
			d.tell(func(f *Follower) bool { return filepath.Clean(ev.Name) == f.path }, nil)
		case err, ok := <-d.w.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				err = nil // events were lost: every follower reads again
			}
			d.tell(func(*Follower) bool { return true }, err)
		}
	}
}

// tell wakes the followers for which which holds, or gives them err,
// never waiting: one pending says the same.
func (d *followedDir) tell(which func(*Follower) bool, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for f := range d.followers {
		if !which(f) {
			continue
		}
		ch := f.wake
		if err != nil {
			select {
			case f.errs <- err:
			default:
			}
			continue
		}
		select {
		case ch <- struct{}{}:
		default:
		}
	}
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
	case <-f.closed:
		return io.EOF
	case <-f.wake:
		return nil
	case err := <-f.errs:
		return err
	}
}

// Close stops the follower; a Next waiting returns io.EOF. The last
// follower of a directory stops its watch.
func (f *Follower) Close() error {
	var err error
	f.closeOnce.Do(func() {
		close(f.closed)
		followedDirs.Lock()
		defer followedDirs.Unlock()
		d := f.dir
		d.mu.Lock()
		delete(d.followers, f)
		last := len(d.followers) == 0
		d.mu.Unlock()
		if last {
			delete(followedDirs.m, d.name)
			err = d.w.Close()
			<-d.done
		}
	})
	return err
}
