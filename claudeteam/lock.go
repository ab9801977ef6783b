package claudeteam

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// Claude Code locks an inbox with proper-lockfile: mkdir of <inbox>.lock
// (atomic), retried 10 times 5–100 ms apart; a lock whose directory mtime is
// older than 10 s is stale and taken over (removed, then mkdir again); the
// holder refreshes the mtime every 5 s; release is rmdir. huddle takes the
// same lock the same way, retrying 5–50 ms apart for up to lockWait
// (docs/claude-teams.md).

// lockWait is how long huddle waits for a held inbox lock before saying so.
const lockWait = 3 * time.Second

// LockHeldError says an inbox lock stayed held past lockWait.
type LockHeldError struct {
	Path string
	Held time.Duration
}

func (e *LockHeldError) Error() string {
	return fmt.Sprintf("inbox lock %s held by another process for %s (Claude Code holds it for a read and a write): try again", e.Path, e.Held.Round(time.Millisecond))
}

// inboxLock is a held lock.
type inboxLock struct {
	path  string
	taken time.Time
}

// lockInbox takes the lock of the inbox at path, waiting up to wait.
func lockInbox(ctx context.Context, path string, wait time.Duration) (*inboxLock, error) {
	lp := lockPath(path)
	start := time.Now()
	delay := 5 * time.Millisecond
	for {
		err := os.Mkdir(lp, 0o700)
		if err == nil {
			return &inboxLock{path: lp, taken: time.Now()}, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("inbox lock %s: %w", lp, err)
		}
		if fi, serr := os.Stat(lp); serr == nil && time.Since(fi.ModTime()) > lockStale {
			// Stale by Claude Code's own rule: take it over as it would.
			if rerr := os.Remove(lp); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
				return nil, fmt.Errorf("inbox lock %s: removing a stale lock: %w", lp, rerr)
			}
			continue
		}
		if time.Since(start) >= wait {
			return nil, &LockHeldError{Path: lp, Held: time.Since(start)}
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		delay = min(delay*2, 50*time.Millisecond)
	}
}

// fresh reports whether the lock is still surely ours: held for less than
// half the stale threshold, the interval at which proper-lockfile refreshes
// (huddle does not refresh: it holds the lock for one read and one write).
func (l *inboxLock) fresh() bool { return time.Since(l.taken) < lockStale/2 }

// unlock releases the lock; a lock held past the stale threshold may be
// someone else's by now, and is left alone.
func (l *inboxLock) unlock() error {
	if time.Since(l.taken) >= lockStale {
		return nil
	}
	if err := os.Remove(l.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("inbox lock %s: release: %w", l.path, err)
	}
	return nil
}
