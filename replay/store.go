package replay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"huddle/ipc/trace"
	"huddle/protocol"
	"huddle/store"
	"huddle/team"
)

// StoreSource says that a timeline was read from a store, and what of the
// team's history it leaves out that a team directory's would hold. It is
// the "store" field of an export's header (absent from a directory's).
type StoreSource struct {
	LeftOut []string `json:"left_out"`
}

// What a timeline read from a store leaves out, each for a reason of
// docs/ARCHITECTURE.md, "The team directory and the store"
const (
	LeftOutHistories = "member status histories: each member is its current record, at its since " +
		"(the histories stay in the local directory of the machine that runs it)"
	LeftOutMessages = "messages the store no longer holds (NATS removes a message one to two purge " +
		"intervals after its member's consumer committed it, and an answer once its caller took it; " +
		"the files store keeps an inbox's consumed lines until its compaction): " +
		"the messages in are those the inboxes held at export"
	LeftOutNoMessages = "messages: this store cannot read its inboxes without consuming them"
	LeftOutSpans      = "spans older than the store keeps them (NATS: its trace age limit, 7 days by default)"
	LeftOutLogs       = "logs and transcripts ('huddle logs MEMBER --store URL' prints the store's copy)"
)

// ReadOn builds the timeline of the team kept in st: team.json from the
// store, every request's transitions (archived ones too), every span, each
// member's record as one status event at its since, and the messages the
// inboxes still hold. It fails when the store holds no team.json or a
// read fails; it consumes, commits and writes nothing.
func ReadOn(ctx context.Context, st store.Store) (*Timeline, error) {
	b, err := st.Config(ctx, store.ConfigTeam)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errors.New("no team in the store (run 'huddle init --store URL')")
	}
	if err != nil {
		return nil, fmt.Errorf("timeline: team: %w", err)
	}
	t, err := team.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("timeline: %w", err)
	}
	// Asked first: a store that cannot read its spans fails before the
	// rest is read for nothing.
	sr, ok := st.(store.SpanReader)
	if !ok {
		return nil, errors.New("timeline: this store cannot read its spans")
	}
	src := &StoreSource{LeftOut: []string{LeftOutHistories}}
	tl := &Timeline{TeamJSON: b, Team: t, Store: src}
	states, _, err := st.Members(ctx, team.LostAfter)
	if err != nil {
		return nil, fmt.Errorf("timeline: members: %w", err)
	}
	reqs, _, err := st.Requests(ctx)
	if err != nil {
		return nil, fmt.Errorf("timeline: requests: %w", err)
	}
	var messages []Event
	if mr, ok := st.(store.MessageReader); ok {
		ds, err := mr.Messages(ctx)
		if err != nil {
			return nil, fmt.Errorf("timeline: %w", err)
		}
		messages = deliveryEvents(ds)
		src.LeftOut = append(src.LeftOut, LeftOutMessages)
	} else {
		src.LeftOut = append(src.LeftOut, LeftOutNoMessages)
	}
	spans, _, err := sr.Spans(ctx)
	if err != nil {
		return nil, fmt.Errorf("timeline: %w", err)
	}
	src.LeftOut = append(src.LeftOut, LeftOutSpans, LeftOutLogs)
	tl.Events = slices.Concat(memberEvents(t, states), transitionEvents(reqs), messages, spanEventsOf(spans))
	sortEvents(tl.Events)
	return tl, nil
}

// memberEvents are the members' records as status events at their since:
// those of team.json first, then the others with a record, by name (as
// Members sorts them). A member with no record has no event, as on a
// directory a member that never ran has none.
func memberEvents(t *team.Team, states []store.MemberState) []Event {
	byName := map[string]*store.MemberState{}
	for i := range states {
		byName[states[i].Name] = &states[i]
	}
	var out []Event
	add := func(s *store.MemberState) {
		m := s.Member
		if spec, ok := t.Member(m.Name); ok {
			m.Role, m.Runtime = cmp.Or(m.Role, spec.Role), cmp.Or(m.Runtime, spec.Runtime.Kind)
		}
		if m.Since.IsZero() {
			m.Since = s.Seen
		}
		if m.Status == "" || protocol.ValidateName(m.Name) != nil {
			return
		}
		out = append(out, Event{At: m.Since, Kind: KindStatus, Member: &m})
	}
	for _, spec := range t.Members {
		if s, ok := byName[spec.Name]; ok {
			add(s)
			delete(byName, spec.Name)
		}
	}
	for i := range states {
		if s, ok := byName[states[i].Name]; ok {
			add(s)
		}
	}
	return out
}

// deliveryEvents are the messages a store read, each in the inbox it is
// addressed to.
func deliveryEvents(ds []store.Delivery) []Event {
	out := make([]Event, 0, len(ds))
	for i := range ds {
		msg := ds[i].Msg
		out = append(out, Event{At: msg.TS, Kind: KindMessage, Inbox: msg.To, Offset: ds[i].Seq, Message: &msg})
	}
	return out
}

// spanEventsOf are spans as events, in their order.
func spanEventsOf(spans []trace.Span) []Event {
	out := make([]Event, len(spans))
	for i := range spans {
		s := spans[i]
		out[i] = Event{At: s.TS, Kind: KindSpan, Span: &s}
	}
	return out
}
