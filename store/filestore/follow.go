package filestore

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// retryAfter is how long a follower waits before it tries a failed drain
// again, as inbox.Watcher does.
const retryAfter = time.Second

// subscription runs drain once at its start, again whenever the file it
// follows changes (the store's one fsnotify watch of the file's directory,
// dirWatch), and after retryAfter when a drain failed; finish runs once
// the loop ended.
type subscription struct {
	s      *Store
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
	err    error
}

// dirWatch is one fsnotify watch of a directory, shared by every
// subscription of the store on a file in it: an inotify instance per
// subscription would run out at the kernel's per-user limit
// (fs.inotify.max_user_instances, 128 by default) with a team of some
// hundred members. Each event kicks the subscriptions on its file; an
// overflow or a watch error kicks them all.
type dirWatch struct {
	w    *fsnotify.Watcher
	done chan struct{}

	mu    sync.Mutex
	kicks map[string]map[chan struct{}]bool // file name → its subscriptions' kicks
}

// watchDir registers kick for changes of dir/name on the store's watch of
// dir, starting that watch if need be; the returned func unregisters it,
// and the last one out stops the watch.
func (s *Store) watchDir(dir, name string, kick chan struct{}) (func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	dw := s.dirs[dir]
	if dw == nil {
		w, err := fsnotify.NewWatcher()
		if err != nil {
			return nil, err
		}
		if err := w.Add(dir); err != nil {
			w.Close()
			return nil, err
		}
		dw = &dirWatch{w: w, done: make(chan struct{}), kicks: map[string]map[chan struct{}]bool{}}
		s.dirs[dir] = dw
		go dw.run()
	}
	dw.mu.Lock()
	if dw.kicks[name] == nil {
		dw.kicks[name] = map[chan struct{}]bool{}
	}
	dw.kicks[name][kick] = true
	dw.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		dw.mu.Lock()
		delete(dw.kicks[name], kick)
		if len(dw.kicks[name]) == 0 {
			delete(dw.kicks, name)
		}
		last := len(dw.kicks) == 0
		dw.mu.Unlock()
		if last {
			delete(s.dirs, dir)
			dw.w.Close()
			<-dw.done
		}
	}, nil
}

// run hands the watch's events to the subscriptions until it is closed.
func (dw *dirWatch) run() {
	defer close(dw.done)
	for {
		select {
		case ev, ok := <-dw.w.Events:
			if !ok {
				return
			}
			dw.kick(filepath.Base(ev.Name))
		case _, ok := <-dw.w.Errors:
			if !ok {
				return
			}
			dw.kick("") // an overflow or error: a missed event costs a drain
		}
	}
}

// kick wakes the subscriptions on file name ("": all), never waiting: a
// kick already pending says the same.
func (dw *dirWatch) kick(name string) {
	dw.mu.Lock()
	defer dw.mu.Unlock()
	for n, kicks := range dw.kicks {
		if name != "" && n != name {
			continue
		}
		for k := range kicks {
			select {
			case k <- struct{}{}:
			default:
			}
		}
	}
}

// follow starts a subscription on dir/name.
func (s *Store) follow(ctx context.Context, dir, name string, drain func(ctx context.Context) error, finish func() error) (*subscription, error) {
	kick := make(chan struct{}, 1)
	unwatch, err := s.watchDir(dir, name, kick)
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", name, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	sub := &subscription{s: s, cancel: cancel, done: make(chan struct{})}
	s.track(sub, true)
	go func() {
		defer close(sub.done)
		defer func() {
			unwatch()
			if finish != nil {
				sub.err = finish()
			}
		}()
		retry := time.NewTimer(0) // the first drain, at once
		defer retry.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-kick:
			case <-retry.C:
			}
			if err := drain(ctx); err != nil && ctx.Err() == nil {
				retry.Reset(retryAfter)
			}
		}
	}()
	return sub, nil
}

// Stop ends the subscription and waits for it.
func (sub *subscription) Stop() error {
	sub.once.Do(func() {
		sub.cancel()
		<-sub.done
		sub.s.track(sub, false)
	})
	return sub.err
}
