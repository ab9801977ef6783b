package filestore

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fsnotify/fsnotify"

	"huddle/protocol"
	"huddle/store"
	"huddle/teamdir"
)

// Watch follows the directories of kinds with fsnotify: requests/ (an
// event on <id>.json or <id>.decision is a change of that request; an
// archive moves it out: a change too), members/ (one on <name>.json of
// that member; a heartbeat touches it: an attribute event), restart/ (one
// on restart/<member>). A watcher error (its queue overflowed) and a
// recreated directory are told as a Change with no Name: events may have
// been lost.
func (s *Store) Watch(ctx context.Context, fn func(store.Change), kinds ...store.ChangeKind) (store.Subscription, error) {
	dirs := map[string]store.ChangeKind{}
	for _, k := range []struct {
		dir  string
		kind store.ChangeKind
	}{
		{teamdir.RequestsDirPath(s.dir), store.ChangeRequest},
		{teamdir.MembersDirPath(s.dir), store.ChangeMember},
		{teamdir.RestartDirPath(s.dir), store.ChangeRestart},
	} {
		if store.Watched(kinds, k.kind) {
			dirs[k.dir] = k.kind
		}
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	}
	for d := range dirs {
		if err := os.MkdirAll(d, teamdir.DirMode); err != nil {
			w.Close()
			return nil, fmt.Errorf("watch: %w", err)
		}
	}
	for _, d := range append(slices.Collect(maps.Keys(dirs)), s.dir) {
		if err := w.Add(d); err != nil {
			w.Close()
			return nil, fmt.Errorf("watch: %w", err)
		}
	}
	all := func() {
		for _, k := range store.ChangeKinds {
			if store.Watched(kinds, k) {
				fn(store.Change{Kind: k})
			}
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	sub := &subscription{s: s, cancel: cancel}
	s.track(sub, true)
	sub.loop.Go(func() {
		defer w.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				dir, base := filepath.Dir(ev.Name), filepath.Base(ev.Name)
				if kind, ok := dirs[ev.Name]; ok && dir == s.dir && ev.Has(fsnotify.Create) {
					_ = w.Add(ev.Name) // recreated: what it held before is gone
					fn(store.Change{Kind: kind})
					continue
				}
				if c, ok := fileChange(dirs[dir], base); ok {
					fn(c)
				}
			case _, ok := <-w.Errors:
				if !ok {
					return
				}
				all() // an overflow: events were lost
			}
		}
	})
	return sub, nil
}

// fileChange is the change a file named base stands for in the directory
// of kind ("": not a watched directory).
func fileChange(kind store.ChangeKind, base string) (store.Change, bool) {
	switch kind {
	case store.ChangeRequest:
		return requestChange(base)
	case store.ChangeMember:
		if name, ok := strings.CutSuffix(base, ".json"); ok && protocol.ValidateName(name) == nil {
			return store.Change{Kind: store.ChangeMember, Name: name}, true
		}
	case store.ChangeRestart:
		if protocol.ValidateName(base) == nil { // a temp file's leading dot is no name's
			return store.Change{Kind: store.ChangeRestart, Name: base}, true
		}
	}
	return store.Change{}, false
}

// requestChange is the change a file of requests/ stands for: a record or
// a decision, not a temp file or the archive.
func requestChange(base string) (store.Change, bool) {
	id, ok := strings.CutSuffix(base, ".json")
	if !ok {
		id, ok = strings.CutSuffix(base, ".decision")
	}
	if !ok || strings.HasPrefix(base, ".") || protocol.ValidateID(id) != nil {
		return store.Change{}, false
	}
	return store.Change{Kind: store.ChangeRequest, Name: id}, true
}
