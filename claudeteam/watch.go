package claudeteam

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/fsnotify/fsnotify"
)

// Watch journals every team under root into j until ctx ends: the teams
// there now and each one Claude Code makes later (a team directory that
// appears under ROOT/teams), each followed by its own Observer. started
// is told each team it begins to follow. One Watch runs a journal at a
// time: a second one gets *WatchingError.
func Watch(ctx context.Context, root string, j Journal, started func(team string)) error {
	if j == "" {
		return errors.New("claude watch: no journal to keep")
	}
	if err := os.MkdirAll(string(j), 0o700); err != nil {
		return fmt.Errorf("claude watch: %w", err)
	}
	unlock, err := lockWatch(j)
	if err != nil {
		return err
	}
	defer unlock()
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("claude watch: %w", err)
	}
	defer w.Close()
	kick := pump(w, func(string) bool { return true })
	following := map[string]*Observer{}
	defer func() {
		for _, o := range following {
			_ = o.Close()
		}
	}()
	scan := func() error {
		_ = w.Add(root)                         // to see teams/ appear
		_ = w.Add(filepath.Join(root, "teams")) // missing now: root's event brings a rescan
		// Each team directory too: its config.json may come after it.
		if ents, err := os.ReadDir(filepath.Join(root, "teams")); err == nil {
			for _, e := range ents {
				if e.IsDir() && following[e.Name()] == nil {
					_ = w.Add(filepath.Join(root, "teams", e.Name()))
				}
			}
		}
		teams, err := Teams(root)
		if err != nil {
			return err
		}
		for t, o := range following {
			if !slices.Contains(teams, t) {
				// Gone (Claude Code renames a team .deleted- and removes
				// it): its journal is complete, and its watch is let go.
				_ = o.Close()
				delete(following, t)
			}
		}
		for _, t := range teams {
			if following[t] != nil {
				continue
			}
			o, err := ObserveFrom(ctx, root, t, j, func(State) {})
			if err != nil {
				return err
			}
			following[t] = o
			if started != nil {
				started(t)
			}
		}
		return nil
	}
	if err := scan(); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-kick:
			if !ok {
				return nil
			}
		}
		if err := scan(); err != nil {
			return err
		}
	}
}

// WatchingError says another process journals the root already.
type WatchingError struct{ Journal Journal }

func (e *WatchingError) Error() string {
	return fmt.Sprintf("another huddle claude watch journals these teams already (%s)", e.Journal)
}

// lockWatch takes the journal's watch lock without waiting.
func lockWatch(j Journal) (func(), error) {
	f, err := os.OpenFile(filepath.Join(string(j), "watch.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("claude watch: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &WatchingError{Journal: j}
		}
		return nil, fmt.Errorf("claude watch: lock: %w", err)
	}
	return func() { f.Close() }, nil
}
