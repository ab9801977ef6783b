package natsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"huddle/protocol"
	"huddle/store"
)

// keyRestart is restart.<member>: a restart asked of the runtime that
// holds lease.<member>, which notices it on its next tick and deletes it.
const keyRestart = "restart."

// restartAsk is the value of restart.<member>, as restart/<member> holds
// on a team directory.
type restartAsk struct {
	At string `json:"at"`
	By string `json:"by"`
}

// AskRestart creates restart.<member> with Create, once lease.<member> is
// seen held.
func (s *Store) AskRestart(ctx context.Context, member, by string) error {
	if err := protocol.ValidateName(member); err != nil {
		return err
	}
	if _, err := s.kv.Get(ctx, keyLease+token(member)); err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return fmt.Errorf("restart %s: %w", member, store.ErrNoRuntime)
		}
		return fmt.Errorf("restart %s: %w", member, scrub(err, s.t.Secrets()))
	}
	b, _ := json.Marshal(restartAsk{At: protocol.FormatTime(time.Now()), By: by})
	if _, err := s.kv.Create(ctx, keyRestart+token(member), b); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			return fmt.Errorf("restart %s: %w", member, store.ErrExists)
		}
		return fmt.Errorf("restart %s: %w", member, scrub(err, s.t.Secrets()))
	}
	return nil
}

// TakeRestart deletes restart.<member> at the revision it read: of two
// takers, one gets it.
func (s *Store) TakeRestart(ctx context.Context, member string) ([]byte, error) {
	if err := protocol.ValidateName(member); err != nil {
		return nil, err
	}
	key := keyRestart + token(member)
	e, err := s.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("restart %s: %w", member, scrub(err, s.t.Secrets()))
	}
	if err := s.kv.Delete(ctx, key, jetstream.LastRevision(e.Revision())); err != nil {
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
			return nil, nil // another took it
		}
		return nil, fmt.Errorf("restart %s: %w", member, scrub(err, s.t.Secrets()))
	}
	return e.Value(), nil
}
