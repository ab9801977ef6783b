package filestore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"huddle/inbox"
	"huddle/protocol"
	"huddle/store"
	"huddle/teamdir"
)

// What a UI watches besides the Store interface (view.Observe): each is a
// follow of one file, so the observer of a team directory reads a file
// when it changes and never on a clock.
var (
	_ store.DeadLetterWatcher = (*Store)(nil)
	_ store.CommitWatcher     = (*Store)(nil)
	_ store.ConfigWatcher     = (*Store)(nil)
	_ store.HistoryReader     = (*Store)(nil)
)

// WatchDeadLetters calls fn as it starts and after each change of deadletter.jsonl (one
// fsnotify watch on the team directory, shared with the other follows of
// its files).
func (s *Store) WatchDeadLetters(ctx context.Context, fn func()) (store.Subscription, error) {
	return s.watchFile(ctx, s.dir, teamdir.DeadLetterFile, fn)
}

// WatchConfig calls fn as it starts and after each change of the configuration file name
// (team.json, a policy).
func (s *Store) WatchConfig(ctx context.Context, name string, fn func()) (store.Subscription, error) {
	if err := store.ValidateConfigName(name); err != nil {
		return nil, err
	}
	p := filepath.Join(s.dir, filepath.FromSlash(name))
	return s.watchFile(ctx, filepath.Dir(p), filepath.Base(p), fn)
}

// WatchRuntime calls fn as it starts and after each change of runtime.lock: a runtime
// starting, heartbeating or stopping cleanly. A runtime killed with kill
// -9 changes no file: only a probe (RuntimeLock) sees it.
func (s *Store) WatchRuntime(ctx context.Context, fn func()) (store.Subscription, error) {
	return s.watchFile(ctx, s.dir, teamdir.RuntimeLockFile, fn)
}

// watchFile follows dir/name, calling fn once as it starts (what changed
// between the caller's read and the watch is not lost) and after each
// change.
func (s *Store) watchFile(ctx context.Context, dir, name string, fn func()) (store.Subscription, error) {
	if err := os.MkdirAll(dir, teamdir.DirMode); err != nil {
		return nil, fmt.Errorf("watch %s: %w", name, err)
	}
	sub, err := s.follow(ctx, dir, name, drainFunc(func(context.Context) error { fn(); return nil }), 0)
	if err != nil {
		return nil, err
	}
	return sub, nil
}

// WatchCommits follows member's cursor journal (cursors/<name>.cursor,
// written by its consumer on every commit) and calls fn with the logical
// offset it committed up to: once before it returns, then after each
// change of the journal that moved it. A consumer commits after every
// message: a screen's store (Options.Pace) reads the journal once a burst.
func (s *Store) WatchCommits(ctx context.Context, member string, fn func(committed int64)) (store.Subscription, error) {
	if err := protocol.ValidateName(member); err != nil {
		return nil, err
	}
	dir := teamdir.CursorsDirPath(s.dir)
	if err := os.MkdirAll(dir, teamdir.DirMode); err != nil {
		return nil, fmt.Errorf("watch commits of %s: %w", member, err)
	}
	var mu sync.Mutex // the first read here, the rest on the follow's goroutine
	last := int64(-1)
	read := func(context.Context) error {
		c, err := inbox.Committed(s.dir, member)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if c != last {
			last = c
			fn(c)
		}
		return nil
	}
	// The watch first, then the read here: a commit after the read is a
	// change the watch tells. The follow's own first drain would read the
	// journal a second time for nothing, so it is skipped.
	var started atomic.Bool
	sub, err := s.follow(ctx, dir, member+".cursor", drainFunc(func(ctx context.Context) error {
		if !started.Swap(true) {
			return nil
		}
		return read(ctx)
	}), s.opts.Inbox.Rescan)
	if err != nil {
		return nil, fmt.Errorf("watch commits of %s: %w", member, err)
	}
	if err := read(ctx); err != nil {
		_ = sub.Stop()
		return nil, fmt.Errorf("watch commits of %s: %w", member, err)
	}
	return sub, nil
}

// History reads the newest limit records of requests/done/ by when they
// were archived (their modification time), newest resolution first; it
// reads no other.
func (s *Store) History(ctx context.Context, limit int) ([]protocol.Request, []store.CorruptError, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, nil, err
	}
	ents, err := os.ReadDir(teamdir.DoneDirPath(s.dir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("history: %w", err)
	}
	type file struct {
		id  string
		mod time.Time
	}
	var files []file
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !e.Type().IsRegular() || protocol.ValidateID(id) != nil {
			continue // a temp file's leading dot is no id's
		}
		info, err := e.Info()
		if err != nil {
			continue // gone since the listing
		}
		files = append(files, file{id, info.ModTime()})
	}
	slices.SortStableFunc(files, func(a, b file) int { return b.mod.Compare(a.mod) })
	if limit > 0 && len(files) > limit {
		files = files[:limit]
	}
	var out []protocol.Request
	var bad []store.CorruptError
	for _, f := range files {
		r, err := s.Request(ctx, f.id)
		var ce *store.CorruptError
		switch {
		case errors.As(err, &ce):
			bad = append(bad, *ce)
		case err == nil:
			out = append(out, *r)
		}
	}
	slices.SortStableFunc(out, func(a, b protocol.Request) int { return b.ResolvedOrCreated().Compare(a.ResolvedOrCreated()) })
	return out, bad, nil
}
