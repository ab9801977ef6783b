package replay

import (
	"cmp"
	"slices"

	"huddle/ipc/trace"
	"huddle/protocol"
	"huddle/team/view"
)

// Fold builds the snapshot of a timeline at any position. Position k means
// the first k events have happened (0: none, len(Events): all).
//
// Moving forward applies only the events in between; moving back folds
// again from the start. The state that is costly to rebuild, the trace
// fold, cannot be copied, so checkpoints would save little: the benchmark
// (BenchmarkSnapshotAtEnd) measures the fold of a whole 10k-event timeline.
// The messages are not folded at all: they are a prefix of one slice.
type Fold struct {
	tl   *Timeline
	msgs []view.MessageView // every message event, in timeline order
	// msgsBefore[k] is how many message events come before event k.
	msgsBefore []int32

	pos      int
	records  map[string]protocol.Member
	reqs     map[string]*protocol.Request // never modified once stored
	counters map[string]protocol.Counters
	traces   *trace.Traces
	version  uint64

	members       []view.MemberView
	membersStale  bool
	requests      []protocol.Request
	pending       int
	requestsStale bool
}

// NewFold returns a fold of tl at position 0.
func NewFold(tl *Timeline) *Fold {
	f := &Fold{tl: tl, msgsBefore: make([]int32, len(tl.Events)+1)}
	for i := range tl.Events {
		e := &tl.Events[i]
		f.msgsBefore[i] = int32(len(f.msgs))
		if e.Kind == KindMessage {
			f.msgs = append(f.msgs, view.MessageView{Inbox: e.Inbox, Offset: e.Offset, Msg: *e.Message})
		}
	}
	f.msgsBefore[len(tl.Events)] = int32(len(f.msgs))
	f.reset()
	return f
}

// Len is the number of events.
func (f *Fold) Len() int { return len(f.tl.Events) }

// Pos is the position the fold is at.
func (f *Fold) Pos() int { return f.pos }

func (f *Fold) reset() {
	f.pos = 0
	f.records = make(map[string]protocol.Member)
	f.reqs = make(map[string]*protocol.Request)
	f.counters = make(map[string]protocol.Counters)
	f.traces = trace.NewTraces()
	f.membersStale, f.requestsStale = true, true
}

// Seek moves the fold to position k (clamped to [0, Len]).
func (f *Fold) Seek(k int) {
	k = min(max(k, 0), f.Len())
	if k < f.pos {
		f.reset()
	}
	for ; f.pos < k; f.pos++ {
		f.apply(&f.tl.Events[f.pos])
	}
}

// apply folds one event in.
func (f *Fold) apply(e *Event) {
	switch e.Kind {
	case KindStatus:
		m := *e.Member
		m.Counters = f.counters[m.Name]
		f.records[m.Name] = m
		f.membersStale = true
	case KindRequest:
		r := e.Request
		if r.Kind == protocol.KindPlan && r.Status == protocol.RequestPending && f.reqs[r.ID] == nil {
			f.count(r.From, func(c *protocol.Counters) { c.Plans++ })
		}
		f.reqs[r.ID] = r
		f.requestsStale = true
	case KindMessage:
		f.count(e.Inbox, func(c *protocol.Counters) { c.Received++ })
		if e.Message.From != e.Inbox {
			f.count(e.Message.From, func(c *protocol.Counters) { c.Sent++ })
		}
	case KindSpan:
		if e.Span.Span == trace.SpanStart {
			f.count(e.Span.Caller, func(c *protocol.Counters) { c.Calls++ })
		}
		f.traces.Add(*e.Span)
	}
}

// count changes the counters of member name as the roster shows them: what
// the events so far add up to (a broadcast counts once per inbox it reached).
func (f *Fold) count(name string, change func(*protocol.Counters)) {
	c := f.counters[name]
	change(&c)
	f.counters[name] = c
	if rec, ok := f.records[name]; ok {
		rec.Counters = c
		f.records[name] = rec
		f.membersStale = true
	}
}

// Snapshot is the team as the UI showed it at the fold's position. It is
// never modified afterwards.
func (f *Fold) Snapshot() view.Snapshot {
	if f.membersStale {
		f.members = f.buildMembers()
		f.membersStale = false
	}
	if f.requestsStale {
		f.requests, f.pending = f.buildRequests()
		f.requestsStale = false
	}
	f.version++
	n := int(f.msgsBefore[f.pos])
	return view.Snapshot{
		Version:  f.version,
		Team:     f.tl.Team,
		Members:  f.members,
		Requests: f.requests,
		Pending:  f.pending,
		Chains:   f.traces.List(),
		Messages: f.msgs[max(n-view.MaxMessages, 0):n:n],
	}
}

// buildMembers lists the members as the observer does: team.json's order,
// then the others by name; a member that has not moved yet has no status.
func (f *Fold) buildMembers() []view.MemberView {
	out := make([]view.MemberView, 0, len(f.records)+len(f.tl.Team.Members))
	inTeam := make(map[string]bool, len(f.tl.Team.Members))
	for _, spec := range f.tl.Team.Members {
		inTeam[spec.Name] = true
		out = append(out, view.MemberView{Record: f.record(spec.Name), Spec: spec})
	}
	n := len(out)
	for name := range f.records {
		if !inTeam[name] {
			out = append(out, view.MemberView{Record: f.records[name]})
		}
	}
	slices.SortFunc(out[n:], func(a, b view.MemberView) int { return cmp.Compare(a.Record.Name, b.Record.Name) })
	return out
}

func (f *Fold) record(name string) protocol.Member {
	if rec, ok := f.records[name]; ok {
		return rec
	}
	return protocol.Member{Name: name, Counters: f.counters[name]}
}

// buildRequests orders the requests as the observer does: pending first,
// oldest first; then the final ones, newest resolution first, at most
// view.MaxHistory of them.
func (f *Fold) buildRequests() ([]protocol.Request, int) {
	rs := make([]*protocol.Request, 0, len(f.reqs))
	pending := 0
	for _, r := range f.reqs {
		rs = append(rs, r)
		if r.Status == protocol.RequestPending {
			pending++
		}
	}
	slices.SortFunc(rs, view.RequestOrder)
	rs = rs[:min(len(rs), pending+view.MaxHistory)]
	out := make([]protocol.Request, len(rs))
	for i, r := range rs {
		out[i] = *r
	}
	return out, pending
}
