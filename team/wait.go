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
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("wait for %s: %w", id, err)
	}
	defer w.Close()
	if err := w.Add(teamdir.RequestsDirPath(dir)); err != nil {
		return nil, fmt.Errorf("wait for %s: %w", id, err)
	}
	// The first read comes after the watch is in place: an answer written
	// in between is seen by one or the other.
	for {
		r, err := currentRequest(dir, id)
		if err != nil {
			return nil, err
		}
		if r.Status != protocol.RequestPending {
			return r, nil
		}
		if err := nextChange(ctx, w, id); err != nil {
			return nil, err
		}
	}
}

// WaitMember waits until member's status record satisfies done and returns
// it, or ctx's error. Like WaitRequest it watches (members/), rereading the
// record at each event that names the member; a record not there yet or
// being replaced is read again at the next event.
func WaitMember(ctx context.Context, dir, member string, done func(*protocol.Member) bool) (*protocol.Member, error) {
	if err := protocol.ValidateName(member); err != nil {
		return nil, err
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("wait for %s: %w", member, err)
	}
	defer w.Close()
	if err := w.Add(filepath.Join(dir, teamdir.MembersDir)); err != nil {
		return nil, fmt.Errorf("wait for %s: %w", member, err)
	}
	for {
		if m, err := LoadMember(dir, member); err == nil && done(m) {
			return m, nil
		}
		if err := nextChange(ctx, w, member); err != nil {
			return nil, err
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
