package filestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"huddle/protocol"
	"huddle/store"
	"huddle/teamdir"
)

// CreateRequest claims requests/<id>.json with O_EXCL, then fills it with
// temp+fsync+rename.
func (s *Store) CreateRequest(ctx context.Context, r *protocol.Request) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if err := r.Validate(); err != nil {
		return err
	}
	p, err := teamdir.RequestPath(s.dir, r.ID)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), teamdir.DirMode); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, teamdir.FileMode)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("request %s: %w", r.ID, store.ErrExists)
	}
	if err != nil {
		return err
	}
	f.Close()
	return writeJSON(p, r, true)
}

// Request reads the live record, else the archived one, with its decision
// applied when the record does not show it yet (and the live record
// rewritten so, finishRewrite).
func (s *Store) Request(ctx context.Context, id string) (*protocol.Request, error) {
	return s.request(ctx, id, true, false)
}

// Peek is Request that writes nothing (store.Peeker): the teammate awaiting
// a decision reads it in the instant after its link, while its resolver
// rewrites the record; writing it too would cost the decision's round trip
// a second rewrite (about a millisecond here).
func (s *Store) Peek(ctx context.Context, id string) (*protocol.Request, error) {
	return s.request(ctx, id, false, false)
}

// PeekLive is Peek of a live record only: an archived one (requests/done/)
// is not found, and not read.
func (s *Store) PeekLive(ctx context.Context, id string) (*protocol.Request, error) {
	return s.request(ctx, id, false, true)
}

// request is Request; finish says whether to rewrite the live record from
// its decision; live, whether an archived record counts as not found (a
// live record's decision is still read from the archive when only it
// moved: an archive cut between the two).
func (s *Store) request(ctx context.Context, id string, finish, live bool) (*protocol.Request, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	r, err := s.loadRecord(id, live)
	var ce *store.CorruptError
	if errors.As(err, &ce) {
		return s.fromDecision(ce)
	}
	if err != nil {
		return nil, err
	}
	if r.Status.IsTerminal() {
		return r, nil
	}
	d, err := s.readDecision(id)
	if errors.Is(err, store.ErrNotFound) {
		return r, nil
	}
	if err != nil {
		return nil, err
	}
	if err := store.ApplyDecision(r, *d); err != nil {
		return nil, err
	}
	if finish {
		s.finishRewrite(r)
	}
	return r, nil
}

// fromDecision is a corrupt record's error, with what its decision alone
// says when it has one.
func (s *Store) fromDecision(ce *store.CorruptError) (*protocol.Request, error) {
	d, err := s.readDecision(ce.Name)
	return store.Corrupted(ce, d, err)
}

// finishRewrite writes the live record of r, just brought in line with its
// decision, when the resolver's own rewrite has not yet (or a crash kept it
// from it): a reader of the files (a foreign agent, huddle show) must not
// find pending beside a decision. A record archived meanwhile is left
// alone: writing it would bring it back. What fails is left to the
// runtime, which the decision file wakes.
func (s *Store) finishRewrite(r *protocol.Request) {
	if s.archived(r.ID) {
		return
	}
	live, err := teamdir.RequestPath(s.dir, r.ID)
	if err != nil || !exists(live) {
		return
	}
	_ = writeJSON(live, r, false) // not fsync'd: the decision file is the durable truth
}

// archivedReads counts this process's reads of archived records and
// decisions (ArchivedReads).
var archivedReads atomic.Int64

// ArchivedReads is how many archived records and decisions this process
// has read: a runtime's ticks read none, however long the history grows,
// and a test checks it.
func ArchivedReads() int64 { return archivedReads.Load() }

// loadRecord reads requests/<id>.json or, unless liveOnly,
// requests/done/<id>.json. An empty file is a record being created: not
// there yet.
func (s *Store) loadRecord(id string, liveOnly bool) (*protocol.Request, error) {
	live, err := teamdir.RequestPath(s.dir, id)
	if err != nil {
		return nil, err
	}
	places := []string{live, ""}
	if liveOnly {
		places = places[:1]
	}
	for i, p := range places {
		if i == 1 {
			// Not live: archived. The path is made only then: a list of the
			// live records makes one path each, not two.
			p, _ = teamdir.DoneRequestPath(s.dir, id)
		}
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) || (err == nil && len(b) == 0) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if i == 1 {
			archivedReads.Add(1)
		}
		var r protocol.Request
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, &store.CorruptError{Name: id, File: rel(s.dir, p), Err: err.Error()}
		}
		if r.ID != id {
			return nil, &store.CorruptError{Name: id, File: rel(s.dir, p), Err: fmt.Sprintf("the record names %q", r.ID)}
		}
		return &r, nil
	}
	return nil, fmt.Errorf("request %s: %w", id, store.ErrNotFound)
}

// Requests reads every live and archived record, oldest first, and names
// the corrupt ones.
func (s *Store) Requests(ctx context.Context) ([]protocol.Request, []store.CorruptError, error) {
	return s.list(ctx, teamdir.RequestsDirPath(s.dir), teamdir.DoneDirPath(s.dir))
}

// LiveRequests reads the records in requests/, not requests/done/.
func (s *Store) LiveRequests(ctx context.Context) ([]protocol.Request, []store.CorruptError, error) {
	return s.list(ctx, teamdir.RequestsDirPath(s.dir))
}

// Reschedule rewrites requests/<id>.json with the new deadline,
// temp+fsync+rename, unless a decision is there (a runtime's
// resumeDeadlines gives a pending request back the time the team was down).
func (s *Store) Reschedule(ctx context.Context, id string, deadline time.Time) (*protocol.Request, error) {
	r, err := s.Request(ctx, id)
	if err != nil || r.Status != protocol.RequestPending {
		return r, err
	}
	if _, err := s.readDecision(id); !errors.Is(err, store.ErrNotFound) {
		return s.Request(ctx, id) // decided meanwhile (or unreadable): leave it
	}
	p, err := teamdir.RequestPath(s.dir, id)
	if err != nil {
		return nil, err
	}
	if !exists(p) {
		return s.Request(ctx, id) // archived meanwhile
	}
	r.Deadline = deadline.UTC()
	if err := writeJSON(p, r, true); err != nil {
		return nil, fmt.Errorf("reschedule %s: %w", id, err)
	}
	return r, nil
}

// Archive moves final records and their decisions to requests/done/
// (teamdir.ArchiveAll: one sync for the batch).
func (s *Store) Archive(ctx context.Context, ids ...string) error {
	var errs []error
	var batch []teamdir.Archival
	for _, id := range ids {
		r, err := s.request(ctx, id, true, true)
		if errors.Is(err, store.ErrNotFound) {
			continue // archived already: not read again
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !r.Status.IsTerminal() {
			errs = append(errs, fmt.Errorf("archive %s: it is %s, not final", id, r.Status))
			continue
		}
		b, _ := json.Marshal(store.DecisionOf(r))
		batch = append(batch, teamdir.Archival{ID: id, Decision: b})
	}
	if len(batch) > 0 {
		errs = append(errs, teamdir.ArchiveAll(s.dir, batch)...)
	}
	return errors.Join(errs...)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// list reads the records in dirs, the first a record is found in winning,
// oldest first, and names the corrupt ones.
func (s *Store) list(ctx context.Context, dirs ...string) ([]protocol.Request, []store.CorruptError, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, nil, err
	}
	seen := map[string]bool{}
	var out []protocol.Request
	var bad []store.CorruptError
	for i, dir := range dirs {
		ents, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, nil, err
		}
		decided := map[string]bool{}
		for _, e := range ents {
			if id, ok := strings.CutSuffix(e.Name(), ".decision"); ok {
				decided[id] = true
			}
		}
		for _, e := range ents {
			id, ok := strings.CutSuffix(e.Name(), ".json")
			if !ok || e.IsDir() || strings.HasPrefix(id, ".") || seen[id] || protocol.ValidateID(id) != nil {
				continue
			}
			// A record listed live and archived before it is read is not
			// read from the archive: a live listing (every tick) reads no
			// archived record.
			r, err := s.request(ctx, id, !decided[id], i == 0)
			if err != nil {
				if ce := (*store.CorruptError)(nil); errors.As(err, &ce) {
					seen[id] = true
					bad = append(bad, *ce)
				}
				continue // else archived or removed since the listing
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

// Decide links requests/<id>.decision exclusively (teamdir.LinkExclusive),
// then rewrites the record from it.
func (s *Store) Decide(ctx context.Context, id string, d store.Decision) (*protocol.Request, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	if err := protocol.ValidateID(id); err != nil {
		return nil, err
	}
	r, err := s.Request(ctx, id)
	if err != nil {
		return nil, err
	}
	return s.decide(ctx, r, d)
}

// decide is Decide on a record already read: the read may be stale by the
// claim, which the decision file settles.
func (s *Store) decide(ctx context.Context, r *protocol.Request, d store.Decision) (*protocol.Request, error) {
	id := r.ID
	if d.At.IsZero() {
		d.At = time.Now().UTC()
	}
	if err := store.CheckDecision(r, d); err != nil {
		return nil, err
	}
	b, _ := json.Marshal(d)
	won, err := teamdir.ClaimDecision(s.dir, id, b)
	if err != nil {
		return nil, fmt.Errorf("decide %s: %w", id, err)
	}
	if won && s.archived(id) {
		// A runtime on this directory applied and archived this very
		// decision meanwhile: the archive is the record now, and writing
		// the live one would bring it back.
		return s.Request(ctx, id)
	}
	if !won {
		if w, err := s.readDecision(id); err == nil {
			st, _ := protocol.RequestPending.Next(r.Kind, w.Event)
			return nil, &store.AlreadyError{ID: id, Status: st, By: w.By}
		}
		return nil, &store.AlreadyError{ID: id, Status: "resolved", By: "someone else"}
	}
	if err := store.ApplyDecision(r, d); err != nil {
		return nil, err
	}
	live, _ := teamdir.RequestPath(s.dir, id)
	// Not fsync'd: the decision file is the durable truth.
	if err := writeJSON(live, r, false); err != nil {
		return nil, err
	}
	return r, nil
}

// readDecision reads the live decision, else the archived one.
func (s *Store) readDecision(id string) (*store.Decision, error) {
	live, err := teamdir.DecisionPath(s.dir, id)
	if err != nil {
		return nil, err
	}
	done, _ := teamdir.DoneDecisionPath(s.dir, id)
	for _, p := range []string{live, done} {
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if p == done {
			archivedReads.Add(1)
		}
		var d store.Decision
		if json.Unmarshal(b, &d) != nil || d.Event == "" {
			return nil, fmt.Errorf("decision %s: %s is incomplete", id, rel(s.dir, p))
		}
		return &d, nil
	}
	return nil, fmt.Errorf("decision %s: %w", id, store.ErrNotFound)
}

func (s *Store) archived(id string) bool { return teamdir.Archived(s.dir, id) }

// writeJSON writes v indented to path: temp+rename, fsync'd first when
// durable (teamdir's rewrite disciplines), making the directory when a
// first write finds none.
func writeJSON(path string, v any, durable bool) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	write := teamdir.ReplaceFile
	if durable {
		write = teamdir.WriteFileAtomic
	}
	err = write(path, b)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(path), teamdir.DirMode); err != nil {
			return err
		}
		err = write(path, b)
	}
	return err
}

// rel names path relative to the team directory, for error messages.
func rel(dir, path string) string {
	if r, err := filepath.Rel(dir, path); err == nil {
		return filepath.ToSlash(r)
	}
	return path
}
