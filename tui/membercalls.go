package tui

import (
	"huddle/ipc/trace"
)

// callTally is what some calls of one member add up to on its card: how
// many it made, how many failed, and the latest that failed.
type callTally struct {
	calls, failed int
	lastFailed    *trace.Call
}

// callTallies counts the calls one member made, over every chain of the
// snapshots it is given, without walking every chain on every snapshot:
// it keeps each chain's tally by correlation id and, given the next list
// of the same fold, takes again only the chains that changed since the
// list it last counted (trace.ChainList.ChangedSince), as the traces pane
// does. A list of another fold, or one too far ahead for ChangedSince, or
// another member, is counted from scratch.
type callTallies struct {
	name    string
	from    trace.ChainList      // the list the tallies are of
	byChain map[string]callTally // correlation id → the member's calls in it; no empty tallies
	total   callTally
	// recounts is how many times it counted from scratch (the tests read it).
	recounts int
}

// of is the member's tally over every chain of list.
func (t *callTallies) of(name string, list trace.ChainList) callTally {
	changed, ok := list.ChangedSince(t.from)
	if !ok || t.byChain == nil || name != t.name {
		t.recount(name, list)
		return t.total
	}
	t.from = list
	for _, c := range changed { // a chain may come more than once: the last is its value
		t.put(c)
	}
	return t.total
}

// recount counts every chain of list.
func (t *callTallies) recount(name string, list trace.ChainList) {
	*t = callTallies{name: name, from: list, byChain: map[string]callTally{}, recounts: t.recounts + 1}
	for _, c := range list.All() {
		if ct := tallyChain(c, name); ct.calls > 0 {
			t.byChain[c.CorrelationID] = ct
			t.total.calls += ct.calls
			t.total.failed += ct.failed
			if laterCall(ct.lastFailed, t.total.lastFailed) {
				t.total.lastFailed = ct.lastFailed
			}
		}
	}
}

// put counts chain c in place of what the chain with its correlation id
// counted before.
func (t *callTallies) put(c *trace.Chain) {
	old := t.byChain[c.CorrelationID]
	now := tallyChain(c, t.name)
	if now.calls > 0 {
		t.byChain[c.CorrelationID] = now
	} else {
		delete(t.byChain, c.CorrelationID)
	}
	t.total.calls += now.calls - old.calls
	t.total.failed += now.failed - old.failed
	switch {
	case now.lastFailed != nil && !laterCall(t.total.lastFailed, now.lastFailed):
		t.total.lastFailed = now.lastFailed // later, or the same call as it is now
	case old.lastFailed != nil && !laterCall(t.total.lastFailed, old.lastFailed):
		// The latest failure was in this chain and is no longer: the next
		// latest is in some chain (rare: a failed call does not go back).
		t.total.lastFailed = nil
		for _, ct := range t.byChain {
			if laterCall(ct.lastFailed, t.total.lastFailed) {
				t.total.lastFailed = ct.lastFailed
			}
		}
	}
}

// tallyChain counts the calls name made in chain c.
func tallyChain(c *trace.Chain, name string) callTally {
	var ct callTally
	for _, row := range c.Rows {
		call := row.Call
		if call == nil || call.Caller != name {
			continue
		}
		ct.calls++
		if call.Status == trace.CallError {
			ct.failed++
			if laterCall(call, ct.lastFailed) {
				ct.lastFailed = call
			}
		}
	}
	return ct
}

// laterCall reports whether a comes after b: it started later, or at the
// same time with a greater request id (so the latest is one call whatever
// the order the calls are seen in). Any call comes after nil; nil after
// none.
func laterCall(a, b *trace.Call) bool {
	switch {
	case a == nil:
		return false
	case b == nil:
		return true
	case !a.Start.Equal(b.Start):
		return a.Start.After(b.Start)
	}
	return a.RequestID > b.RequestID
}
