package replay

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"huddle/ipc/trace"
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

// Read builds the timeline of the team st keeps: team.json, every
// request's transitions (archived ones too), the messages the inboxes
// still hold, every span, and the members' statuses. local is the team
// directory st is kept in (the files store on it), or "" for a store
// alone: the status histories stay in a machine's local directory
// (docs/ARCHITECTURE.md, "The team directory and the store"), so with
// local each member's moves are read there and the timeline leaves
// nothing out, and without it each member is its current record, at its
// since, and Store says what is left out. It fails when there is no
// readable team.json or a read fails; it consumes, commits and writes
// nothing.
func Read(ctx context.Context, st store.Store, local string) (*Timeline, error) {
	b, err := st.Config(ctx, store.ConfigTeam)
	switch {
	case errors.Is(err, store.ErrNotFound) && local != "":
		return nil, fmt.Errorf("%s is not a team directory (no team.json)", local)
	case errors.Is(err, store.ErrNotFound):
		return nil, errors.New("no team in the store (run 'huddle init --store URL')")
	case err != nil:
		return nil, fmt.Errorf("timeline: team: %w", err)
	}
	t, err := team.Parse(b)
	if err != nil {
		if local != "" {
			return nil, fmt.Errorf("%s: %w", local, err)
		}
		return nil, fmt.Errorf("timeline: %w", err)
	}
	// Asked first: a store that cannot read its spans fails before the
	// rest is read for nothing.
	sr, ok := st.(store.SpanReader)
	if !ok {
		return nil, errors.New("timeline: this store cannot read its spans")
	}
	var left []string
	if local == "" {
		left = append(left, LeftOutHistories)
	}
	states, _, err := st.Members(ctx, team.LostAfter)
	if err != nil {
		return nil, fmt.Errorf("timeline: members: %w", err)
	}
	statuses, err := statusEvents(t, states, local)
	if err != nil {
		return nil, err
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
		byInbox(t, messages)
		if local == "" {
			left = append(left, LeftOutMessages)
		}
	} else {
		left = append(left, LeftOutNoMessages)
	}
	spans, _, err := sr.Spans(ctx)
	if err != nil {
		return nil, fmt.Errorf("timeline: %w", err)
	}
	if local == "" {
		left = append(left, LeftOutSpans, LeftOutLogs)
	}
	tl := &Timeline{TeamJSON: b, Team: t}
	if len(left) > 0 {
		tl.Store = &StoreSource{LeftOut: left}
	}
	tl.Events = slices.Concat(statuses, transitionEvents(reqs), messages, spanEventsOf(spans))
	sortEvents(tl.Events)
	return tl, nil
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
