package replay

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strings"

	"huddle/protocol"
	"huddle/store"
	"huddle/team"
	"huddle/teamdir"
)

// Timeline is a team's history: team.json and every event, oldest first.
type Timeline struct {
	// TeamJSON is team.json as it was read; Team is it parsed.
	TeamJSON []byte
	Team     *team.Team
	Events   []Event
	// Store is set when the timeline was read from a store without its
	// team directory (Read): what such a timeline leaves out.
	Store *StoreSource
}

// sortEvents puts events in time order; events at the same time keep the
// order they were gathered in (statuses, requests, messages, spans, each in
// its file's order).
func sortEvents(evs []Event) {
	slices.SortStableFunc(evs, func(a, b Event) int { return a.At.Compare(b.At) })
}

// memberNames are the members of team.json, then those that left a
// record (states) or, in local, a status history without being in it, by
// name.
func memberNames(t *team.Team, states []store.MemberState, local string) []string {
	var names []string
	known := map[string]bool{}
	for _, m := range t.Members {
		names, known[m.Name] = append(names, m.Name), true
	}
	var extra []string
	add := func(name string) {
		if !known[name] && protocol.ValidateMemberName(name) == nil {
			extra, known[name] = append(extra, name), true
		}
	}
	for i := range states {
		add(states[i].Name)
	}
	if local != "" {
		entries, _ := os.ReadDir(teamdir.MembersDirPath(local))
		for _, e := range entries {
			if name, ok := strings.CutSuffix(e.Name(), ".history.jsonl"); ok {
				add(name)
			}
		}
	}
	slices.Sort(extra)
	return append(names, extra...)
}

// statusEvents are every member's status changes: its history in local
// (when given), else one event, the status its record holds, at its since
// (when it has none, when it was last seen).
func statusEvents(t *team.Team, states []store.MemberState, local string) ([]Event, error) {
	byName := map[string]*store.MemberState{}
	for i := range states {
		byName[states[i].Name] = &states[i]
	}
	var out []Event
	for _, name := range memberNames(t, states, local) {
		base := protocol.Member{Name: name}
		if spec, ok := t.Member(name); ok {
			base.Role, base.Runtime = spec.Role, spec.Runtime.Kind
		}
		rec := byName[name]
		if rec != nil {
			base.Role, base.Runtime = cmp.Or(rec.Role, base.Role), cmp.Or(rec.Runtime, base.Runtime)
		}
		var changes []team.StatusChange
		if local != "" {
			var err error
			changes, err = team.ReadStatusHistory(local, name, 0)
			if err != nil && !os.IsNotExist(err) {
				return nil, fmt.Errorf("timeline: %w", err)
			}
		}
		if len(changes) == 0 && rec != nil && rec.Status != "" {
			since := cmp.Or(rec.Since, rec.Seen)
			changes = []team.StatusChange{{TS: since, Status: rec.Status, Activity: rec.Activity, Error: rec.Error}}
		}
		for _, c := range changes {
			m := base
			m.Status, m.Activity, m.Since, m.Error = c.Status, c.Activity, c.TS, c.Error
			out = append(out, Event{At: c.TS, Kind: KindStatus, Member: &m})
		}
	}
	return out, nil
}

// transitionEvents are the transitions of reqs, each carrying the request
// as it was right after it; a request without a history is one event at
// its creation.
func transitionEvents(reqs []protocol.Request) []Event {
	var out []Event
	for i := range reqs {
		r := &reqs[i]
		if len(r.History) == 0 {
			c := *r
			out = append(out, Event{At: r.Created, Kind: KindRequest, Request: &c})
			continue
		}
		for k := range r.History {
			c := AsOf(r, k)
			out = append(out, Event{At: r.History[k].At, Kind: KindRequest, Request: c})
		}
	}
	return out
}

// AsOf is request r as it was right after its k-th transition: that
// transition's status, the history up to it, and the answer only once the
// request is final.
func AsOf(r *protocol.Request, k int) *protocol.Request {
	c := *r
	tr := r.History[k]
	c.History = slices.Clip(r.History[:k+1])
	c.Status = tr.To
	if !c.Status.IsTerminal() {
		c.Approve, c.Feedback, c.ResponseReason, c.ResolvedBy, c.ResolvedAt = nil, "", "", "", nil
	} else if k < len(r.History)-1 || c.ResolvedAt == nil {
		at := tr.At
		c.ResolvedAt, c.ResolvedBy = &at, tr.By
	}
	return &c
}

// byInbox puts messages in the order a directory's inboxes are read in:
// the lead's, every member's in team.json's order, then any other inbox
// by name; each inbox's in its own order.
func byInbox(t *team.Team, evs []Event) {
	rank := map[string]int{}
	for i, name := range t.InboxNames() {
		rank[name] = i - len(t.InboxNames()) // before every other
	}
	slices.SortStableFunc(evs, func(a, b Event) int {
		ra, oka := rank[a.Inbox]
		rb, okb := rank[b.Inbox]
		switch {
		case oka && okb:
			return cmp.Compare(ra, rb)
		case oka:
			return -1
		case okb:
			return 1
		}
		return strings.Compare(a.Inbox, b.Inbox)
	})
}
