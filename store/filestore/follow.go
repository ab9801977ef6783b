package filestore

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"
)

// retryAfter is how long a follower waits before it tries a failed drain
// again, as inbox.Watcher does.
const retryAfter = time.Second

// subscription runs drain once at its start, again whenever the file it
// follows changes (the store's watch of the file's directory, shared by
// its subscriptions: dirwatch), and after retryAfter when a drain failed;
// finish runs once the loop ended.
type subscription struct {
	s      *Store
	cancel context.CancelFunc
	loop   sync.WaitGroup // a thousand idle subscriptions hold no channel of their own
	once   sync.Once
	err    error
}

// follow starts a subscription on dir/name: drain runs at once, at every
// change of the file, again after a failed drain, and every rescan when
// it is above zero. moved tells drain whether the file may be another
// now (dirwatch.Sub.Moved; at the start, a retry or a rescan, always).
func (s *Store) follow(ctx context.Context, dir, name string, drain func(ctx context.Context, moved bool) error, finish func() error, rescan time.Duration) (*subscription, error) {
	w, err := s.watches.Follow(filepath.Join(dir, name))
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", name, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	sub := &subscription{s: s, cancel: cancel}
	s.track(sub, true)
	sub.loop.Go(func() {
		defer func() {
			w.Close()
			if finish != nil {
				sub.err = finish()
			}
		}()
		// The retry timer is made on the first failed drain: a thousand
		// idle consumers hold no timer.
		var retry *time.Timer
		var retryC <-chan time.Time
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
					// An error of the watch is not said: whatever it
					// missed, this drain reads, told the file moved.
					moved = false
				case <-retryC:
				case <-every:
				}
			}
			moved = w.Moved() || moved
			if err := drain(ctx, moved); err != nil && ctx.Err() == nil {
				if retry == nil {
					retry = time.NewTimer(retryAfter)
					retryC = retry.C
				} else {
					retry.Reset(retryAfter)
				}
			}
		}
	})
	return sub, nil
}

// Stop ends the subscription and waits for it.
func (sub *subscription) Stop() error {
	sub.once.Do(func() {
		sub.cancel()
		sub.loop.Wait()
		sub.s.track(sub, false)
	})
	return sub.err
}

// always is a drain that reads the same whether or not the file moved.
func always(f func(ctx context.Context) error) func(ctx context.Context, moved bool) error {
	return func(ctx context.Context, _ bool) error { return f(ctx) }
}
