package claudeteam

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/fsnotify/fsnotify"

	"huddle/team/view"
)

// Observer follows one Claude Code team: fsnotify watches on its
// directories, and a new fold after every change (and after a watcher
// overflow or error, a full rescan). No polling.
type Observer struct {
	w      *fsnotify.Watcher
	f      *folder
	on     func(State)
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	last   State
}

// Observe starts following team under root and calls on with every fold,
// from its own goroutine (the first one too: on may block until its
// receiver runs, as a Bubble Tea program's Send does before Run). Close
// stops it.
func Observe(ctx context.Context, root, teamName string, on func(State)) (*Observer, error) {
	return ObserveFrom(ctx, root, teamName, "", on)
}

// ObserveFrom is Observe with the team's journal j (ReadFrom).
func ObserveFrom(ctx context.Context, root, teamName string, j Journal, on func(State)) (*Observer, error) {
	if err := CheckName("team", teamName); err != nil {
		return nil, err
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("claude team %s: watch: %w", teamName, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	o := &Observer{w: w, f: newFolder(root, teamName, j), on: on, cancel: cancel, done: make(chan struct{})}
	kick := pump(w, o.relevant) // before the first watch: no event of it is missed
	o.watch()
	go o.follow(ctx, kick)
	return o, nil
}

// ObserveSnapshots is ObserveFrom for the UI: it hands on only the
// snapshot.
func ObserveSnapshots(ctx context.Context, root, teamName string, j Journal, on func(view.Snapshot)) (*Observer, error) {
	return ObserveFrom(ctx, root, teamName, j, func(s State) { on(s.Snapshot) })
}

// watch adds a watch on every directory the team lives in that exists now;
// one that does not (yet, or any more) is added at a later rescan, when its
// parent's watch says it appeared.
func (o *Observer) watch() {
	root, t := o.f.root, o.f.team
	for _, d := range []string{
		root, filepath.Join(root, "teams"), teamDir(root, t), inboxesDir(root, t),
		filepath.Join(root, "tasks"), tasksDir(root, t),
	} {
		_ = o.w.Add(d) // missing now: its parent's event brings a rescan
	}
}

func (o *Observer) fold() {
	st := o.f.fold()
	o.mu.Lock()
	o.last = st
	o.mu.Unlock()
	o.on(st)
}

// Last is the latest fold.
func (o *Observer) Last() State {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.last
}

// follow folds again after every batch of events (pump coalesces them:
// a burst of rewrites costs one fold), adding the watches of directories
// that appeared meanwhile.
func (o *Observer) follow(ctx context.Context, kick <-chan struct{}) {
	defer close(o.done)
	o.fold()
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-kick:
			if !ok {
				return
			}
		}
		o.watch()
		o.fold()
	}
}

// relevant reports whether a change at path can change the fold: teams/ or
// tasks/ themselves, or anything of this team's under them.
func (o *Observer) relevant(path string) bool {
	rel, err := filepath.Rel(o.f.root, path)
	if err != nil {
		return true
	}
	parts := strings.SplitN(filepath.ToSlash(rel), "/", 3)
	if parts[0] != "teams" && parts[0] != "tasks" {
		return false
	}
	return len(parts) == 1 || parts[1] == o.f.team
}

// Close stops the observer and waits for it.
func (o *Observer) Close() error {
	o.cancel()
	err := o.w.Close()
	<-o.done
	if errors.Is(err, fsnotify.ErrClosed) {
		err = nil
	}
	return err
}
