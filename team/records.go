package team

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"huddle/protocol"
	"huddle/store"
	"huddle/teamdir"
)

// writeJSONAtomic writes v, indented, to path: write-temp + rename, with an
// fsync first when durable is set (teamdir's rewrite discipline).
func writeJSONAtomic(path string, v any, durable bool) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	write := teamdir.ReplaceFile
	if durable {
		write = teamdir.WriteFileAtomic
	}
	// The directory is there but for the first write: it is made only
	// then, not looked up before every write.
	err = write(path, b)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(path), teamdir.DirMode); err != nil {
			return err
		}
		err = write(path, b)
	}
	return err
}

// WriteMember rewrites a member's status record atomically.
func WriteMember(dir string, m *protocol.Member) error {
	if err := m.Validate(); err != nil {
		return err
	}
	p, err := teamdir.MemberPath(dir, m.Name)
	if err != nil {
		return err
	}
	return writeJSONAtomic(p, m, false) // live status: rebuilt on start
}

// LoadMember reads members/<name>.json. A record that is not valid JSON is
// a *store.CorruptError naming the file.
func LoadMember(dir, name string) (*protocol.Member, error) {
	p, err := teamdir.MemberPath(dir, name)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	var m protocol.Member
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, corrupt(dir, p, err)
	}
	return &m, nil
}

// ListMembers reads every member record, sorted by name; corrupt ones are
// left out (ReadMembers names them).
func ListMembers(dir string) ([]protocol.Member, error) {
	out, _, err := ReadMembers(dir)
	return out, err
}

// ReadMembers reads every member record, sorted by name, and names the
// records it could not read.
func ReadMembers(dir string) ([]protocol.Member, []store.CorruptError, error) {
	ents, err := os.ReadDir(teamdir.MembersDirPath(dir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var out []protocol.Member
	var bad []store.CorruptError
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		m, err := LoadMember(dir, name)
		var ce *store.CorruptError
		switch {
		case errors.As(err, &ce):
			bad = append(bad, *ce)
		case err != nil:
			continue // gone since the listing, or a name that is not a member's
		default:
			out = append(out, *m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, bad, nil
}

func corrupt(dir, path string, err error) *store.CorruptError {
	rel, rerr := filepath.Rel(dir, path)
	if rerr != nil {
		rel = path
	}
	base := filepath.Base(path)
	return &store.CorruptError{Name: strings.TrimSuffix(base, filepath.Ext(base)), File: filepath.ToSlash(rel), Err: err.Error()}
}

// CreateRequest writes a new pending request record. A record that already
// exists is left alone (store.ErrExists): whoever saw the request first created it.
func CreateRequest(dir string, r *protocol.Request) error {
	if err := r.Validate(); err != nil {
		return err
	}
	p, err := teamdir.RequestPath(dir, r.ID)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), teamdir.DirMode); err != nil {
		return err
	}
	// Claim the id with O_EXCL on the record itself, then fill it atomically.
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, teamdir.FileMode)
	if errors.Is(err, os.ErrExist) {
		return store.ErrExists
	}
	if err != nil {
		return err
	}
	f.Close()
	return writeJSONAtomic(p, r, true)
}

// LoadRequest reads requests/<id>.json, or requests/done/<id>.json once the
// runtime archived it. An empty file is a record being created: it reads as
// not there yet. A record that is not valid JSON is a *store.CorruptError naming
// the file.
func LoadRequest(dir, id string) (*protocol.Request, error) {
	p, err := teamdir.RequestPath(dir, id)
	if err != nil {
		return nil, err
	}
	r, err := readRequest(dir, id, p)
	if !errors.Is(err, os.ErrNotExist) {
		return r, err
	}
	// Not live: archived (Archive writes the archived copy before it
	// removes the live one, so one of the two is always there).
	done, _ := teamdir.DoneRequestPath(dir, id)
	if ar, aerr := readRequest(dir, id, done); !errors.Is(aerr, os.ErrNotExist) {
		return ar, aerr
	}
	return nil, err
}

// readArchived counts the reads of archived records, so a test can check
// that the runtime's tick never reads one.
var readArchived atomic.Int64

func readRequest(dir, id, p string) (*protocol.Request, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	if filepath.Base(filepath.Dir(p)) == teamdir.DoneDir {
		readArchived.Add(1)
	}
	if len(b) == 0 {
		return nil, fmt.Errorf("request %s: %w", id, os.ErrNotExist)
	}
	var r protocol.Request
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, corrupt(dir, p, err)
	}
	if r.ID != id {
		return nil, corrupt(dir, p, fmt.Errorf("it holds request %q", r.ID))
	}
	return &r, nil
}

// ListRequests reads every request record, live and archived, oldest
// first. Corrupt records are left out (ReadLiveRequests names them).
func ListRequests(dir string) ([]protocol.Request, error) {
	live, _, err := ReadLiveRequests(dir)
	if err != nil {
		return nil, err
	}
	done, _, err := ReadHistory(dir, 0)
	if err != nil {
		return nil, err
	}
	all := MergeArchived(live, done)
	sortOldestFirst(all)
	return all, nil
}

// MergeArchived joins live records and archived ones, read in that order: a
// request archived between the two reads is in both, and its archived
// (final) copy is kept. (Read in the other order, it could be in neither.)
func MergeArchived(live, archived []protocol.Request) []protocol.Request {
	inArchive := make(map[string]bool, len(archived))
	for i := range archived {
		inArchive[archived[i].ID] = true
	}
	out := make([]protocol.Request, 0, len(live)+len(archived))
	for _, r := range live {
		if !inArchive[r.ID] {
			out = append(out, r)
		}
	}
	return append(out, archived...)
}

// ReadLiveRequests reads the records in requests/ itself: the pending ones
// and the final ones not archived yet, oldest first; and names the records
// it could not read. It never reads the archive.
func ReadLiveRequests(dir string) ([]protocol.Request, []store.CorruptError, error) {
	return readRequestsIn(dir, teamdir.RequestsDirPath(dir), -1, nil)
}

// ReadPendingRequests reads the pending request records, oldest first, and
// names the records it could not read. A record with a decision file beside
// it is not read at all: it is decided, whatever its rewrite says yet. So
// final records cost nothing here even before the runtime archives them.
func ReadPendingRequests(dir string) ([]protocol.Request, []store.CorruptError, error) {
	decided, err := decidedIDs(dir)
	if err != nil {
		return nil, nil, err
	}
	reqs, bad, err := readRequestsIn(dir, teamdir.RequestsDirPath(dir), -1, decided)
	out := reqs[:0]
	for _, r := range reqs {
		if r.Status == protocol.RequestPending {
			out = append(out, r)
		}
	}
	return out, bad, err
}

// decidedIDs are the ids with a decision file in requests/.
func decidedIDs(dir string) (map[string]bool, error) {
	ents, err := os.ReadDir(teamdir.RequestsDirPath(dir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ids := make(map[string]bool)
	for _, e := range ents {
		if id, ok := strings.CutSuffix(e.Name(), ".decision"); ok && !strings.HasPrefix(id, ".") {
			ids[id] = true
		}
	}
	return ids, nil
}

// ReadHistory reads the archived records, requests/done/, the most
// recently archived first: at most limit of them (0: all), chosen by the
// time each was archived, so a limit reads only that many files.
func ReadHistory(dir string, limit int) ([]protocol.Request, []store.CorruptError, error) {
	reqs, bad, err := readRequestsIn(dir, teamdir.DoneDirPath(dir), limit, nil)
	slices.SortStableFunc(reqs, func(a, b protocol.Request) int { return b.ResolvedOrCreated().Compare(a.ResolvedOrCreated()) })
	return reqs, bad, err
}

// readRequestsIn reads the request records in one directory but those
// skip names. limit < 0 reads all of them, oldest created first; limit >= 0
// reads the newest limit files by modification time (0: all), in that order.
func readRequestsIn(dir, sub string, limit int, skip map[string]bool) ([]protocol.Request, []store.CorruptError, error) {
	ents, err := os.ReadDir(sub)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	type file struct {
		id  string
		mod time.Time
	}
	var files []file
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || strings.HasPrefix(e.Name(), ".") || !e.Type().IsRegular() || skip[id] {
			continue
		}
		f := file{id: id}
		if limit >= 0 {
			info, err := e.Info()
			if err != nil {
				continue // gone since the listing
			}
			f.mod = info.ModTime()
		}
		files = append(files, f)
	}
	if limit >= 0 {
		slices.SortStableFunc(files, func(a, b file) int { return b.mod.Compare(a.mod) })
		if limit > 0 && len(files) > limit {
			files = files[:limit]
		}
	}
	var out []protocol.Request
	var bad []store.CorruptError
	for _, f := range files {
		p := filepath.Join(sub, f.id+".json")
		if protocol.ValidateID(f.id) != nil {
			continue // not a name huddle gives a record
		}
		r, err := readRequest(dir, f.id, p)
		var ce *store.CorruptError
		switch {
		case errors.As(err, &ce):
			bad = append(bad, *ce)
		case err != nil:
			continue // being created, or gone since the listing
		default:
			out = append(out, *r)
		}
	}
	if limit < 0 {
		sortOldestFirst(out)
	}
	return out, bad, nil
}

func sortOldestFirst(rs []protocol.Request) {
	sort.SliceStable(rs, func(i, j int) bool {
		if !rs[i].Created.Equal(rs[j].Created) {
			return rs[i].Created.Before(rs[j].Created)
		}
		return rs[i].ID < rs[j].ID
	})
}

// Archive moves a final request out of requests/ into requests/done/
// (teamdir.Archive: its decision, then its record). Only the runtime
// archives, under its lock. A request that is not final is refused.
func Archive(dir string, r *protocol.Request) error {
	if !r.Status.IsTerminal() {
		return fmt.Errorf("archive %s: it is %s, not final", r.ID, r.Status)
	}
	b, _ := json.Marshal(decision{Event: eventOf(r.Status), By: r.ResolvedBy, At: r.ResolvedOrCreated()})
	return teamdir.Archive(dir, r.ID, b)
}

// eventOf is the event that leads from pending to final state st.
func eventOf(st protocol.RequestStatus) protocol.RequestEvent {
	for _, ev := range protocol.RequestEvents {
		if next, _ := protocol.RequestPending.Next(ev); next == st {
			return ev
		}
	}
	return ""
}

// Resolution is what a resolver decides.
type Resolution struct {
	Event protocol.RequestEvent
	By    string
	// Text is the feedback of a plan decision or the reason of a shutdown
	// answer, a cancellation or an expiry.
	Text string
}

type decision struct {
	Event protocol.RequestEvent `json:"event"`
	By    string                `json:"by"`
	Text  string                `json:"text,omitempty"`
	At    time.Time             `json:"at"`
}

// Resolve moves a pending request to its final state. The first resolver,
// across processes, wins by creating requests/<id>.decision exclusively; a
// later one gets an *store.AlreadyError and nothing changes. The decision file is
// the truth: the record is rewritten from it, and ApplyDecision (below) finishes a
// rewrite that a crash interrupted.
func Resolve(dir, id string, res Resolution) (*protocol.Request, error) {
	r, err := LoadRequest(dir, id)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no request %s", id)
		}
		return nil, err
	}
	return resolve(dir, r, res)
}

// resolve is Resolve on a record already read.
func resolve(dir string, r *protocol.Request, res Resolution) (*protocol.Request, error) {
	id := r.ID
	if r.Status.IsTerminal() {
		return nil, &store.AlreadyError{ID: id, Status: r.Status, By: r.ResolvedBy}
	}
	if _, err := r.Status.Next(res.Event); err != nil {
		return nil, err
	}
	d := decision{Event: res.Event, By: res.By, Text: res.Text, At: time.Now().UTC()}
	b, _ := json.Marshal(d)
	claimed, err := claimDecision(dir, id, b)
	if err != nil {
		return nil, err
	}
	if !claimed {
		// Someone got there first; report what they decided.
		if won, err := readDecision(dir, id); err == nil {
			st, _ := protocol.RequestPending.Next(won.Event)
			return nil, &store.AlreadyError{ID: id, Status: st, By: won.By}
		}
		return nil, &store.AlreadyError{ID: id, Status: "resolved", By: "someone else"}
	}
	return applyDecision(dir, r, &d)
}

// claimDecision creates requests/<id>.decision holding b, or reports false
// when another decision was first (teamdir.ClaimDecision: exclusive, never
// seen empty, and a late claim on an archived request loses).
func claimDecision(dir, id string, b []byte) (bool, error) {
	return teamdir.ClaimDecision(dir, id, b)
}

// archived reports whether requests/done/ holds id's decision or record.
func archived(dir, id string) bool { return teamdir.Archived(dir, id) }

// errIncomplete is a decision file that does not (yet) hold a decision.
var errIncomplete = errors.New("incomplete")

// readDecision reads id's decision: the live one, else the archived one.
func readDecision(dir, id string) (*decision, error) {
	p, err := teamdir.DecisionPath(dir, id)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		done, _ := teamdir.DoneDecisionPath(dir, id)
		b, err = os.ReadFile(done)
	}
	if err != nil {
		return nil, err
	}
	var d decision
	if err := json.Unmarshal(b, &d); err != nil || d.Event == "" {
		return nil, fmt.Errorf("decision %s: %w", id, errIncomplete)
	}
	return &d, nil
}

// ApplyDecision brings the record of id in line with its decision file, if
// there is one, and returns the record. It is idempotent.
func ApplyDecision(dir, id string) (*protocol.Request, error) {
	r, err := LoadRequest(dir, id)
	if err != nil {
		return nil, err
	}
	return applyDecision(dir, r, nil)
}

// applyDecision is ApplyDecision on a record already read, with its decision
// when the caller has it. The rewrite of the record is not fsync'd: the
// decision file is the durable truth, and a record that a power loss set
// back is brought in line again by the next ApplyDecision.
func applyDecision(dir string, r *protocol.Request, d *decision) (*protocol.Request, error) {
	id := r.ID
	if r.Status.IsTerminal() {
		return r, nil
	}
	if d == nil {
		var err error
		if d, err = readDecision(dir, id); errors.Is(err, os.ErrNotExist) || errors.Is(err, errIncomplete) {
			return r, nil // no decision (yet)
		} else if err != nil {
			return nil, err
		}
	}
	if archived(dir, id) {
		// r was read before it was final and archived: the archive is the
		// record now, and writing r again would bring it back to life.
		return LoadRequest(dir, id)
	}
	if err := applyInMemory(r, d); err != nil {
		return nil, err
	}
	p, err := teamdir.RequestPath(dir, id)
	if err != nil {
		return nil, err
	}
	if err := writeJSONAtomic(p, r, false); err != nil {
		return nil, err
	}
	return r, nil
}

// applyInMemory moves r to the final state d says, in memory: the rule
// both stores share (store.ApplyDecision).
func applyInMemory(r *protocol.Request, d *decision) error {
	return store.ApplyDecision(r, store.Decision(*d))
}

// FromDecision is what id's decision alone says, for a record that cannot
// be read (corrupt); false when there is no decision yet.
func FromDecision(dir, id string) (*protocol.Request, bool) {
	d, err := readDecision(dir, id)
	if err != nil {
		return nil, false
	}
	return store.FromDecision(id, store.Decision(*d))
}
