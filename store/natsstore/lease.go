package natsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"huddle/protocol"
	"huddle/store"
)

// A lease is the key lease.<member>, created with Create and a per-key TTL
// (the server removes it when the TTL runs out), renewed by a publish that
// expects the revision the holder wrote last and carries a fresh TTL, and
// released by a delete that expects it too. Whoever does not hold the
// latest revision can neither renew nor release it.
type leaseValue struct {
	Holder string `json:"holder"`
	Token  string `json:"token"`
	TTLMS  int64  `json:"ttl_ms"`
}

type natsLease struct {
	s      *Store
	member string
	key    string
	val    []byte
	ttl    time.Duration
	rev    uint64
}

// minLeaseTTL is the shortest TTL the server keeps per key.
const minLeaseTTL = time.Second

// AcquireLease creates lease.<member> for holder with a TTL of ttl (at
// least a second).
func (s *Store) AcquireLease(ctx context.Context, member, holder string, ttl time.Duration) (store.Lease, error) {
	if err := protocol.ValidateName(member); err != nil {
		return nil, err
	}
	if holder == "" || ttl <= 0 {
		return nil, fmt.Errorf("lease %s: a holder and a positive ttl are needed", member)
	}
	ttl = max(ttl, minLeaseTTL).Round(time.Second)
	v := leaseValue{Holder: holder, Token: protocol.NewMessageID(), TTLMS: ttl.Milliseconds()}
	b, _ := json.Marshal(v)
	key := keyLease + token(member)
	rev, err := s.kv.Create(ctx, key, b, jetstream.KeyTTL(ttl))
	if errors.Is(err, jetstream.ErrKeyExists) {
		return nil, s.held(ctx, member, key)
	}
	if err != nil {
		return nil, fmt.Errorf("lease %s: %w", member, scrub(err, s.t.Secrets()))
	}
	return &natsLease{s: s, member: member, key: key, val: b, ttl: ttl, rev: rev}, nil
}

// LeaseHolder reads lease.<member>: none, or one past its TTL that the
// server has not removed yet, is free.
func (s *Store) LeaseHolder(ctx context.Context, member string) (*store.HeldError, error) {
	if err := protocol.ValidateName(member); err != nil {
		return nil, err
	}
	e, err := s.kv.Get(ctx, keyLease+token(member))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lease %s: %w", member, scrub(err, s.t.Secrets()))
	}
	var v leaseValue
	if json.Unmarshal(e.Value(), &v) != nil || v.Holder == "" {
		return nil, nil //nolint:nilerr // a torn value holds no lease
	}
	h := &store.HeldError{Member: member, Holder: v.Holder, Expires: e.Created().Add(time.Duration(v.TTLMS) * time.Millisecond)}
	if store.Expired(h.Expires, time.Now()) {
		return nil, nil
	}
	return h, nil
}

// held is the *HeldError for the lease at key.
func (s *Store) held(ctx context.Context, member, key string) error {
	e, err := s.kv.Get(ctx, key)
	if err != nil {
		// Expired between the two calls: say so; the caller tries again.
		return &store.HeldError{Member: member, Holder: "someone", Expires: time.Now()}
	}
	var v leaseValue
	_ = json.Unmarshal(e.Value(), &v)
	return &store.HeldError{Member: member, Holder: v.Holder, Expires: e.Created().Add(time.Duration(v.TTLMS) * time.Millisecond)}
}

func (l *natsLease) Renew(ctx context.Context) error {
	m := &nats.Msg{Subject: "$KV." + l.s.n.bucket + "." + l.key, Data: l.val}
	ack, err := l.s.js.PublishMsg(ctx, m, jetstream.WithExpectLastSequencePerSubject(l.rev), jetstream.WithMsgTTL(l.ttl))
	if err != nil {
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
			return fmt.Errorf("lease %s: %w", l.member, store.ErrLeaseLost)
		}
		return fmt.Errorf("lease %s: %w", l.member, scrub(err, l.s.t.Secrets()))
	}
	l.rev = ack.Sequence
	return nil
}

func (l *natsLease) Release(ctx context.Context) error {
	err := l.s.kv.Delete(ctx, l.key, jetstream.LastRevision(l.rev))
	if err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
			return nil // not ours any more
		}
		return fmt.Errorf("lease %s: %w", l.member, scrub(err, l.s.t.Secrets()))
	}
	return nil
}
