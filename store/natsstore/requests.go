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

// Keys of the team's bucket.
const (
	keyRequest  = "req."
	keyDecision = "dec."
	keyArchived = "done."
	keyMember   = "member."
	keyLease    = "lease."
	keyConfig   = "config."
)

// CreateRequest creates req.<id> with Create: it fails when the key exists.
func (s *Store) CreateRequest(ctx context.Context, r *protocol.Request) error {
	if err := r.Validate(); err != nil {
		return err
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if _, err := s.kv.Create(ctx, keyRequest+token(r.ID), b); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			return fmt.Errorf("request %s: %w", r.ID, store.ErrExists)
		}
		return fmt.Errorf("request %s: %w", r.ID, scrub(err, s.t.Secrets()))
	}
	return nil
}

// Request reads req.<id>, else the archived done.<id>, with dec.<id>
// applied while the record is pending.
func (s *Store) Request(ctx context.Context, id string) (*protocol.Request, error) {
	if err := protocol.ValidateID(id); err != nil {
		return nil, err
	}
	r, err := s.record(ctx, keyRequest, id)
	if errors.Is(err, store.ErrNotFound) {
		// Archive writes done.<id> before it purges req.<id>, so one of
		// the two is there.
		r, err = s.record(ctx, keyArchived, id)
	}
	return r, err
}

// record reads the record at prefix+id, with dec.<id> applied while it is
// pending.
func (s *Store) record(ctx context.Context, prefix, id string) (*protocol.Request, error) {
	var r protocol.Request
	err := s.getJSON(ctx, prefix+token(id), &r)
	if err == nil && r.ID != id {
		err = &store.CorruptError{File: prefix + token(id), Err: fmt.Sprintf("the record names %q", r.ID)}
	}
	var ce *store.CorruptError
	if errors.As(err, &ce) {
		ce.Name = id
		return s.fromDecision(ctx, ce)
	}
	if err != nil {
		return nil, fmt.Errorf("request %s: %w", id, err)
	}
	if r.Status.IsTerminal() {
		return &r, nil
	}
	d, err := s.decision(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return &r, nil
	}
	if err != nil {
		return nil, err
	}
	if err := store.ApplyDecision(&r, *d); err != nil {
		return nil, err
	}
	return &r, nil
}

// fromDecision is a corrupt record's error, with what its decision alone
// says when it has one.
func (s *Store) fromDecision(ctx context.Context, ce *store.CorruptError) (*protocol.Request, error) {
	d, err := s.decision(ctx, ce.Name)
	return store.Corrupted(ce, d, err)
}

func (s *Store) decision(ctx context.Context, id string) (*store.Decision, error) {
	var d store.Decision
	if err := s.getJSON(ctx, keyDecision+token(id), &d); err != nil {
		return nil, fmt.Errorf("decision %s: %w", id, err)
	}
	return &d, nil
}

// Requests reads every record, live and archived, oldest first.
func (s *Store) Requests(ctx context.Context) ([]protocol.Request, []store.CorruptError, error) {
	return s.list(ctx, keyRequest, keyArchived)
}

// LiveRequests reads the records under req., not the archived ones.
func (s *Store) LiveRequests(ctx context.Context) ([]protocol.Request, []store.CorruptError, error) {
	return s.list(ctx, keyRequest)
}

// Reschedule rewrites req.<id> with the new deadline by Update at the
// revision read, so a record rewritten meanwhile (its decision applied) is
// read again rather than overwritten; a decision in dec.<id> leaves it.
func (s *Store) Reschedule(ctx context.Context, id string, deadline time.Time) (*protocol.Request, error) {
	if err := protocol.ValidateID(id); err != nil {
		return nil, err
	}
	for {
		e, err := s.kv.Get(ctx, keyRequest+token(id))
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return s.Request(ctx, id) // archived, or no such request
		}
		if err != nil {
			return nil, fmt.Errorf("request %s: %w", id, scrub(err, s.t.Secrets()))
		}
		var r protocol.Request
		if err := json.Unmarshal(e.Value(), &r); err != nil {
			return nil, fmt.Errorf("request %s: %s is corrupt: %w", id, e.Key(), err)
		}
		if r.Status != protocol.RequestPending {
			return &r, nil
		}
		if _, err := s.decision(ctx, id); !errors.Is(err, store.ErrNotFound) {
			return s.Request(ctx, id) // decided: the decision is the truth
		}
		r.Deadline = deadline.UTC()
		b, err := json.Marshal(&r)
		if err != nil {
			return nil, err
		}
		_, err = s.kv.Update(ctx, e.Key(), b, e.Revision())
		if err == nil {
			return &r, nil
		}
		if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return nil, fmt.Errorf("reschedule %s: %w", id, scrub(err, s.t.Secrets()))
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// Rewritten since it was read: read it again.
	}
}

// Archive copies a final record to done.<id>, then purges req.<id> with a
// marker that the server removes after markerTTL, so that req.'s listing
// (the bucket stream's subjects) no longer holds it: the live listing
// costs what is live, not the team's history. dec.<id> stays, so a later
// Decide still loses. A Decide that rewrites req.<id> after the purge
// brings the final record back to the live listing, and the next Archive
// takes it out again.
func (s *Store) Archive(ctx context.Context, ids ...string) error {
	var errs []error
	for _, id := range ids {
		errs = append(errs, s.archive(ctx, id))
	}
	return errors.Join(errs...)
}

func (s *Store) archive(ctx context.Context, id string) error {
	r, err := s.Request(ctx, id)
	if err != nil {
		return err
	}
	if !r.Status.IsTerminal() {
		return fmt.Errorf("archive %s: it is %s, not final", id, r.Status)
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if _, err := s.kv.Put(ctx, keyArchived+token(id), b); err != nil {
		return fmt.Errorf("archive %s: %w", id, scrub(err, s.t.Secrets()))
	}
	if err := s.kv.Purge(ctx, keyRequest+token(id), jetstream.PurgeTTL(markerTTL)); err != nil {
		return fmt.Errorf("archive %s: %w", id, scrub(err, s.t.Secrets()))
	}
	return nil
}

// markerTTL is how long a purged key's marker stays: the server's least.
const markerTTL = time.Second

// list reads the records under each prefix, the first a record is found
// under winning, oldest first, and names those that do not read.
func (s *Store) list(ctx context.Context, prefixes ...string) ([]protocol.Request, []store.CorruptError, error) {
	seen := map[string]bool{}
	var out []protocol.Request
	var bad []store.CorruptError
	for _, prefix := range prefixes {
		keys, err := s.keys(ctx, prefix)
		if err != nil {
			return nil, nil, fmt.Errorf("requests: %w", err)
		}
		for _, k := range keys {
			id := strings.ReplaceAll(strings.TrimPrefix(k, prefix), "=", ".")
			if seen[id] {
				continue
			}
			r, err := s.record(ctx, prefix, id)
			var ce *store.CorruptError
			if errors.As(err, &ce) {
				seen[id] = true
				bad = append(bad, *ce)
				continue
			}
			if err != nil {
				continue // archived or removed meanwhile, or not a record
			}
			seen[id] = true
			out = append(out, *r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.Before(out[j].Created)
		}
		return out[i].ID < out[j].ID
	})
	return out, bad, nil
}

// Decide creates dec.<id> with Create: of any number of resolvers on any
// number of connections, the server lets exactly one create it. The winner
// then rewrites the record from it; the decision stays the truth.
func (s *Store) Decide(ctx context.Context, id string, d store.Decision) (*protocol.Request, error) {
	r, err := s.Request(ctx, id)
	if err != nil {
		return nil, err
	}
	if d.At.IsZero() {
		d.At = time.Now().UTC()
	}
	if err := store.CheckDecision(r, d); err != nil {
		return nil, err
	}
	b, _ := json.Marshal(d)
	if _, err := s.kv.Create(ctx, keyDecision+token(id), b); err != nil {
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return nil, fmt.Errorf("decide %s: %w", id, scrub(err, s.t.Secrets()))
		}
		if w, err := s.decision(ctx, id); err == nil {
			st, _ := protocol.RequestPending.Next(r.Kind, w.Event)
			return nil, &store.AlreadyError{ID: id, Status: st, By: w.By}
		}
		return nil, &store.AlreadyError{ID: id, Status: "resolved", By: "someone else"}
	}
	if err := store.ApplyDecision(r, d); err != nil {
		return nil, err
	}
	rb, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	// The decision is stored and readers apply it: a record that failed to
	// be rewritten only lags behind it, so the failure is not the caller's.
	_, _ = s.kv.Put(ctx, keyRequest+token(id), rb)
	return r, nil
}

// getJSON reads key into v: store.ErrNotFound when it is absent or deleted.
func (s *Store) getJSON(ctx context.Context, key string, v any) error {
	e, err := s.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return store.ErrNotFound
	}
	if err != nil {
		return scrub(err, s.t.Secrets())
	}
	if err := json.Unmarshal(e.Value(), v); err != nil {
		return &store.CorruptError{File: key, Err: err.Error()}
	}
	return nil
}

// keys lists the bucket's keys under prefix.
func (s *Store) keys(ctx context.Context, prefix string) ([]string, error) {
	// The bucket's stream state, not ListKeys: a key listing is a consumer
	// that stops when it has nothing pending, and a key rewritten during it
	// (a heartbeat, a status move) can land after that point and be missed
	// (TestKeysListedUnderRewrites). The server reports the subjects that
	// hold a message at one instant; a rewrite replaces a key's message
	// without that subject ever holding none.
	str, err := s.js.Stream(ctx, "KV_"+s.n.bucket)
	if err != nil {
		return nil, scrub(err, s.t.Secrets())
	}
	subject := "$KV." + s.n.bucket + "."
	info, err := str.Info(ctx, jetstream.WithSubjectFilter(subject+prefix+">"))
	if err != nil {
		return nil, scrub(err, s.t.Secrets())
	}
	out := make([]string, 0, len(info.State.Subjects))
	for subj := range info.State.Subjects {
		out = append(out, strings.TrimPrefix(subj, subject))
	}
	sort.Strings(out)
	return out, nil
}
