package replay

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strings"

	"huddle/inbox"
	"huddle/ipc/trace"
	"huddle/protocol"
	"huddle/team"
	"huddle/teamdir"
)

// Timeline is a team's history: team.json and every event, oldest first.
type Timeline struct {
	// TeamJSON is team.json as it was read; Team is it parsed.
	TeamJSON []byte
	Team     *team.Team
	Events   []Event
	// Store is set when the timeline was read from a store (ReadOn), not
	// a team directory: what such a timeline leaves out.
	Store *StoreSource
}

// Read builds the timeline of the team directory dir. It fails only when
// dir holds no readable team.json; a record or line it cannot read is left
// out, as the observer leaves it out.
func Read(dir string) (*Timeline, error) {
	b, err := os.ReadFile(teamdir.ConfigPath(dir))
	if err != nil {
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("%s is not a team directory (no team.json)", dir)
		}
		return nil, fmt.Errorf("timeline: %w", err)
	}
	t, err := team.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	tl := &Timeline{TeamJSON: b, Team: t}
	statuses, err := statusEvents(dir, t)
	if err != nil {
		return nil, err
	}
	requests, err := requestEvents(dir)
	if err != nil {
		return nil, err
	}
	messages, err := messageEvents(dir, t)
	if err != nil {
		return nil, err
	}
	spans, err := spanEvents(dir)
	if err != nil {
		return nil, err
	}
	tl.Events = slices.Concat(statuses, requests, messages, spans)
	sortEvents(tl.Events)
	return tl, nil
}

// sortEvents puts events in time order; events at the same time keep the
// order they were gathered in (statuses, requests, messages, spans, each in
// its file's order).
func sortEvents(evs []Event) {
	slices.SortStableFunc(evs, func(a, b Event) int { return a.At.Compare(b.At) })
}

// memberNames are the members of team.json, then those that left a status
// history or a record without being in it, by name.
func memberNames(dir string, t *team.Team) []string {
	var names []string
	known := map[string]bool{}
	for _, m := range t.Members {
		names, known[m.Name] = append(names, m.Name), true
	}
	var extra []string
	entries, _ := os.ReadDir(teamdir.MembersDirPath(dir))
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".history.jsonl")
		if !ok {
			name, ok = strings.CutSuffix(e.Name(), ".json")
		}
		if ok && !known[name] && protocol.ValidateMemberName(name) == nil {
			extra, known[name] = append(extra, name), true
		}
	}
	slices.Sort(extra)
	return append(names, extra...)
}

// statusEvents are every member's status changes. A member with a record
// but no history (a runtime older than the history file) gives one event:
// the status its record holds.
func statusEvents(dir string, t *team.Team) ([]Event, error) {
	var out []Event
	for _, name := range memberNames(dir, t) {
		base := protocol.Member{Name: name}
		if spec, ok := t.Member(name); ok {
			base.Role, base.Runtime = spec.Role, spec.Runtime.Kind
		}
		rec, _ := team.LoadMember(dir, name)
		if rec != nil {
			base.Role, base.Runtime = cmp.Or(rec.Role, base.Role), cmp.Or(rec.Runtime, base.Runtime)
		}
		changes, err := team.ReadStatusHistory(dir, name, 0)
		if err != nil && !os.IsNotExist(err) {
			return nil, fmt.Errorf("timeline: %w", err)
		}
		if len(changes) == 0 && rec != nil && rec.Status != "" {
			changes = []team.StatusChange{{TS: rec.Since, Status: rec.Status, Activity: rec.Activity, Error: rec.Error}}
		}
		for _, c := range changes {
			m := base
			m.Status, m.Activity, m.Since, m.Error = c.Status, c.Activity, c.TS, c.Error
			out = append(out, Event{At: c.TS, Kind: KindStatus, Member: &m})
		}
	}
	return out, nil
}

// requestEvents are every request's transitions, each carrying the request
// as it was right after it.
func requestEvents(dir string) ([]Event, error) {
	reqs, err := team.ListRequests(dir)
	if err != nil {
		return nil, fmt.Errorf("timeline: %w", err)
	}
	return transitionEvents(reqs), nil
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

// inboxNames are the inboxes to read: the lead's, every member's, and any
// other inbox file present.
func inboxNames(dir string, t *team.Team) []string {
	names := t.InboxNames()
	known := map[string]bool{}
	for _, name := range names {
		known[name] = true
	}
	present, _ := inbox.Names(dir) // a directory that cannot be listed has no other inbox to read
	for _, name := range present {
		if !known[name] {
			names = append(names, name)
		}
	}
	return names
}

// messageEvents are the messages still on disk in every inbox, read as the
// observer reads them: every valid line, consumed or not, the previous
// generation first.
func messageEvents(dir string, t *team.Team) ([]Event, error) {
	var out []Event
	for _, name := range inboxNames(dir, t) {
		if err := inbox.ReadAll(dir, name, func(d inbox.Delivery) {
			msg := d.Msg
			out = append(out, Event{At: msg.TS, Kind: KindMessage, Inbox: name, Offset: d.Offset, Message: &msg})
		}); err != nil {
			return nil, fmt.Errorf("timeline: %w", err)
		}
	}
	return out, nil
}

// spanEvents are the spans of traces.jsonl, in the file's order; lines
// that are not spans are skipped, as the observer skips them.
func spanEvents(dir string) ([]Event, error) {
	spans, err := trace.NewTraceReader(dir).Read()
	if err != nil {
		return nil, fmt.Errorf("timeline: %w", err)
	}
	return spanEventsOf(spans), nil
}
