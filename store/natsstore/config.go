package natsstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"huddle/store"
)

// PutConfig creates config.<name> once.
func (s *Store) PutConfig(ctx context.Context, name string, data []byte) error {
	if err := store.ValidateConfigName(name); err != nil {
		return err
	}
	if _, err := s.kv.Create(ctx, keyConfig+token(name), data); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			return fmt.Errorf("config %s: %w", name, store.ErrExists)
		}
		return fmt.Errorf("config %s: %w", name, scrub(err, s.t.Secrets()))
	}
	return nil
}

// Config reads config.<name>.
func (s *Store) Config(ctx context.Context, name string) ([]byte, error) {
	if err := store.ValidateConfigName(name); err != nil {
		return nil, err
	}
	e, err := s.kv.Get(ctx, keyConfig+token(name))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, fmt.Errorf("config %s: %w", name, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", name, scrub(err, s.t.Secrets()))
	}
	return e.Value(), nil
}
