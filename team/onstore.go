package team

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"huddle/protocol"
	"huddle/store"
)

// The lead's operations on a store (docs/DESIGN.md §16), the same checks,
// messages and errors as lead.go's on a team directory: the CLI and the UI
// call these when the team lives in a store that processes on other
// machines share.

// LostAfter is how long a member may go unseen before it is shown lost: its
// runtime heartbeats every LostAfter/3, so two missed beats are not enough.
const LostAfter = 15 * time.Second

// LoadTeamOn reads and validates the team.json a store holds.
func LoadTeamOn(ctx context.Context, st store.Store) (*Team, error) {
	b, err := st.Config(ctx, store.ConfigTeam)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, errors.New("no team in the store (run 'huddle init --store URL')")
		}
		return nil, fmt.Errorf("team: %w", err)
	}
	return Parse(b)
}

// DecideOn is Decide on a store: the lead's answer to a pending plan, then
// the plan_approval_response to the member. A second decision, from any
// process on any machine, gets an *store.AlreadyError naming the first.
func DecideOn(ctx context.Context, st store.Store, id string, ev protocol.RequestEvent, feedback, by string) (*protocol.Request, error) {
	by, err := checkDecision(id, ev, feedback, by)
	if err != nil {
		return nil, err
	}
	r, err := requestOn(ctx, st, id)
	if err != nil {
		return nil, err
	}
	if err := checkPlan(r); err != nil {
		return nil, err
	}
	r, err = decideOn(ctx, st, id, Resolution{Event: ev, By: by, Text: feedback})
	if err != nil {
		return nil, err
	}
	if err := st.Append(ctx, r.From, decisionMessage(r, ev, feedback)); err != nil {
		return r, toldFailed(r, err)
	}
	return r, nil
}

// requestOn reads a request record, "no request ID" when there is none.
func requestOn(ctx context.Context, st store.Store, id string) (*protocol.Request, error) {
	r, err := st.Request(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("no request %s", id)
	}
	return r, err
}

// decideOn is store.Decide with "no request ID" for an unknown id; a lost
// race is the store's *store.AlreadyError, as on a team directory.
func decideOn(ctx context.Context, st store.Store, id string, res Resolution) (*protocol.Request, error) {
	r, err := st.Decide(ctx, id, store.Decision{Event: res.Event, By: res.By, Text: res.Text, At: time.Now().UTC()})
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("no request %s", id)
	}
	return r, err
}

// SendOn is Send on a store.
func SendOn(ctx context.Context, st store.Store, t *Team, from, to, text string) error {
	m, err := plainMessage(t, from, to, text)
	if err != nil {
		return err
	}
	return st.Append(ctx, to, m)
}

// BroadcastOn is Broadcast on a store: how many members it reached.
func BroadcastOn(ctx context.Context, st store.Store, t *Team, from, text string) (int, error) {
	msgs, err := broadcastMessages(t, from, text)
	if err != nil {
		return 0, err
	}
	for i, m := range msgs {
		if err := st.Append(ctx, m.To, m); err != nil {
			return i, err
		}
	}
	return len(msgs), nil
}

// RequestShutdownOn is RequestShutdown on a store. A member that has ended
// (stopped or crashed) while some runtime of the team is alive gets a
// request cancelled at once; while none is (every live member lost or
// none live), the request waits in the member's inbox for the next one, as
// it does on a team directory whose runtime is down.
func RequestShutdownOn(ctx context.Context, st store.Store, t *Team, member, reason string) (*protocol.Request, error) {
	r, err := newShutdown(t, member, reason)
	if err != nil {
		return nil, err
	}
	if err := st.CreateRequest(ctx, &r); err != nil {
		return nil, err
	}
	states, err := st.Members(ctx, LostAfter)
	if err != nil {
		return nil, fmt.Errorf("members: %w", err)
	}
	if ms, ok := memberState(states, member); ok && ms.Status.IsTerminal() && !DownOn(states) {
		return decideOn(ctx, st, r.ID, alreadyEnded(member, ms.Status))
	}
	if err := st.Append(ctx, member, shutdownAsk(&r)); err != nil {
		return nil, err
	}
	return &r, nil
}

// DownOn reports whether, by the members' records in a store, the team ran
// and no runtime of it is alive now: records exist, and none is of a live
// member seen within the deadline. It is the store's Down: a runtime's
// members are heartbeaten while it runs, and a machine that went away
// leaves them lost.
func DownOn(states []store.MemberState) bool { return !RuntimeOn(states, 0).Running }

func memberState(states []store.MemberState, name string) (store.MemberState, bool) {
	for _, s := range states {
		if s.Name == name {
			return s, true
		}
	}
	return store.MemberState{}, false
}

// DeadLettersOn reads a store's dead letters, oldest first, as
// ReadDeadLetters reads deadletter.jsonl, and says how many were not
// dead letters.
func DeadLettersOn(ctx context.Context, st store.Store) ([]DeadLetter, int, error) {
	all, err := st.DeadLetters(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("dead letters: %w", err)
	}
	var letters []DeadLetter
	skipped := 0
	for _, dl := range all {
		line, err := json.Marshal(dl)
		if err != nil {
			skipped++
			continue
		}
		d, ok := parseDeadLetter(line)
		if !ok {
			skipped++
			continue
		}
		letters = append(letters, d)
	}
	return letters, skipped, nil
}
