package filestore

import (
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

// PutMember rewrites members/<name>.json (temp+rename, as team.WriteMember).
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

// Members reads members/*.json; a record that does not parse is left out.
func (s *Store) Members(ctx context.Context, lostAfter time.Duration) ([]store.MemberState, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	dir := teamdir.MembersDirPath(s.dir)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	now := time.Now()
	var out []store.MemberState
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || e.IsDir() || protocol.ValidateName(name) != nil {
			continue
		}
		p, _ := teamdir.MemberPath(s.dir, name)
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		info, err := os.Stat(p)
		if err != nil {
			continue
		}
		var m protocol.Member
		if json.Unmarshal(b, &m) != nil || m.Name != name {
			continue
		}
		seen := info.ModTime()
		out = append(out, store.MemberState{Member: m, Seen: seen, Lost: store.IsLive(m.Status) && now.Sub(seen) > lostAfter})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
