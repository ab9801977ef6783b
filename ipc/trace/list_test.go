package trace

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

// randomSpans are n spans of calls in a few hundred chains, in an order
// that moves chains (an end span before its start, a child before its
// parent, starts older than a chain's first call), with repeats.
func randomSpans(r *rand.Rand, n int) []Span {
	var out []Span
	for len(out) < n {
		i := r.IntN(n)
		corr := fmt.Sprintf("corr-%d", i%300)
		parent := ""
		if i >= 300 && r.IntN(3) > 0 {
			parent = fmt.Sprintf("req-%d", i-300)
		}
		req := fmt.Sprintf("req-%d", i)
		at := time.Duration(r.IntN(100000)) * time.Millisecond
		if r.IntN(2) == 0 {
			out = append(out, start(req, corr, parent, "data", at))
		} else {
			out = append(out, end(req, corr, parent, "data", at, CallOK, 3))
		}
	}
	return out
}

// want is what a list must hold: the chains of a fold built from scratch.
func want(spans []Span) []Chain {
	tr := NewTraces()
	for _, s := range spans {
		tr.Add(s)
	}
	return tr.Chains()
}

// sameChains fails unless got holds chains equal to want, in its order.
func sameChains(t *testing.T, what string, got ChainList, want []Chain) {
	t.Helper()
	if got.Len() != len(want) {
		t.Fatalf("%s: %d chains, want %d", what, got.Len(), len(want))
	}
	calls := 0
	for i, c := range got.All() {
		w := want[i]
		if c.CorrelationID != w.CorrelationID || !c.Start.Equal(w.Start) || len(c.Rows) != len(w.Rows) {
			t.Fatalf("%s: chain %d is %s (%d calls), want %s (%d calls)", what, i, c.CorrelationID, len(c.Rows), w.CorrelationID, len(w.Rows))
		}
		for j := range c.Rows {
			if *c.Rows[j].Call != *w.Rows[j].Call || c.Rows[j].Depth != w.Rows[j].Depth {
				t.Fatalf("%s: chain %s row %d is %+v, want %+v", what, c.CorrelationID, j, *c.Rows[j].Call, *w.Rows[j].Call)
			}
		}
		calls += len(c.Rows)
	}
	if got.Calls() != calls {
		t.Fatalf("%s: Calls says %d, the chains hold %d", what, got.Calls(), calls)
	}
}

// TestChainListFollowsTheFold folds random spans one at a time; after each,
// the list is the fold built from scratch, and At, Index and Line agree
// with the order.
func TestChainListFollowsTheFold(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	spans := randomSpans(r, 1500)
	tr := NewTraces()
	for i, s := range spans {
		tr.Add(s)
		if i%13 != 0 && i != len(spans)-1 {
			continue // several spans between two lists, too
		}
		l := tr.List()
		sameChains(t, fmt.Sprintf("after %d spans", i+1), l, want(spans[:i+1]))
	}
	l := tr.List()
	line, callsBefore := 0, 0
	for i, c := range l.All() {
		if l.At(i) != c {
			t.Fatalf("At(%d) is not the chain All yields", i)
		}
		gi, gb, ok := l.Index(c)
		if !ok || gi != i || gb != callsBefore {
			t.Fatalf("Index(%s) = %d, %d, %v; want %d, %d", c.CorrelationID, gi, gb, ok, i, callsBefore)
		}
		for row := -1; row < len(c.Rows); row++ {
			gc, gi, grow, ok := l.Line(line)
			if !ok || gc != c || gi != i || grow != row {
				t.Fatalf("Line(%d) = %v, %d, %d; want %s, %d, %d", line, ok, gi, grow, c.CorrelationID, i, row)
			}
			line++
		}
		callsBefore += len(c.Rows)
	}
	if _, _, _, ok := l.Line(line); ok {
		t.Fatal("Line past the end found something")
	}
	var froms []string
	for _, c := range l.From(l.Len() - 3) {
		froms = append(froms, c.CorrelationID)
	}
	if len(froms) != 3 || froms[2] != l.At(l.Len()-1).CorrelationID {
		t.Fatalf("From(len-3) yields %v", froms)
	}
}

// TestChainListHandedOutNeverChanges keeps every list a fold hands out,
// with what it held, goes on folding (and reading the old lists from
// another goroutine, for the race detector), and checks that each old list
// still holds the same chains with the same calls.
func TestChainListHandedOutNeverChanges(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	spans := randomSpans(r, 2000)
	type kept struct {
		l      ChainList
		chains []*Chain
		calls  [][]Call
	}
	keep := func(l ChainList) kept {
		k := kept{l: l}
		for _, c := range l.All() {
			k.chains = append(k.chains, c)
			var calls []Call
			for _, row := range c.Rows {
				calls = append(calls, *row.Call)
			}
			k.calls = append(k.calls, calls)
		}
		return k
	}
	tr := NewTraces()
	var old []kept
	lists := make(chan ChainList, 64)
	var wg sync.WaitGroup
	wg.Go(func() {
		for l := range lists {
			n := 0
			for _, c := range l.All() {
				n += len(c.Rows)
			}
			if n != l.Calls() {
				t.Errorf("a list read while the fold went on has %d calls, says %d", n, l.Calls())
			}
		}
	})
	for i, s := range spans {
		tr.Add(s)
		if i%25 == 0 {
			l := tr.List()
			old = append(old, keep(l))
			lists <- l
		}
	}
	close(lists)
	wg.Wait()
	for i, k := range old {
		now := keep(k.l)
		if !slices.Equal(now.chains, k.chains) {
			t.Fatalf("list %d: its chains changed after it was handed out", i)
		}
		for j := range now.calls {
			if !slices.Equal(now.calls[j], k.calls[j]) {
				t.Fatalf("list %d: the calls of %s changed after it was handed out", i, k.chains[j].CorrelationID)
			}
		}
	}
}

// TestChainListChangedSince: applying what ChangedSince lists to the chains
// of an earlier list gives the later list; it declines across folds and
// past what the log remembers.
func TestChainListChangedSince(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	spans := randomSpans(r, 2000)
	tr := NewTraces()
	var lists []ChainList
	for i, s := range spans {
		tr.Add(s)
		if i%3 == 0 {
			lists = append(lists, tr.List())
		}
	}
	last := tr.List()
	for back := 1; back <= logMax+2; back++ {
		prev := lists[len(lists)-back]
		changed, ok := last.ChangedSince(prev)
		if last.seq-prev.seq > logMax {
			if ok {
				t.Fatalf("ChangedSince answered for a list %d lists back; the log holds %d", back, logMax)
			}
			continue
		}
		if !ok {
			t.Fatalf("ChangedSince declined a list %d back", back)
		}
		byID := map[string]*Chain{}
		for _, c := range prev.All() {
			byID[c.CorrelationID] = c
		}
		for _, c := range changed {
			byID[c.CorrelationID] = c
		}
		if len(byID) != last.Len() {
			t.Fatalf("%d back: %d chains after the changes, want %d", back, len(byID), last.Len())
		}
		for _, c := range last.All() {
			if byID[c.CorrelationID] != c {
				t.Fatalf("%d back: chain %s is not the list's", back, c.CorrelationID)
			}
		}
	}
	if changed, ok := last.ChangedSince(last); !ok || len(changed) != 0 {
		t.Fatalf("since itself: %d changed, %v", len(changed), ok)
	}
	other := NewTraces()
	other.Add(spans[0])
	if _, ok := other.List().ChangedSince(last); ok {
		t.Fatal("ChangedSince answered for a list of another fold")
	}
	if _, ok := last.ChangedSince(ChainListOf(last.Slice()...)); ok {
		t.Fatal("ChangedSince answered for a list no fold made")
	}
}

// TestChainListEdit: Edit on a list in the given order removes and puts
// chains where they sort, and leaves the list it started from alone.
func TestChainListEdit(t *testing.T) {
	var chains []Chain
	for i := range 1000 {
		chains = append(chains, Chain{CorrelationID: fmt.Sprintf("c%04d", i), Start: time.Unix(int64(10000-i), 0),
			Rows: rowsOf(i % 3)})
	}
	base := ChainListOf(chains...)
	sameChains(t, "ChainListOf", base, chains)
	var del, put []*Chain
	for i := 0; i < 1000; i += 3 {
		del = append(del, base.At(i))
	}
	moved := Chain{CorrelationID: "c0500", Start: time.Unix(1, 0)} // now the oldest
	put = append(put, &moved, &Chain{CorrelationID: "new", Start: time.Unix(20000, 0), Rows: rowsOf(2)})
	del = append(del, base.At(500))
	got := base.Edit(del, put)
	var exp []Chain
	exp = append(exp, *put[1])
	for i, c := range chains {
		if i%3 != 0 && i != 500 {
			exp = append(exp, c)
		}
	}
	exp = append(exp, moved)
	sameChains(t, "edited", got, exp)
	sameChains(t, "the list edited", base, chains)
	empty := got.Edit(got.Slice2(), nil)
	if empty.Len() != 0 || empty.Calls() != 0 {
		t.Fatalf("all removed: %d chains, %d calls", empty.Len(), empty.Calls())
	}
}

func rowsOf(n int) []Row {
	rows := make([]Row, n)
	for i := range rows {
		rows[i].Call = &Call{RequestID: fmt.Sprint("req-", i)}
	}
	return rows
}

// Slice2 is every chain of l as pointers (for Edit).
func (l ChainList) Slice2() []*Chain {
	var out []*Chain
	for _, c := range l.All() {
		out = append(out, c)
	}
	return out
}
