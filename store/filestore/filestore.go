package filestore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"huddle/inbox"
	"huddle/internal/dirwatch"

	"huddle/store"
	"huddle/teamdir"
)

// Store is a team directory seen as a store.Store.
type Store struct {
	dir  string
	opts Options

	mu   sync.Mutex
	subs map[*subscription]bool // running consumers and watches, stopped by Close
	// watches are the directories its subscriptions follow, one watch
	// each.
	watches dirwatch.Set
	// warn hears what consumers recover from (SetWarn).
	warn atomic.Pointer[func(member string, err error)]
	// traces writes the spans of every goroutine, one writer at a time.
	traces *teamdir.Joiner
}

var (
	_ store.Store         = (*Store)(nil)
	_ store.MessageReader = (*Store)(nil)
	_ store.SpanReader    = (*Store)(nil)
	_ store.InboxWatcher  = (*Store)(nil)
	_ store.AnswerWatcher = (*Store)(nil)
	_ store.Sweeper       = (*Store)(nil)
	_ store.Peeker        = (*Store)(nil)
)

// Sweep removes the temp files a crash left (teamdir.Sweep), in leases/
// and restart/ too, which only the files store writes.
func (s *Store) Sweep(ctx context.Context) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	d := s.dir
	err := teamdir.SweepIn(d, teamdir.InboxDirPath(d), teamdir.CursorsDirPath(d), teamdir.MembersDirPath(d),
		teamdir.RequestsDirPath(d), filepath.Join(d, LeasesDir), teamdir.RestartDirPath(d))
	if err != nil {
		return fmt.Errorf("sweep %s: %w", d, err)
	}
	return nil
}

// Open returns the store of the team directory dir, creating the directory
// (0700) when it is missing.
func Open(dir string) (*Store, error) { return OpenWith(dir, Options{}) }

// Options say how a files store's consumers run.
type Options struct {
	// Inbox are the options of every consumer Consume starts, as a
	// directory's runtime gives them: Warn hears what a consumer recovered
	// from (a damaged cursor journal), Rescan drains an inbox that often
	// besides on events (a file system whose changes inotify misses),
	// CompactAt and Keep. Retries is always store.Retries, the contract's.
	Inbox inbox.Options
	// Pace, when above zero, makes it a screen's store: the changes of its
	// directories are read at most once a Pace after a burst
	// (dirwatch.Set.Pace), so a screen over a busy team wakes a few times
	// a frame rather than at every message. A runtime's store leaves it 0:
	// its consumers act on every change at once.
	Pace time.Duration
}

// OpenWith is Open with the consumers' options.
func OpenWith(dir string, opts Options) (*Store, error) {
	if dir == "" {
		return nil, errors.New("filestore: no team directory")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("filestore: %w", err)
	}
	if err := os.MkdirAll(abs, teamdir.DirMode); err != nil {
		return nil, fmt.Errorf("filestore: %w", err)
	}
	st := &Store{dir: abs, opts: opts, subs: map[*subscription]bool{}, traces: teamdir.NewJoiner(teamdir.TracesPath(abs))}
	st.watches.Pace = opts.Pace
	return st, nil
}

// Dir is the team directory.
func (s *Store) Dir() string { return s.dir }

// SetWarn has fn told, besides Options.Inbox.Warn, what a consumer started
// from now on recovers from on its own (a damaged cursor journal): the
// runtime says it as an event.
func (s *Store) SetWarn(fn func(member string, err error)) {
	both := fn
	if first := s.opts.Inbox.Warn; first != nil {
		both = func(member string, err error) {
			first(member, err)
			fn(member, err)
		}
	}
	s.warn.Store(&both)
}

// Close stops every consumer and watch the store started.
func (s *Store) Close() error {
	s.mu.Lock()
	subs := make([]*subscription, 0, len(s.subs))
	for sub := range s.subs {
		subs = append(subs, sub)
	}
	s.mu.Unlock()
	var errs []error
	for _, sub := range subs {
		errs = append(errs, sub.Stop())
	}
	return errors.Join(errs...)
}

func (s *Store) track(sub *subscription, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if on {
		s.subs[sub] = true
	} else {
		delete(s.subs, sub)
	}
}

// ctxErr is the error of a context that ended, for methods whose file
// operations cannot be interrupted: they check it once before they start.
func ctxErr(ctx context.Context) error { return ctx.Err() }
