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

// LeasesDir is where the file store keeps the members' runtime leases: one
// leases/<member>.json each, {"holder","token","expires"}, rewritten
// temp+rename while the directory's flock is held.
const LeasesDir = "leases"

type leaseRecord struct {
	Holder  string    `json:"holder"`
	Token   string    `json:"token"`
	Expires time.Time `json:"expires"`
}

type fileLease struct {
	s      *Store
	member string
	rec    leaseRecord
	ttl    time.Duration
}

// AcquireLease takes leases/<member>.json when it is absent, expired or
// released. (huddle's runtime on a directory takes none: its flock on
// runtime.lock is every lease.)
func (s *Store) AcquireLease(ctx context.Context, member, holder string, ttl time.Duration) (store.Lease, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	if err := protocol.ValidateName(member); err != nil {
		return nil, err
	}
	if holder == "" || ttl <= 0 {
		return nil, fmt.Errorf("lease %s: a holder and a positive ttl are needed", member)
	}
	l := &fileLease{s: s, member: member, ttl: ttl, rec: leaseRecord{Holder: holder, Token: protocol.NewMessageID()}}
	err := s.withLeases(func(dir string) error {
		cur, err := readLease(dir, member)
		if err != nil {
			return err
		}
		now := time.Now()
		if cur != nil && !store.Expired(cur.Expires, now) {
			return &store.HeldError{Member: member, Holder: cur.Holder, Expires: cur.Expires}
		}
		l.rec.Expires = now.Add(ttl)
		return writeLease(dir, member, &l.rec)
	})
	if err != nil {
		return nil, err
	}
	return l, nil
}

// LeaseHolder is the directory's runtime while one holds runtime.lock (its
// flock is every lease), else leases/<member>.json while it runs.
func (s *Store) LeaseHolder(ctx context.Context, member string) (*store.HeldError, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	if err := protocol.ValidateName(member); err != nil {
		return nil, err
	}
	if rt, err := teamdir.ProbeRuntime(s.dir); err == nil && rt.Running {
		return &store.HeldError{Member: member, Holder: fmt.Sprintf("the runtime of %s (pid %d)", s.dir, rt.Last.PID)}, nil
	}
	var h *store.HeldError
	err := s.withLeases(func(dir string) error {
		cur, err := readLease(dir, member)
		if cur != nil && !store.Expired(cur.Expires, time.Now()) {
			h = &store.HeldError{Member: member, Holder: cur.Holder, Expires: cur.Expires}
		}
		return err
	})
	return h, err
}

func (l *fileLease) Renew(ctx context.Context) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	return l.s.withLeases(func(dir string) error {
		cur, err := readLease(dir, l.member)
		if err != nil {
			return err
		}
		now := time.Now()
		if cur == nil || cur.Token != l.rec.Token || store.Expired(cur.Expires, now) {
			return fmt.Errorf("lease %s: %w", l.member, store.ErrLeaseLost)
		}
		l.rec.Expires = now.Add(l.ttl)
		return writeLease(dir, l.member, &l.rec)
	})
}

func (l *fileLease) Release(ctx context.Context) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	return l.s.withLeases(func(dir string) error {
		cur, err := readLease(dir, l.member)
		if err != nil || cur == nil || cur.Token != l.rec.Token {
			return err // not ours any more: nothing to give up
		}
		err = os.Remove(filepath.Join(dir, l.member+".json"))
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	})
}

// withLeases runs fn under the exclusive flock of the leases directory.
func (s *Store) withLeases(fn func(dir string) error) error {
	dir := filepath.Join(s.dir, LeasesDir)
	if err := os.MkdirAll(dir, teamdir.DirMode); err != nil {
		return fmt.Errorf("leases: %w", err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("leases: %w", err)
	}
	defer d.Close()
	if err := teamdir.LockExclusive(d); err != nil {
		return fmt.Errorf("leases: %w", err)
	}
	defer teamdir.Unlock(d)
	return fn(dir)
}

// readLease reads a member's lease; nil when there is none. A record that
// does not parse (torn by a power loss) counts as none.
func readLease(dir, member string) (*leaseRecord, error) {
	b, err := os.ReadFile(filepath.Join(dir, member+".json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lease %s: %w", member, err)
	}
	var r leaseRecord
	if uerr := json.Unmarshal(b, &r); uerr != nil || r.Token == "" {
		return nil, nil //nolint:nilerr // a torn record holds no lease
	}
	return &r, nil
}

func writeLease(dir, member string, r *leaseRecord) error {
	b, _ := json.Marshal(r)
	return teamdir.ReplaceFile(filepath.Join(dir, member+".json"), append(b, '\n'))
}
