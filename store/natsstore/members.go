package natsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"huddle/protocol"
	"huddle/store"
)

// PutMember puts member.<name>; the entry's time, set by the server, is
// when the member was last seen.
func (s *Store) PutMember(ctx context.Context, m *protocol.Member) error {
	if err := m.Validate(); err != nil {
		return err
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if _, err := s.kv.Put(ctx, keyMember+token(m.Name), b); err != nil {
		return fmt.Errorf("member %s: %w", m.Name, scrub(err, s.t.Secrets()))
	}
	return nil
}

// Heartbeat writes member.<name> again, unchanged, as an update of the
// revision it read: a record written meanwhile is a heartbeat itself, and
// is never set back.
func (s *Store) Heartbeat(ctx context.Context, member string) error {
	if err := protocol.ValidateName(member); err != nil {
		return err
	}
	key := keyMember + token(member)
	e, err := s.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("heartbeat %s: no member record: %w", member, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("heartbeat %s: %w", member, scrub(err, s.t.Secrets()))
	}
	if _, err := s.kv.Update(ctx, key, e.Value(), e.Revision()); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
		return fmt.Errorf("heartbeat %s: %w", member, scrub(err, s.t.Secrets()))
	}
	return nil
}

// Members reads every member.<name>, and names those that do not read.
func (s *Store) Members(ctx context.Context, lostAfter time.Duration) ([]store.MemberState, []store.CorruptError, error) {
	keys, err := s.keys(ctx, keyMember)
	if err != nil {
		return nil, nil, fmt.Errorf("members: %w", err)
	}
	now := time.Now()
	var out []store.MemberState
	var bad []store.CorruptError
	for _, k := range keys {
		ms, err := s.readMember(ctx, k, now, lostAfter)
		var ce *store.CorruptError
		switch {
		case errors.As(err, &ce):
			bad = append(bad, *ce)
		case err == nil:
			out = append(out, *ms)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	sort.Slice(bad, func(i, j int) bool { return bad[i].Name < bad[j].Name })
	return out, bad, nil
}

// Member reads member.<name> alone.
func (s *Store) Member(ctx context.Context, name string, lostAfter time.Duration) (*store.MemberState, error) {
	if err := protocol.ValidateName(name); err != nil {
		return nil, err
	}
	ms, err := s.readMember(ctx, keyMember+token(name), time.Now(), lostAfter)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, fmt.Errorf("member %s: %w", name, store.ErrNotFound)
	}
	if err != nil {
		return nil, scrub(err, s.t.Secrets())
	}
	return ms, nil
}

// readMember reads the record at key; Seen is the server's timestamp of
// the entry. A record that does not parse, or names another key, is an
// error.
func (s *Store) readMember(ctx context.Context, key string, now time.Time, lostAfter time.Duration) (*store.MemberState, error) {
	e, err := s.kv.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	var m protocol.Member
	name := strings.ReplaceAll(strings.TrimPrefix(key, keyMember), "=", ".")
	if err := json.Unmarshal(e.Value(), &m); err != nil {
		return nil, &store.CorruptError{Name: name, File: key, Err: err.Error()}
	}
	if keyMember+token(m.Name) != key {
		return nil, &store.CorruptError{Name: name, File: key, Err: fmt.Sprintf("the record names %q", m.Name)}
	}
	seen := e.Created()
	lost := lostAfter != store.RecordOnly && store.IsLive(m.Status) && now.Sub(seen) > lostAfter
	return &store.MemberState{Member: m, Seen: seen, Lost: lost}, nil
}
