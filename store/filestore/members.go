package filestore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"huddle/protocol"
	"huddle/store"
	"huddle/teamdir"
)

// PutMember rewrites members/<name>.json (temp+rename).
// Its modification time is when the member was last seen.
func (s *Store) PutMember(ctx context.Context, m *protocol.Member) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if err := m.Validate(); err != nil {
		return err
	}
	p, err := teamdir.MemberPath(s.dir, m.Name)
	if err != nil {
		return err
	}
	return writeJSON(p, m, false)
}

// Heartbeat touches members/<name>.json: its modification time is the
// heartbeat, as runtime.lock's is the runtime's.
func (s *Store) Heartbeat(ctx context.Context, member string) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	p, err := teamdir.MemberPath(s.dir, member)
	if err != nil {
		return err
	}
	now := time.Now()
	if err := os.Chtimes(p, now, now); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("heartbeat %s: no member record: %w", member, store.ErrNotFound)
		}
		return fmt.Errorf("heartbeat %s: %w", member, err)
	}
	return nil
}

// Members reads members/*.json, and names those that do not read.
func (s *Store) Members(ctx context.Context, lostAfter time.Duration) ([]store.MemberState, []store.CorruptError, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, nil, err
	}
	dir := teamdir.MembersDirPath(s.dir)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var bad []store.CorruptError
	now := time.Now()
	rt := s.runtime()
	var out []store.MemberState
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || e.IsDir() || protocol.ValidateName(name) != nil {
			continue
		}
		ms, err := s.readMember(name, now, lostAfter, rt)
		var ce *store.CorruptError
		switch {
		case errors.As(err, &ce):
			bad = append(bad, *ce)
		case err == nil:
			out = append(out, *ms)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, bad, nil
}

// Member reads members/<name>.json alone.
func (s *Store) Member(ctx context.Context, name string, lostAfter time.Duration) (*store.MemberState, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	if err := protocol.ValidateName(name); err != nil {
		return nil, err
	}
	rt := runtimeLiveness{running: true} // RecordOnly: no verdict, no probe
	if lostAfter != store.RecordOnly {
		rt = s.runtime()
	}
	ms, err := s.readMember(name, time.Now(), lostAfter, rt)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("member %s: %w", name, store.ErrNotFound)
	}
	return ms, err
}

// runtimeLiveness is what runtime.lock says of the members: nothing when
// no runtime ever ran the directory (their records' modification times,
// heartbeats, say when they were seen), else whether one runs it now.
type runtimeLiveness struct {
	locked  bool // a runtime ran here: runtime.lock is there
	running bool // and holds its flock now
}

// runtime probes runtime.lock. A probe that fails reads as no lock: the
// heartbeats decide.
func (s *Store) runtime() runtimeLiveness {
	if _, err := os.Stat(teamdir.RuntimeLockPath(s.dir)); err != nil {
		return runtimeLiveness{}
	}
	st, err := teamdir.ProbeRuntime(s.dir)
	if err != nil {
		return runtimeLiveness{}
	}
	return runtimeLiveness{locked: true, running: st.Running}
}

// readMember reads one record with the last time it was seen. A runtime
// holding runtime.lock keeps its members alive (seen now) whatever their
// records' age, and its flock goes with its process: once it is released
// a live member is lost at once, not after lostAfter. Without the lock, a
// record's modification time is when it was seen. A record that does not
// parse, or names another member, is an error.
func (s *Store) readMember(name string, now time.Time, lostAfter time.Duration, rt runtimeLiveness) (*store.MemberState, error) {
	p, err := teamdir.MemberPath(s.dir, name)
	if err != nil {
		return nil, err
	}
	b, info, err := readWithInfo(p)
	if err != nil {
		return nil, err
	}
	var m protocol.Member
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, &store.CorruptError{Name: name, File: rel(s.dir, p), Err: err.Error()}
	}
	if m.Name != name {
		return nil, &store.CorruptError{Name: name, File: rel(s.dir, p), Err: fmt.Sprintf("the record names %q", m.Name)}
	}
	seen := info.ModTime()
	switch {
	case rt.running:
		return &store.MemberState{Member: m, Seen: now}, nil
	case rt.locked:
		return &store.MemberState{Member: m, Seen: seen, Lost: store.IsLive(m.Status)}, nil
	}
	return &store.MemberState{Member: m, Seen: seen, Lost: store.IsLive(m.Status) && now.Sub(seen) > lostAfter}, nil
}

// RuntimeLock is what the directory's runtime.lock says of its runtime:
// whether one holds its flock now, and which ran last.
func (s *Store) RuntimeLock() (teamdir.RuntimeState, error) { return teamdir.ProbeRuntime(s.dir) }

// readWithInfo reads a file and its status through one open: the
// modification time read is the one of the content read, and a heartbeat
// costs a UI one path lookup, not two.
func readWithInfo(p string) ([]byte, os.FileInfo, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	var buf bytes.Buffer
	buf.Grow(int(info.Size()) + bytes.MinRead)
	if _, err := buf.ReadFrom(f); err != nil {
		return nil, nil, err
	}
	return buf.Bytes(), info, nil
}
