package team

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"huddle/protocol"
	"huddle/teamdir"
)

// writeJSONAtomic writes v, indented, to path: write-temp + rename, with an
// fsync first when durable is set (teamdir's rewrite discipline).
func writeJSONAtomic(path string, v any, durable bool) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), teamdir.DirMode); err != nil {
		return err
	}
	if durable {
		return teamdir.WriteFileAtomic(path, append(b, '\n'))
	}
	return teamdir.ReplaceFile(path, append(b, '\n'))
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

// LoadMember reads members/<name>.json.
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
		return nil, fmt.Errorf("%s: %v", p, err)
	}
	return &m, nil
}

// ListMembers reads every member record, sorted by name.
func ListMembers(dir string) ([]protocol.Member, error) {
	ents, err := os.ReadDir(teamdir.MembersDirPath(dir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []protocol.Member
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		m, err := LoadMember(dir, name)
		if err != nil {
			continue // a half-written foreign file: the next scan sees it whole
		}
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// ErrExists is returned when a request record already exists.
var ErrExists = errors.New("request already exists")

// CreateRequest writes a new pending request record. A record that already
// exists is left alone (ErrExists): whoever saw the request first created it.
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
		return ErrExists
	}
	if err != nil {
		return err
	}
	f.Close()
	return writeJSONAtomic(p, r, true)
}

// LoadRequest reads requests/<id>.json. An empty file is a record being
// created: it reads as not there yet.
func LoadRequest(dir, id string) (*protocol.Request, error) {
	p, err := teamdir.RequestPath(dir, id)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	if len(b) == 0 {
		return nil, fmt.Errorf("request %s: %w", id, os.ErrNotExist)
	}
	var r protocol.Request
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("request %s: %v", id, err)
	}
	return &r, nil
}

// ListRequests reads every request record, oldest first.
func ListRequests(dir string) ([]protocol.Request, error) {
	return listRequests(dir, nil)
}

// listRequests reads the request records whose id skip does not refuse.
func listRequests(dir string, skip func(id string) bool) ([]protocol.Request, error) {
	ents, err := os.ReadDir(teamdir.RequestsDirPath(dir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []protocol.Request
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || strings.HasPrefix(e.Name(), ".") || (skip != nil && skip(id)) {
			continue
		}
		r, err := LoadRequest(dir, id)
		if err != nil {
			continue
		}
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.Before(out[j].Created)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// Resolution is what a resolver decides.
type Resolution struct {
	Event protocol.RequestEvent
	By    string
	// Text is the feedback of a plan decision or the reason of a shutdown
	// answer, a cancellation or an expiry.
	Text string
}

// AlreadyError says who resolved a request first.
type AlreadyError struct {
	ID     string
	Status protocol.RequestStatus
	By     string
}

func (e *AlreadyError) Error() string {
	return fmt.Sprintf("request %s already %s by %s", e.ID, e.Status, e.By)
}

type decision struct {
	Event protocol.RequestEvent `json:"event"`
	By    string                `json:"by"`
	Text  string                `json:"text,omitempty"`
	At    time.Time             `json:"at"`
}

// Resolve moves a pending request to its final state. The first resolver,
// across processes, wins by creating requests/<id>.decision exclusively; a
// later one gets an *AlreadyError and nothing changes. The decision file is
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
		return nil, &AlreadyError{ID: id, Status: r.Status, By: r.ResolvedBy}
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
			return nil, &AlreadyError{ID: id, Status: st, By: won.By}
		}
		return nil, &AlreadyError{ID: id, Status: "resolved", By: "someone else"}
	}
	return applyDecision(dir, r, &d)
}

// claimDecision creates requests/<id>.decision holding b, or reports false
// when it already exists: exclusive, and never seen empty
// (teamdir.LinkExclusive).
func claimDecision(dir, id string, b []byte) (bool, error) {
	p, err := teamdir.DecisionPath(dir, id)
	if err != nil {
		return false, err
	}
	return teamdir.LinkExclusive(p, b)
}

// errIncomplete is a decision file that does not (yet) hold a decision.
var errIncomplete = errors.New("incomplete")

func readDecision(dir, id string) (*decision, error) {
	p, err := teamdir.DecisionPath(dir, id)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
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
	if err := r.Apply(d.Event, d.By, d.At, d.Text); err != nil {
		return nil, err
	}
	switch {
	case r.Kind == protocol.KindPlan && d.Event.IsAnswer():
		r.Feedback = d.Text
	default:
		r.ResponseReason = d.Text
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

// settle brings r in line with an answer that arrived as an inbox line. A
// pending request is resolved by it (a peer that writes lines alone, with no
// decision file); a final one must already say the same, or the answer is
// stale.
func settle(dir string, r *protocol.Request, answer Resolution) (*protocol.Request, error) {
	if r.Status == protocol.RequestPending {
		nr, err := Resolve(dir, r.ID, answer)
		if err == nil {
			return nr, nil
		}
		var already *AlreadyError
		if !errors.As(err, &already) {
			return nil, err
		}
		if r, err = LoadRequest(dir, r.ID); err != nil {
			return nil, err
		}
	}
	if want, _ := protocol.RequestPending.Next(answer.Event); r.Status != want {
		return nil, fmt.Errorf("stale answer: request %s already %s by %s", r.ID, r.Status, r.ResolvedBy)
	}
	return r, nil
}
