package inbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"huddle/teamdir"
)

// Watcher holds one fsnotify watch on a team's inbox directory and wakes the
// consumers and observers that follow each inbox. A periodic rescan, and a
// rescan of everything on watcher overflow or error, make a missed event cost
// latency, never a message.
type Watcher struct {
	teamDir string
	opts    Options
	fsw     *fsnotify.Watcher
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	mu    sync.Mutex
	kicks map[string][]chan struct{}
	errs  []error

	// Rescans counts full rescans (periodic and on overflow or error).
	rescans int64
}

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
		ctx: ctx, cancel: cancel, kicks: make(map[string][]chan struct{}),
	}
	w.wg.Add(1)
	go w.loop()
	return w, nil
}

func (w *Watcher) loop() {
	defer w.wg.Done()
	tick := time.NewTicker(w.opts.Rescan)
	defer tick.Stop()
	for {
		select {
		case <-w.ctx.Done():
			return
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return
			}
			name := filepath.Base(ev.Name)
			if member, ok := strings.CutSuffix(name, ".jsonl"); ok && ev.Op&(fsnotify.Write|fsnotify.Create|fsnotify.Rename|fsnotify.Remove) != 0 {
				w.kick(member)
			}
		case _, ok := <-w.fsw.Errors:
			if !ok {
				return
			}
			// Overflow or another watcher error: events were lost.
			w.kickAll()
		case <-tick.C:
			w.kickAll()
		}
	}
}

func (w *Watcher) kick(member string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, k := range w.kicks[member] {
		select {
		case k <- struct{}{}:
		default:
		}
	}
}

func (w *Watcher) kickAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.rescans++
	for _, ks := range w.kicks {
		for _, k := range ks {
			select {
			case k <- struct{}{}:
			default:
			}
		}
	}
}

// follow registers a wake-up channel for member and runs drain on every
// wake-up (and once at the start) until the watcher stops; then stop runs.
func (w *Watcher) follow(member string, drain func() error, stop func() error) {
	k := make(chan struct{}, 1)
	k <- struct{}{}
	w.mu.Lock()
	w.kicks[member] = append(w.kicks[member], k)
	w.mu.Unlock()
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for {
			select {
			case <-w.ctx.Done():
				if stop != nil {
					w.report(stop())
				}
				return
			case <-k:
				w.report(drain())
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
	w.follow(member, func() error { return c.Drain(w.ctx) }, c.Close)
	return nil
}

// Observe starts a read-only observer of member's inbox; see NewObserver.
func (w *Watcher) Observe(member string, fromStart bool, fn func(Delivery)) (*Observer, error) {
	o, err := NewObserver(w.teamDir, member, fromStart, fn)
	if err != nil {
		return nil, err
	}
	w.follow(member, o.Drain, nil)
	return o, nil
}

// Kick wakes the followers of member now, as an event would.
func (w *Watcher) Kick(member string) { w.kick(member) }

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
