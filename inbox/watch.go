package inbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"

	"huddle/teamdir"
)

// Watcher holds one fsnotify watch on a team's inbox directory and wakes the
// consumers and observers that follow each inbox. It does nothing while
// nothing changes: inotify loses no event but by overflowing its queue,
// which fsnotify reports as an error, and then everything is drained again
// (kickAll). A periodic rescan is opt-in (Options.Rescan), for file systems
// whose changes inotify does not see.
type Watcher struct {
	teamDir string
	opts    Options
	fsw     *fsnotify.Watcher
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	mu      sync.Mutex
	follows map[string][]*follower
	errs    []error

	// rescans counts full rescans (periodic, and on overflow or error).
	rescans int64
	// drains counts the drains run by followers (for tests).
	drains atomic.Int64
}

// follower is one consumer or observer of an inbox: kick wakes its
// goroutine, and verify asks its next drain to check the inbox file is
// still the one at the path (the name was created, removed or renamed, or
// events were lost).
type follower struct {
	kick   chan struct{}
	verify atomic.Bool
}

// wake asks the follower for a drain, without blocking: one kick pending is
// enough, the drain it starts reads everything written before it.
func (f *follower) wake(verify bool) {
	if verify {
		f.verify.Store(true)
	}
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// drainRetry is how soon a follower whose drain failed tries again: with
// no periodic rescan, nothing else would until the inbox changes.
const drainRetry = time.Second

// rewatchEvery is how long after a removal in the inbox directory the
// watcher checks the directory is still the one it watches, and how often,
// when it is not, it tries to watch the new one.
const rewatchEvery = time.Second

// NewWatcher starts watching teamDir/inbox. Everything it starts stops when
// ctx ends or Close is called.
func NewWatcher(ctx context.Context, teamDir string, opts Options) (*Watcher, error) {
	if err := os.MkdirAll(teamdir.InboxDirPath(teamDir), teamdir.DirMode); err != nil {
		return nil, fmt.Errorf("inbox: %w", err)
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("inbox: watch: %w", err)
	}
	if err := fsw.Add(teamdir.InboxDirPath(teamDir)); err != nil {
		fsw.Close()
		return nil, fmt.Errorf("inbox: watch %s: %w", teamdir.InboxDirPath(teamDir), err)
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &Watcher{
		teamDir: teamDir, opts: opts.withDefaults(), fsw: fsw,
		ctx: ctx, cancel: cancel, follows: make(map[string][]*follower),
	}
	w.wg.Add(1)
	go w.loop()
	return w, nil
}

func (w *Watcher) loop() {
	defer w.wg.Done()
	var rescan <-chan time.Time // nil, so never ready, unless opted in
	if w.opts.Rescan > 0 {
		tick := time.NewTicker(w.opts.Rescan)
		defer tick.Stop()
		rescan = tick.C
	}
	dir := teamdir.InboxDirPath(w.teamDir)
	// The watched directory is held open, so that a new one made at the
	// same path cannot take its inode number and pass for it.
	watched, _ := os.Open(dir)
	defer func() { closeDir(watched) }()
	rewatch := time.NewTimer(rewatchEvery)
	rewatch.Stop()
	defer rewatch.Stop()
	for {
		select {
		case <-w.ctx.Done():
			return
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return
			}
			if ev.Op&(fsnotify.Remove|fsnotify.Rename) != 0 {
				// Was the directory removed, taking its watch with it? The
				// kernel says so of a directory only once nothing holds
				// files in it open, and consumers keep theirs open; so a
				// while after anything in it is removed or renamed, the
				// watcher looks.
				rewatch.Reset(rewatchEvery)
			}
			if ev.Name == dir {
				continue
			}
			name := filepath.Base(ev.Name)
			if member, ok := strings.CutSuffix(name, ".jsonl"); ok && ev.Op&(fsnotify.Write|fsnotify.Create|fsnotify.Rename|fsnotify.Remove) != 0 {
				w.kick(member, ev.Op&(fsnotify.Create|fsnotify.Rename|fsnotify.Remove) != 0)
			}
		case _, ok := <-w.fsw.Errors:
			if !ok {
				return
			}
			// Overflow or another watcher error: events were lost.
			w.kickAll()
		case <-rescan:
			w.kickAll()
		case <-rewatch.C:
			if sameDir(dir, watched) {
				continue
			}
			_ = w.fsw.Remove(dir) // the old watch, if the kernel has not dropped it yet
			if err := w.fsw.Add(dir); err != nil {
				rewatch.Reset(rewatchEvery)
				continue
			}
			closeDir(watched)
			watched, _ = os.Open(dir)
			w.kickAll()
		}
	}
}

// sameDir reports whether dir still names the directory watched is open on.
func sameDir(dir string, watched *os.File) bool {
	if watched == nil {
		return false
	}
	held, err := watched.Stat()
	if err != nil {
		return false
	}
	st, err := os.Stat(dir)
	return err == nil && os.SameFile(st, held)
}

func closeDir(f *os.File) {
	if f != nil {
		f.Close()
	}
}

func (w *Watcher) kick(member string, verify bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, f := range w.follows[member] {
		f.wake(verify)
	}
}

func (w *Watcher) kickAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.rescans++
	for _, fs := range w.follows {
		for _, f := range fs {
			f.wake(true)
		}
	}
}

// follow registers a follower of member and runs drain on every wake-up
// (and once at the start) until the watcher stops; then stop runs. A drain
// that fails is tried again after drainRetry.
func (w *Watcher) follow(member string, drain func(verify bool) error, stop func() error) {
	f := &follower{kick: make(chan struct{}, 1)}
	f.wake(true)
	w.mu.Lock()
	w.follows[member] = append(w.follows[member], f)
	w.mu.Unlock()
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		retry := time.NewTimer(drainRetry)
		retry.Stop()
		defer retry.Stop()
		for {
			select {
			case <-w.ctx.Done():
				if stop != nil {
					w.report(stop())
				}
				return
			case <-f.kick:
			case <-retry.C:
				f.verify.Store(true)
			}
			w.drains.Add(1)
			if err := drain(f.verify.Swap(false)); err != nil {
				w.report(err)
				retry.Reset(drainRetry)
			}
		}
	}()
}

func (w *Watcher) report(err error) {
	if err == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.errs) < 100 {
		w.errs = append(w.errs, err)
	}
}

// Consume starts a consumer for member's inbox: h sees each valid message
// once, in order, from the committed cursor on.
func (w *Watcher) Consume(member string, h Handler) error {
	c, err := NewConsumer(w.teamDir, member, h, w.opts)
	if err != nil {
		return err
	}
	w.follow(member, func(verify bool) error { return c.drain(w.ctx, verify) }, c.Close)
	return nil
}

// Observe starts a read-only observer of member's inbox; see NewObserver.
func (w *Watcher) Observe(member string, fromStart bool, fn func(Delivery)) (*Observer, error) {
	o, err := NewObserver(w.teamDir, member, fromStart, fn)
	if err != nil {
		return nil, err
	}
	w.follow(member, func(bool) error { return o.Drain() }, o.Close)
	return o, nil
}

// Kick wakes the followers of member now, as an event would.
func (w *Watcher) Kick(member string) { w.kick(member, true) }

// Close stops the watch and every follower, waits for them, and returns the
// errors they met, if any.
func (w *Watcher) Close() error {
	w.cancel()
	err := w.fsw.Close()
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return errors.Join(append([]error{err}, w.errs...)...)
}
