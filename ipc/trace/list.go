package trace

import (
	"cmp"
	"encoding/json"
	"iter"
	"slices"
	"sync/atomic"
)

// ChainList is an immutable sequence of chains, newest first (by Start,
// then by correlation id), built to be handed out on every change: a new
// list shares every chain and almost all of its storage with the list it
// was made from, so making one costs what changed, not what the list
// holds. Neither a list nor the chains it holds are ever modified after
// they are handed out, so any number of goroutines read one without
// locking. The zero value is an empty list.
//
// A list made by Traces.List also says which chains changed since an
// earlier list of the same fold (ChangedSince), so a reader can update
// what it built from the earlier list instead of building it all again.
type ChainList struct {
	chunks []*chunk // in order; never written once handed out
	n      int      // chains
	calls  int      // calls, summed over the chains

	fold uint64   // the Traces that made it (0: made some other way)
	seq  uint64   // grows with every list its fold hands out
	log  []change // the changes of the last lists of the fold, oldest first
}

// chunk is a run of consecutive chains of a list.
type chunk struct {
	chains []*Chain
	calls  int
	owner  uint64 // the edit that made it and may still write it
}

// change is what one list of a fold changed: the chains it put, new or in
// place of the chain with the same correlation id.
type change struct {
	seq    uint64
	chains []*Chain
}

// Bounds of a list's storage and of its change log.
const (
	chunkMax = 128 // a chunk splits in two past this many chains
	logMax   = 64  // ChangedSince answers for the last logMax lists of a fold
)

// edits numbers the edits of lists: a chunk made by one is written only by
// that edit, before its list is handed out.
var edits atomic.Uint64

// ChainListOf is a list of the chains in the order given, which should be
// newest first (as Traces orders them). It changes nothing that it is
// given; the list holds pointers to copies of the chains.
func ChainListOf(chains ...Chain) ChainList {
	ptrs := make([]*Chain, len(chains))
	for i := range chains {
		c := chains[i]
		ptrs[i] = &c
	}
	return ChainListFrom(ptrs)
}

// ChainListFrom is a list of the chains in the order given, which should
// be newest first; it holds the pointers given, and they must not be
// modified afterwards.
func ChainListFrom(chains []*Chain) ChainList {
	var l ChainList
	for i := 0; i < len(chains); i += chunkMax {
		ck := &chunk{chains: slices.Clone(chains[i:min(i+chunkMax, len(chains))])}
		for _, c := range ck.chains {
			ck.calls += len(c.Rows)
		}
		l.chunks = append(l.chunks, ck)
		l.n += len(ck.chains)
		l.calls += ck.calls
	}
	return l
}

// Len is the number of chains.
func (l ChainList) Len() int { return l.n }

// Calls is the number of calls in all the chains.
func (l ChainList) Calls() int { return l.calls }

// At is the i-th chain, 0 the newest. It must not be modified.
func (l ChainList) At(i int) *Chain {
	for _, ck := range l.chunks {
		if i < len(ck.chains) {
			return ck.chains[i]
		}
		i -= len(ck.chains)
	}
	panic("trace: ChainList.At out of range")
}

// All yields every chain with its index, newest first.
func (l ChainList) All() iter.Seq2[int, *Chain] { return l.From(0) }

// From yields the chains from index i on, with their indices.
func (l ChainList) From(i int) iter.Seq2[int, *Chain] {
	return func(yield func(int, *Chain) bool) {
		at := 0
		for _, ck := range l.chunks {
			if i >= at+len(ck.chains) {
				at += len(ck.chains)
				continue
			}
			for j := max(i-at, 0); j < len(ck.chains); j++ {
				if !yield(at+j, ck.chains[j]) {
					return
				}
			}
			at += len(ck.chains)
		}
	}
}

// Slice copies the chains into a slice, newest first.
func (l ChainList) Slice() []Chain {
	out := make([]Chain, 0, l.n)
	for _, c := range l.All() {
		out = append(out, *c)
	}
	return out
}

// MarshalJSON writes the list as an array of its chains, newest first, and
// an empty list as null, as the slice of chains it stands for was.
func (l ChainList) MarshalJSON() ([]byte, error) {
	if l.n == 0 {
		return []byte("null"), nil
	}
	return json.Marshal(l.Slice())
}

// Index finds the chain that sorts where c does (same Start and
// correlation id) in a list in Traces' order. It returns its index and the
// calls of the chains before it.
func (l ChainList) Index(c *Chain) (i, callsBefore int, ok bool) {
	k, j, found := l.find(c)
	if !found {
		return 0, 0, false
	}
	for _, ck := range l.chunks[:k] {
		i += len(ck.chains)
		callsBefore += ck.calls
	}
	for _, x := range l.chunks[k].chains[:j] {
		callsBefore += len(x.Rows)
	}
	return i + j, callsBefore, true
}

// Line finds what stands at line n of the list laid out as each chain's
// header line followed by one line per call: the chain, its index, and the
// call's row in it (-1 for the header). ok is false past the end.
func (l ChainList) Line(n int) (c *Chain, i, row int, ok bool) {
	for _, ck := range l.chunks {
		if lines := len(ck.chains) + ck.calls; n >= lines {
			n -= lines
			i += len(ck.chains)
			continue
		}
		for _, c := range ck.chains {
			if n <= len(c.Rows) {
				return c, i, n - 1, true
			}
			n -= 1 + len(c.Rows)
			i++
		}
	}
	return nil, 0, 0, false
}

// ChangedSince lists the chains put since the list prev, in the order they
// were put (a chain may come more than once; the last is its value in l),
// and reports whether it could: both lists come from the same fold and l
// still remembers every change since prev. Chains are never removed from
// a fold. When it cannot, the reader builds again from the whole list.
func (l ChainList) ChangedSince(prev ChainList) ([]*Chain, bool) {
	if l.fold == 0 || l.fold != prev.fold || prev.seq > l.seq {
		return nil, false
	}
	if prev.seq == l.seq {
		return nil, true
	}
	i, found := slices.BinarySearchFunc(l.log, prev.seq+1, func(c change, seq uint64) int { return cmp.Compare(c.seq, seq) })
	if !found {
		return nil, false
	}
	var out []*Chain
	for _, c := range l.log[i:] {
		out = append(out, c.chains...)
	}
	return out, true
}

// Edit makes a new list from l: del removes the chains that sort where
// each of del does (chains l holds, in Traces' order), then put inserts
// each of put in Traces' order. l is not modified. It costs about the
// chunks touched and the count of chunks, not the chains l holds.
func (l ChainList) Edit(del, put []*Chain) ChainList {
	e := editor{l: l, id: edits.Add(1)}
	e.l.log = nil
	for _, c := range del {
		e.remove(c)
	}
	for _, c := range put {
		e.insert(c)
	}
	out := e.l
	out.fold, out.seq, out.log = 0, 0, nil
	return out
}

// editor changes a list in place, copying on first write each chunk and
// the chunk slice that the list it started from shares.
type editor struct {
	l         ChainList
	id        uint64
	ownChunks bool
}

// newerFirst orders chains by start, newest first, then by id.
func newerFirst(a, b *Chain) int {
	if c := b.Start.Compare(a.Start); c != 0 {
		return c
	}
	return cmp.Compare(a.CorrelationID, b.CorrelationID)
}

// find is where c sorts: the chunk k and the index j in it, and whether a
// chain with c's key stands there. An empty list answers k = 0, j = 0.
func (l ChainList) find(c *Chain) (k, j int, found bool) {
	k, _ = slices.BinarySearchFunc(l.chunks, c, func(ck *chunk, c *Chain) int {
		return newerFirst(ck.chains[len(ck.chains)-1], c)
	})
	if k == len(l.chunks) {
		if k == 0 {
			return 0, 0, false
		}
		k-- // after every chain: at the end of the last chunk
		return k, len(l.chunks[k].chains), false
	}
	j, found = slices.BinarySearchFunc(l.chunks[k].chains, c, newerFirst)
	return k, j, found
}

// writable returns chunk k, copied first when this edit did not make it.
func (e *editor) writable(k int) *chunk {
	if !e.ownChunks {
		e.l.chunks = slices.Clone(e.l.chunks)
		e.ownChunks = true
	}
	ck := e.l.chunks[k]
	if ck.owner != e.id {
		ck = &chunk{chains: slices.Clone(ck.chains), calls: ck.calls, owner: e.id}
		e.l.chunks[k] = ck
	}
	return ck
}

func (e *editor) remove(c *Chain) {
	k, j, found := e.l.find(c)
	if !found {
		return
	}
	ck := e.writable(k)
	gone := ck.chains[j]
	ck.chains = slices.Delete(ck.chains, j, j+1)
	ck.calls -= len(gone.Rows)
	e.l.n--
	e.l.calls -= len(gone.Rows)
	if len(ck.chains) == 0 {
		e.l.chunks = slices.Delete(e.l.chunks, k, k+1)
	}
}

func (e *editor) insert(c *Chain) {
	e.l.n++
	e.l.calls += len(c.Rows)
	if len(e.l.chunks) == 0 {
		e.ownChunks = true
		e.l.chunks = []*chunk{{chains: []*Chain{c}, calls: len(c.Rows), owner: e.id}}
		return
	}
	k, j, _ := e.l.find(c)
	ck := e.writable(k)
	ck.chains = slices.Insert(ck.chains, j, c)
	ck.calls += len(c.Rows)
	if len(ck.chains) > chunkMax {
		half := len(ck.chains) / 2
		right := &chunk{chains: slices.Clone(ck.chains[half:]), owner: e.id}
		ck.chains = ck.chains[:half:half]
		for _, x := range right.chains {
			right.calls += len(x.Rows)
		}
		ck.calls -= right.calls
		e.l.chunks = slices.Insert(e.l.chunks, k+1, right)
	}
}
