package filestore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"huddle/store"
	"huddle/teamdir"
)

// PutConfig creates team.json, .puruto-ipc.json or
// ipc/<member>.puruto-ipc.json once: temp, fsync, link (never seen empty,
// never overwritten).
func (s *Store) PutConfig(ctx context.Context, name string, data []byte) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if err := store.ValidateConfigName(name); err != nil {
		return err
	}
	p := filepath.Join(s.dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), teamdir.DirMode); err != nil {
		return err
	}
	made, err := teamdir.LinkExclusive(p, data)
	if err != nil {
		return fmt.Errorf("config %s: %w", name, err)
	}
	if !made {
		return fmt.Errorf("config %s: %w", name, store.ErrExists)
	}
	return nil
}

// Config reads one configuration file.
func (s *Store) Config(ctx context.Context, name string) ([]byte, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	if err := store.ValidateConfigName(name); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(s.dir, filepath.FromSlash(name)))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("config %s: %w", name, store.ErrNotFound)
	}
	return b, err
}
