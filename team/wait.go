package team

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/fsnotify/fsnotify"

	"huddle/protocol"
	"huddle/teamdir"
)

// WaitRequest waits until request id leaves pending and returns its final
// record, or ctx's error. It watches requests/ with fsnotify, not a timer:
// the record's rewrite (temp + rename), its decision file and its move to
// requests/done/ (the live record's removal) all name the id there. A
// watcher error or overflow rereads the record, so nothing is missed.
func WaitRequest(ctx context.Context, dir, id string) (*protocol.Request, error) {
	if err := protocol.ValidateID(id); err != nil {
		return nil, err
	}
	var r *protocol.Request
	err := waitIn(ctx, teamdir.RequestsDirPath(dir), id, func() (bool, error) {
		var err error
		r, err = currentRequest(dir, id)
		return err == nil && r.Status != protocol.RequestPending, err
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// WaitMember waits until member's status record satisfies done and returns
// it, or ctx's error. Like WaitRequest it watches (members/), rereading the
// record at each event that names the member; a record not there yet or
// being replaced is read again at the next event.
func WaitMember(ctx context.Context, dir, member string, done func(*protocol.Member) bool) (*protocol.Member, error) {
	if err := protocol.ValidateName(member); err != nil {
		return nil, err
	}
	var m *protocol.Member
	err := waitIn(ctx, teamdir.MembersDirPath(dir), member, func() (bool, error) {
		var err error
		m, err = LoadMember(dir, member)
		return err == nil && done(m), nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// waitIn watches the directory watched and calls settled first and then at
// every event whose file name holds name, until it reports true or an
// error, or ctx ends. The first call comes after the watch is in place: a
// change written in between is seen by one or the other.
func waitIn(ctx context.Context, watched, name string, settled func() (bool, error)) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("wait for %s: %w", name, err)
	}
	defer w.Close()
	if err := w.Add(watched); err != nil {
		return fmt.Errorf("wait for %s: %w", name, err)
	}
	for {
		if ok, err := settled(); ok || err != nil {
			return err
		}
		if err := nextChange(ctx, w, name); err != nil {
			return err
		}
	}
}

// currentRequest is id's record with its decision applied (the decision
// file is the truth when the record's rewrite was interrupted).
func currentRequest(dir, id string) (*protocol.Request, error) {
	r, err := LoadRequest(dir, id)
	if err != nil {
		return nil, err
	}
	if r.Status == protocol.RequestPending {
		if applied, err := ApplyDecision(dir, id); err == nil {
			return applied, nil
		}
	}
	return r, nil
}

// nextChange returns at the next event whose file name holds id, or at a
// watcher error (then the caller rereads), or with ctx's error.
func nextChange(ctx context.Context, w *fsnotify.Watcher, id string) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, ok := <-w.Events:
			if !ok {
				return errors.New("the watch ended")
			}
			// <id>.json, <id>.decision, and the temporary files of their
			// writes; members/<name>.json and its.
			if strings.Contains(filepath.Base(ev.Name), id) {
				return nil
			}
		case _, ok := <-w.Errors:
			if !ok {
				return errors.New("the watch ended")
			}
			return nil // an overflow: reread
		}
	}
}
