package trace

import (
	"cmp"
	"encoding/json"
	"slices"
	"sync/atomic"
	"time"
)

// Traces folds spans, one at a time, into calls and correlation chains. It
// keeps every chain it has built and rebuilds only the chains that new spans
// touched, so following a long traces.jsonl costs per span, not per file.
// A Traces is used by one goroutine at a time.
type Traces struct {
	calls  map[string]*Call       // by request id
	chains map[string]*chainState // by correlation id
	dirty  []*chainState          // chains touched since the last List
	list   ChainList              // what List returned last
	fold   uint64                 // this fold's id in the lists it hands out
	out    []Chain                // what Chains returned last; nil when stale
}

type chainState struct {
	id    string
	ids   []string // request ids of its calls, in arrival order
	dirty bool     // in Traces.dirty
	chain *Chain   // the last build, in list; nil before the first
}

// folds numbers the Traces, so a list says which fold made it.
var folds atomic.Uint64

// NewTraces returns an empty fold.
func NewTraces() *Traces {
	return &Traces{calls: make(map[string]*Call), chains: make(map[string]*chainState), fold: folds.Add(1)}
}

// Len is the number of calls folded.
func (t *Traces) Len() int { return len(t.calls) }

// Add folds one span. A call starts running with its start span and takes
// its status from its end span; an end span without a start still makes a
// call (Start stays zero). The first end span decides the call: an end span
// marked late only marks the call Late and never changes its status or
// result, so a late answer is never shown as if on time. Repeated spans
// change nothing. Spans without a request or correlation id are ignored.
func (t *Traces) Add(s Span) {
	if s.RequestID == "" || s.CorrelationID == "" || (s.Span != SpanStart && s.Span != SpanEnd) {
		return
	}
	if t.calls == nil {
		t.calls, t.chains = make(map[string]*Call), make(map[string]*chainState)
	}
	old := t.calls[s.RequestID]
	var c Call
	if old != nil {
		c = *old // calls handed out in chains are never modified: a new one replaces it
	} else {
		c = Call{RequestID: s.RequestID, CorrelationID: s.CorrelationID, Status: CallRunning}
	}
	if !apply(&c, &s) && old != nil {
		return
	}
	t.calls[s.RequestID] = &c
	cs := t.chains[c.CorrelationID]
	if cs == nil {
		cs = &chainState{id: c.CorrelationID}
		t.chains[cs.id] = cs
	}
	if old == nil {
		cs.ids = append(cs.ids, s.RequestID)
	}
	if !cs.dirty {
		cs.dirty = true
		t.dirty = append(t.dirty, cs)
	}
}

// apply folds s into c and reports whether c changed.
func apply(c *Call, s *Span) bool {
	switch s.Span {
	case SpanStart:
		if !c.Start.IsZero() {
			return false // a repeated start
		}
		c.Start = s.TS
		c.ParentRequestID, c.Caller, c.Target, c.Action = s.ParentRequestID, s.Caller, s.Target, s.Action
		c.Hop, c.Prompt, c.Remote = s.Hop, s.Prompt, s.Remote
		if c.Status != CallRunning && c.DurationMS == 0 && !c.End.IsZero() {
			c.DurationMS = max(c.End.Sub(c.Start).Milliseconds(), 0)
		}
		return true
	case SpanEnd:
		fillIdentity(c, s)
		if s.Late {
			if c.Late {
				return false
			}
			c.Late = true
			return true
		}
		if c.Status != CallRunning {
			return false // a repeated end: the first one decided
		}
		c.End = s.TS
		c.Status = CallOK
		if s.Status != CallOK {
			c.Status = CallError
		}
		c.DurationMS = s.DurationMS
		if c.DurationMS == 0 && !c.Start.IsZero() {
			c.DurationMS = max(c.End.Sub(c.Start).Milliseconds(), 0)
		}
		if s.Error != nil {
			c.ErrorCode, c.ErrorMessage = s.Error.Code, s.Error.Message
			c.ErrorReason, c.Refused = errorDetails(s.Error.Details)
		}
		c.Result = s.Result
		if s.Remote != "" {
			c.Remote = s.Remote // the target is known once the call has been made
		}
		return true
	}
	return false
}

// errorDetails are details.reason and details.answer of an error's
// details, when they are strings.
func errorDetails(details json.RawMessage) (reason, answer string) {
	var d struct {
		Reason string `json:"reason"`
		Answer string `json:"answer"`
	}
	if len(details) == 0 || json.Unmarshal(details, &d) != nil {
		return "", ""
	}
	return d.Reason, d.Answer
}

// fillIdentity takes what an end span says about the call where its start
// has not been seen.
func fillIdentity(c *Call, s *Span) {
	if !c.Start.IsZero() {
		return
	}
	if c.ParentRequestID == "" {
		c.ParentRequestID = s.ParentRequestID
	}
	if c.Caller == "" {
		c.Caller = s.Caller
	}
	if c.Target == "" {
		c.Target = s.Target
	}
	if c.Action == "" {
		c.Action = s.Action
	}
	if c.Hop == 0 {
		c.Hop = s.Hop
	}
	if c.Remote == "" {
		c.Remote = s.Remote
	}
}

// Chains returns every correlation chain, newest first (by Start, then by
// correlation id), as a slice: List's chains, copied. The slice and
// everything it holds are never modified afterwards: while no span
// arrives, the same slice comes back; after one, a new slice shares every
// chain's calls that did not change. A caller that asks after every change
// uses List, which does not copy what did not change.
func (t *Traces) Chains() []Chain {
	if t.out != nil && len(t.dirty) == 0 {
		return t.out
	}
	l := t.List()
	if l.Len() == 0 {
		return nil
	}
	t.out = l.Slice()
	return t.out
}

// List returns every correlation chain, newest first (by Start, then by
// correlation id). The list and everything it holds are never modified
// afterwards: while no span arrives, the same list comes back; after one,
// a new list shares every chain that did not change, and its ChangedSince
// says which did. It costs the chains that changed, not all of them.
func (t *Traces) List() ChainList {
	if len(t.dirty) == 0 {
		return t.list
	}
	if t.fold == 0 {
		t.fold = folds.Add(1)
	}
	del := make([]*Chain, 0, len(t.dirty))
	put := make([]*Chain, 0, len(t.dirty))
	for _, cs := range t.dirty {
		cs.dirty = false
		if cs.chain != nil {
			del = append(del, cs.chain)
		}
		built := t.build(cs)
		cs.chain = &built
		put = append(put, cs.chain)
	}
	t.dirty = t.dirty[:0]
	t.out = nil
	l := t.list.Edit(del, put)
	l.fold, l.seq = t.fold, t.list.seq+1
	// The log is copied, never appended to in place: the lists handed out
	// keep theirs. It is at most logMax entries.
	old := t.list.log[max(len(t.list.log)-(logMax-1), 0):]
	l.log = make([]change, 0, len(old)+1)
	l.log = append(append(l.log, old...), change{seq: l.seq, chains: put})
	t.list = l
	return l
}

// when is the time a call sorts by: its start, or its end when the start
// was not seen.
func when(c *Call) time.Time {
	if c.Start.IsZero() {
		return c.End
	}
	return c.Start
}

func earlierFirst(a, b *Call) int {
	if c := when(a).Compare(when(b)); c != 0 {
		return c
	}
	return cmp.Compare(a.RequestID, b.RequestID)
}

// build flattens one chain into tree order: depth first, children by start
// time. A call whose parent is not in the chain is a root; calls caught in
// a cycle of parents start a tree of their own, so every call appears once.
func (t *Traces) build(cs *chainState) Chain {
	calls := make([]*Call, len(cs.ids))
	in := make(map[string]bool, len(cs.ids))
	for i, id := range cs.ids {
		calls[i] = t.calls[id]
		in[id] = true
	}
	slices.SortFunc(calls, earlierFirst)
	var roots []*Call
	children := make(map[string][]*Call)
	for _, c := range calls {
		p := c.ParentRequestID
		if p == "" || p == c.RequestID || !in[p] {
			roots = append(roots, c)
		} else {
			children[p] = append(children[p], c) // in start order: calls is sorted
		}
	}
	ch := Chain{CorrelationID: cs.id, Rows: make([]Row, 0, len(calls))}
	for _, c := range calls {
		if w := when(c); !w.IsZero() && (ch.Start.IsZero() || w.Before(ch.Start)) {
			ch.Start = w
		}
	}
	seen := make(map[string]bool, len(calls))
	type item struct {
		c     *Call
		depth int
	}
	var stack []item
	walk := func(root *Call) {
		stack = append(stack[:0], item{root, 0})
		for len(stack) > 0 {
			it := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if seen[it.c.RequestID] {
				continue
			}
			seen[it.c.RequestID] = true
			ch.Rows = append(ch.Rows, Row{Call: it.c, Depth: it.depth})
			kids := children[it.c.RequestID]
			for i := len(kids) - 1; i >= 0; i-- { // pushed in reverse: popped in order
				if !seen[kids[i].RequestID] {
					stack = append(stack, item{kids[i], it.depth + 1})
				}
			}
		}
	}
	for _, r := range roots {
		walk(r)
	}
	for _, c := range calls { // only calls in a cycle are left
		if !seen[c.RequestID] {
			walk(c)
		}
	}
	return ch
}

// ReadChains folds the whole of a team directory's traces.jsonl into its
// chains, newest first, and says how many lines were not valid spans.
func ReadChains(teamDir string) (chains []Chain, skipped int64, err error) {
	r := NewTraceReader(teamDir)
	spans, err := r.Read()
	if err != nil {
		return nil, 0, err
	}
	folded := NewTraces()
	for _, s := range spans {
		folded.Add(s)
	}
	return folded.Chains(), r.Skipped(), nil
}
