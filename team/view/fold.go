package view

import (
	"cmp"
	"context"
	"reflect"
	"slices"
	"sync"
	"time"

	"huddle/ipc/trace"
	"huddle/protocol"
	"huddle/store"
	"huddle/team"
)

// model is the folded state. Its fields change under Observer.mu; the
// slices it hands out in a Snapshot are never written again.
type model struct {
	team    *team.Team
	teamErr string
	records map[string]protocol.Member
	reqs    map[string]*protocol.Request // never modified once stored
	byOrder []*protocol.Request          // reqs in Snapshot.Requests order
	traces  *trace.Traces
	inboxes map[string]*inboxView
	// archived are the final requests known to be archived: a read of
	// the live ones does not look for them again.
	archived map[string]bool
	// corruptMembers are the member records that cannot be read, with why.
	corruptMembers map[string]string
	// runtime says whether a runtime runs the team (runtime.lock, or the
	// members' heartbeats: byHeartbeat); probed is set once it is known.
	runtime team.RuntimeState
	probed  bool

	msgs     []MessageView // oldest first once sorted
	unsorted bool          // a message arrived older than the last one

	// dead are the newest dead letters, as the store last read them.
	dead []team.DeadLetter

	// The last built parts of a snapshot, rebuilt only when stale.
	members       []MemberView
	membersStale  bool
	requests      []protocol.Request
	requestsStale bool

	dirty   bool
	version uint64
	// wake tells the sender the model changed.
	wake chan struct{}
	// byHeartbeat: no runtime.lock says whether a runtime runs the team
	// (a store on NATS, or a directory no runtime ran): Down is then "no
	// member seen alive", and a member's record is shown as it is (lost,
	// not stopped).
	byHeartbeat bool
}

// inboxView is what the observer knows of one inbox.
type inboxView struct {
	// counted: the store tells where its consumer stands (CommitWatcher),
	// so the observer counts the unread messages it sees itself.
	counted   bool
	committed int64   // the Seq past the consumer's last commit
	unread    []int64 // Seqs of observed messages at or past committed, ascending
	// stored is the unread count as the store tells it (Unread), for an
	// inbox not counted.
	stored int
}

// commit takes where name's consumer stands now: the messages below it
// are read. Called under the lock.
func (m *model) commit(name string, committed int64) {
	iv := m.inbox(name)
	iv.counted = true
	if committed == iv.committed {
		return
	}
	iv.committed = committed
	if i, _ := slices.BinarySearch(iv.unread, committed); i > 0 {
		iv.unread = iv.unread[i:]
		m.membersStale = true
		m.changed()
	}
}

// seen counts a message of inbox name as unread while its Seq is at or
// past where the consumer stands. Called under the lock.
func (m *model) seen(name string, seq int64) {
	iv := m.inboxes[name]
	if iv == nil || !iv.counted || seq < iv.committed {
		return
	}
	i, dup := slices.BinarySearch(iv.unread, seq)
	if dup {
		return
	}
	iv.unread = slices.Insert(iv.unread, i, seq)
	m.membersStale = true
}

// newModel is an empty model, its parts to be built.
func newModel() model {
	return model{
		records: make(map[string]protocol.Member), reqs: make(map[string]*protocol.Request),
		traces: trace.NewTraces(), inboxes: make(map[string]*inboxView),
		archived: make(map[string]bool), corruptMembers: make(map[string]string),
		membersStale: true, requestsStale: true,
		wake: make(chan struct{}, 1),
	}
}

// changed marks the model dirty and wakes its sender. Called under the
// lock that guards it.
func (m *model) changed() {
	m.dirty = true
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// addMessage takes one message seen in an inbox. Called under the lock.
func (m *model) addMessage(mv MessageView) {
	if n := len(m.msgs); n > 0 && mv.Msg.TS.Before(m.msgs[n-1].Msg.TS) {
		m.unsorted = true
	}
	// Appending never writes where a snapshot handed out can see: those
	// slices end at their length and capacity.
	m.msgs = append(m.msgs, mv)
	if !m.unsorted && len(m.msgs) > MaxMessages {
		m.msgs = m.msgs[len(m.msgs)-MaxMessages:]
	}
	m.changed()
}

func (m *model) inbox(name string) *inboxView {
	iv := m.inboxes[name]
	if iv == nil {
		iv = &inboxView{}
		m.inboxes[name] = iv
	}
	return iv
}

// setCorruptMember shows a member whose record cannot be read as corrupt,
// saying why. Called under mu.
func (m *model) setCorruptMember(ce *store.CorruptError) {
	name := ce.Name
	delete(m.records, name)
	if m.corruptMembers[name] == ce.Error() {
		return
	}
	m.corruptMembers[name] = ce.Error()
	m.membersStale = true
	m.changed()
}

// probeRuntime asks runtime.lock whether a runtime runs the team.

// setMember records rec as name's record; nil removes it. Called under mu.
func (m *model) setMember(name string, rec *protocol.Member) {
	if _, bad := m.corruptMembers[name]; bad {
		delete(m.corruptMembers, name)
		m.membersStale = true
		m.changed()
	}
	old, had := m.records[name]
	switch {
	case rec == nil && !had:
		return
	case rec == nil:
		delete(m.records, name)
	case had && reflect.DeepEqual(old, *rec):
		return
	default:
		m.records[name] = *rec
	}
	m.membersStale = true
	m.changed()
}

// MaxHistory bounds the final requests an observer keeps (the newest), so a
// long history costs a UI nothing; huddle requests --all lists all of it.
const MaxHistory = 500

// setRequest records r as request id; nil removes it. Called under mu.
func (m *model) setRequest(id string, r *protocol.Request) {
	old, had := m.reqs[id]
	switch {
	case r == nil && !had:
		return
	case had && r != nil && reflect.DeepEqual(old, r):
		return
	}
	if had {
		i, _ := slices.BinarySearchFunc(m.byOrder, old, RequestOrder)
		m.byOrder = slices.Delete(m.byOrder, i, i+1)
		delete(m.reqs, id)
	}
	if r != nil {
		i, _ := slices.BinarySearchFunc(m.byOrder, r, RequestOrder)
		m.byOrder = slices.Insert(m.byOrder, i, r)
		m.reqs[id] = r
	}
	// Final requests come last, newest first: drop the oldest past the bound.
	for n := len(m.byOrder); n > 0 && n-m.pending() > MaxHistory; n-- {
		gone := m.byOrder[n-1]
		m.byOrder = m.byOrder[:n-1]
		delete(m.reqs, gone.ID)
		delete(m.archived, gone.ID)
	}
	m.requestsStale = true
	m.changed()
}

// loadRequests reads the live request records, requests/ itself, and never
// the archive: a request that left requests/ was archived (it is read once,
// from requests/done/, and kept while the bound allows) or removed.
// changed: at most once per frame, and always once more after the last
// change, until ctx ends.
func sendSnapshots(ctx context.Context, frameLen time.Duration, mu *sync.Mutex, m *model, send func(Snapshot)) {
	frame := time.NewTimer(time.Hour)
	frame.Stop()
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.wake:
		}
		if wait := frameLen - time.Since(last); wait > 0 {
			frame.Reset(wait)
			select {
			case <-ctx.Done():
				frame.Stop()
				return
			case <-frame.C:
			}
		}
		mu.Lock()
		snap, ok := m.snapshot()
		mu.Unlock()
		if ok {
			send(snap)
			last = time.Now()
		}
	}
}

// snapshot builds a Snapshot of the model if it changed since the last one,
// rebuilding only the parts that did. Called under mu.
func (m *model) snapshot() (Snapshot, bool) {
	if !m.dirty {
		return Snapshot{}, false
	}
	m.dirty = false
	m.version++
	if m.membersStale {
		m.members = m.buildMembers()
		m.membersStale = false
	}
	if m.requestsStale {
		m.requests = m.buildRequests()
		m.requestsStale = false
	}
	if m.unsorted {
		m.sortMessages()
	}
	return Snapshot{
		Runtime:  m.runtime,
		Down:     m.down(),
		Store:    m.byHeartbeat,
		Version:  m.version,
		Team:     m.team,
		TeamErr:  m.teamErr,
		Members:  m.members,
		Requests: m.requests,
		Pending:  m.pending(),
		Chains:   m.traces.List(),
		Messages: m.msgs[:len(m.msgs):len(m.msgs)],
		// Appended only: a snapshot's slice never changes under it.
		DeadLetters: m.dead[max(len(m.dead)-MaxDeadLetters, 0):len(m.dead):len(m.dead)],
	}, true
}

// buildMembers lists the members in team.json's order, then those with a
// record but no entry, by name.
func (m *model) buildMembers() []MemberView {
	out := make([]MemberView, 0, len(m.records)+8)
	unread := func(name string) int {
		if iv := m.inboxes[name]; iv != nil {
			if iv.counted {
				return len(iv.unread)
			}
			return iv.stored
		}
		return 0
	}
	inTeam := make(map[string]bool)
	if m.team != nil {
		for _, spec := range m.team.Members {
			inTeam[spec.Name] = true
			out = append(out, MemberView{Record: m.shown(spec.Name), Spec: spec, Unread: unread(spec.Name)})
		}
	}
	n := len(out)
	for name := range m.records {
		if !inTeam[name] {
			out = append(out, MemberView{Record: m.shown(name), Unread: unread(name)})
		}
	}
	for name := range m.corruptMembers {
		if _, ok := m.records[name]; !ok && !inTeam[name] {
			out = append(out, MemberView{Record: m.shown(name), Unread: unread(name)})
		}
	}
	slices.SortFunc(out[n:], func(a, b MemberView) int { return cmp.Compare(a.Record.Name, b.Record.Name) })
	return out
}

// shown is the record of member name as a UI shows it: corrupt when it
// cannot be read, stopped when no runtime runs the team (AsSeenWhileDown).
func (m *model) shown(name string) protocol.Member {
	if why, bad := m.corruptMembers[name]; bad {
		return protocol.Member{Name: name, Status: protocol.MemberStatus(team.StatusCorrupt), Error: why}
	}
	rec, ok := m.records[name]
	if !ok {
		return protocol.Member{Name: name}
	}
	if m.down() && !m.byHeartbeat {
		return team.AsSeenWhileDown(rec)
	}
	return rec
}

// down reports whether a probe found that no runtime runs the team.
func (m *model) down() bool { return m.probed && !m.runtime.Running }

// buildRequests copies the requests in their order: pending first, oldest
// first; then the final ones, newest resolution first.
func (m *model) buildRequests() []protocol.Request {
	out := make([]protocol.Request, len(m.byOrder))
	for i, r := range m.byOrder {
		out[i] = *r
	}
	return out
}

// pending counts the pending requests: they come first.
func (m *model) pending() int {
	n, _ := slices.BinarySearchFunc(m.byOrder, true, func(r *protocol.Request, _ bool) int {
		if r.Status == protocol.RequestPending {
			return -1
		}
		return 1
	})
	return n
}

// RequestOrder is the order of Snapshot.Requests: pending first, oldest
// first; then the final ones, newest resolution first. A replay orders its
// snapshots' requests with it too.
func RequestOrder(a, b *protocol.Request) int {
	ap, bp := a.Status == protocol.RequestPending, b.Status == protocol.RequestPending
	switch {
	case ap && !bp:
		return -1
	case bp && !ap:
		return 1
	case ap:
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
	default:
		if c := b.ResolvedOrCreated().Compare(a.ResolvedOrCreated()); c != 0 {
			return c
		}
	}
	return cmp.Compare(a.ID, b.ID)
}

// sortMessages puts the messages in time order in a new array (the old one
// may be in a snapshot) and keeps the newest MaxMessages.
func (m *model) sortMessages() {
	// Sorted as indexes: a message is too large to move around cheaply.
	idx := make([]int32, len(m.msgs))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortStableFunc(idx, func(a, b int32) int { return m.msgs[a].Msg.TS.Compare(m.msgs[b].Msg.TS) })
	idx = idx[max(len(idx)-MaxMessages, 0):]
	msgs := make([]MessageView, len(idx))
	for i, j := range idx {
		msgs[i] = m.msgs[j]
	}
	m.msgs, m.unsorted = msgs, false
}
