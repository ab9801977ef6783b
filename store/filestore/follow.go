package filestore

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"huddle/internal/dirwatch"
)

// retryAfter is how long a follower waits before it tries a failed drain
// again, as inbox.Watcher does.
const retryAfter = time.Second

// retryMost is the longest wait between two failed drains: the wait
// doubles from retryAfter after each failure in a row.
const retryMost = 16 * time.Second

// subscription runs drain once at its start, again whenever the file it
// follows changes (the store's watch of the file's directory, shared by
// its subscriptions: dirwatch), and after a backoff (retryAfter doubling
// to retryMost) when drains fail, the changes told meanwhile waiting;
// finish runs once the loop ended. An idle subscription holds its watch
// and nothing else of its own: the loop waits on the caller's context and
// the watch, and a drain gets a context of its own, which Stop cancels.
type subscription struct {
	s    *Store
	w    *dirwatch.Sub
	loop sync.WaitGroup
	once sync.Once
	err  error

	mu      sync.Mutex
	stopped bool
	cancel  context.CancelFunc // the running drain's (follow) or the loop's (Watch)
}

// drainer is what a subscription runs: drain at its start, at every change
// and retry, finish once its loop ended.
type drainer interface {
	drain(ctx context.Context, moved bool) error
	finish() error
}

// drainFunc is a drainer that reads the same whether or not the file
// moved, with nothing to finish.
type drainFunc func(ctx context.Context) error

func (f drainFunc) drain(ctx context.Context, _ bool) error { return f(ctx) }
func (drainFunc) finish() error                             { return nil }

// follow starts a subscription on dir/name: d.drain runs at once, at every
// change of the file, again after a failed drain, and every rescan when
// it is above zero. moved tells drain whether the file may be another
// now (dirwatch.Sub.Moved; at the start, a retry or a rescan, always).
func (s *Store) follow(ctx context.Context, dir, name string, d drainer, rescan time.Duration) (*subscription, error) {
	w, err := s.watches.Follow(filepath.Join(dir, name))
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", name, err)
	}
	sub := &subscription{s: s, w: w}
	s.track(sub, true)
	sub.loop.Go(func() {
		defer func() {
			w.Close()
			sub.err = d.finish()
		}()
		// The retry timer is made on the first failed drain: a thousand
		// idle consumers hold no timer.
		var retry *time.Timer
		var retryC <-chan time.Time // nil unless a retry is due
		var wait time.Duration      // the last backoff, 0 after a drain that worked
		pendingMoved := false       // a change told while a retry was due
		defer func() {
			if retry != nil {
				retry.Stop()
			}
		}()
		var every <-chan time.Time // nil: no rescan, events alone
		if rescan > 0 {
			t := time.NewTicker(rescan)
			defer t.Stop()
			every = t.C
		}
		for first := true; ; first = false {
			moved := true
			if !first {
				select {
				case <-ctx.Done():
					return
				case _, open := <-w.Changed():
					if !open {
						return
					}
					if retryC != nil {
						// A retry is due: it drains what changed.
						pendingMoved = true
						continue
					}
					// An error of the watch is not said: whatever it
					// missed, this drain reads, told the file moved.
					moved = false
				case <-retryC:
				case <-every:
				}
			}
			moved = w.Moved() || moved || pendingMoved
			pendingMoved = false
			dctx, ok := sub.startDrain(ctx)
			if !ok {
				return
			}
			failed := d.drain(dctx, moved) != nil && dctx.Err() == nil
			sub.endDrain()
			if !failed {
				wait, retryC = 0, nil
				continue
			}
			// Backing off: the changes told meanwhile wait for the
			// retry (a full disk fails every drain alike).
			wait = min(max(2*wait, retryAfter), retryMost)
			if retry == nil {
				retry = time.NewTimer(wait)
			} else {
				retry.Reset(wait)
			}
			retryC = retry.C
		}
	})
	return sub, nil
}

// startDrain gives a drain its context, unless the subscription stopped.
func (sub *subscription) startDrain(ctx context.Context) (context.Context, bool) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if sub.stopped {
		return nil, false
	}
	ctx, sub.cancel = context.WithCancel(ctx)
	return ctx, true
}

func (sub *subscription) endDrain() {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if sub.cancel != nil {
		sub.cancel()
		sub.cancel = nil
	}
}

// Stop ends the subscription and waits for it: cancel ends the running
// drain, and closing the watch closes the channel the loop waits on.
func (sub *subscription) Stop() error {
	sub.once.Do(func() {
		sub.mu.Lock()
		sub.stopped = true
		if sub.cancel != nil {
			sub.cancel()
		}
		sub.mu.Unlock()
		if sub.w != nil {
			sub.w.Close()
		}
		sub.loop.Wait()
		sub.s.track(sub, false)
	})
	return sub.err
}
