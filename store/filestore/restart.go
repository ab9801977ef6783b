package filestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"huddle/protocol"
	"huddle/store"
	"huddle/teamdir"
)

// restartAsk is restart/<member>, as the team directory's runtime reads it
// (team/restart.go): when and by whom.
type restartAsk struct {
	At string `json:"at"`
	By string `json:"by"`
}

// AskRestart creates restart/<member> once. A runtime runs the member when
// the team directory's runtime lock is held or the member's lease is.
func (s *Store) AskRestart(ctx context.Context, member, by string) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if err := protocol.ValidateName(member); err != nil {
		return err
	}
	running, err := s.runtimeRuns(member)
	if err != nil {
		return err
	}
	if !running {
		return fmt.Errorf("restart %s: %w", member, store.ErrNoRuntime)
	}
	p, err := teamdir.RestartPath(s.dir, member)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), teamdir.DirMode); err != nil {
		return fmt.Errorf("restart %s: %w", member, err)
	}
	b, _ := json.Marshal(restartAsk{At: protocol.FormatTime(time.Now()), By: by})
	created, err := teamdir.LinkExclusive(p, append(b, '\n'))
	if err != nil {
		return fmt.Errorf("restart %s: %w", member, err)
	}
	if !created {
		return fmt.Errorf("restart %s: %w", member, store.ErrExists)
	}
	return nil
}

// runtimeRuns reports whether a runtime would see a restart of member: the
// directory's runtime, or the holder of the member's lease.
func (s *Store) runtimeRuns(member string) (bool, error) {
	st, err := teamdir.ProbeRuntime(s.dir)
	if err != nil {
		return false, err
	}
	if st.Running {
		return true, nil
	}
	var held bool
	err = s.withLeases(func(dir string) error {
		cur, err := readLease(dir, member)
		held = cur != nil && !store.Expired(cur.Expires, time.Now())
		return err
	})
	return held, err
}

// TakeRestart reads and removes restart/<member>: the taker is the one
// whose removal succeeds.
func (s *Store) TakeRestart(ctx context.Context, member string) ([]byte, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	if err := protocol.ValidateName(member); err != nil {
		return nil, err
	}
	p, err := teamdir.RestartPath(s.dir, member)
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(p)
	if err == nil {
		err = os.Remove(p)
	}
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("restart %s: %w", member, err)
	}
	return raw, nil
}
