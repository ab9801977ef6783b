package filestore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/fsnotify/fsnotify"

	"huddle/protocol"
	"huddle/store"
	"huddle/teamdir"
)

// Watch follows requests/ and members/ with fsnotify: an event on
// requests/<id>.json or <id>.decision is a change of that request (an
// archive moves it out: a change too), one on members/<name>.json of that
// member (a heartbeat touches it: an attribute event). A watcher error (its
// queue overflowed) and a recreated directory are told as a Change with no
// Name: events may have been lost.
func (s *Store) Watch(ctx context.Context, fn func(store.Change)) (store.Subscription, error) {
	reqs, members := teamdir.RequestsDirPath(s.dir), teamdir.MembersDirPath(s.dir)
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	}
	for _, d := range []string{reqs, members} {
		if err := os.MkdirAll(d, teamdir.DirMode); err != nil {
			w.Close()
			return nil, fmt.Errorf("watch: %w", err)
		}
	}
	for _, d := range []string{s.dir, reqs, members} {
		if err := w.Add(d); err != nil {
			w.Close()
			return nil, fmt.Errorf("watch: %w", err)
		}
	}
	all := func() {
		fn(store.Change{Kind: store.ChangeRequest})
		fn(store.Change{Kind: store.ChangeMember})
	}
	ctx, cancel := context.WithCancel(ctx)
	sub := &subscription{s: s, cancel: cancel, done: make(chan struct{})}
	s.track(sub, true)
	go func() {
		defer close(sub.done)
		defer w.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				switch dir, base := filepath.Dir(ev.Name), filepath.Base(ev.Name); {
				case dir == reqs:
					if c, ok := requestChange(base); ok {
						fn(c)
					}
				case dir == members:
					if name, ok := strings.CutSuffix(base, ".json"); ok && protocol.ValidateName(name) == nil {
						fn(store.Change{Kind: store.ChangeMember, Name: name})
					}
				case dir == s.dir && ev.Has(fsnotify.Create) && (ev.Name == reqs || ev.Name == members):
					_ = w.Add(ev.Name) // recreated: what it held before is gone
					all()
				}
			case _, ok := <-w.Errors:
				if !ok {
					return
				}
				all() // an overflow: events were lost
			}
		}
	}()
	return sub, nil
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
