package team

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"huddle/protocol"
	"huddle/store"
)

// Reading a team kept in a store (docs/ARCHITECTURE.md, "The team directory and the store").

// LostAfter is how long a member may go unseen before it is shown lost: its
// runtime heartbeats every LostAfter/3, so two missed beats are not enough.
const LostAfter = 15 * time.Second

// LoadFrom reads and validates the team.json a store holds.
func LoadFrom(ctx context.Context, st store.Store) (*Team, error) {
	b, err := st.Config(ctx, store.ConfigTeam)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, errors.New("no team in the store (run 'huddle init' with its --dir or --store)")
		}
		return nil, fmt.Errorf("team: %w", err)
	}
	return Parse(b)
}

// requestFrom reads a request record, "no request ID" when there is none.
func requestFrom(ctx context.Context, st store.Store, id string) (*protocol.Request, error) {
	r, err := st.Request(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("no request %s", id)
	}
	return r, err
}

// Resolution is what a resolver decides.
type Resolution struct {
	Event protocol.RequestEvent
	By    string
	// Text is the feedback of a plan or permission decision or the reason
	// of a shutdown answer, a cancellation or an expiry.
	Text string
	// Scope is an allowed permission's (protocol.ScopeSession or once).
	Scope string
}

// Settle is store.Decide with "no request ID" for an unknown id; a lost
// race is the store's *store.AlreadyError, as on a team directory.
func Settle(ctx context.Context, st store.Store, id string, res Resolution) (*protocol.Request, error) {
	r, err := st.Decide(ctx, id, store.Decision{Event: res.Event, By: res.By, Text: res.Text, Scope: res.Scope, At: time.Now().UTC()})
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("no request %s", id)
	}
	return r, err
}

// DownByRecords reports whether, by the members' records in a store, the team ran
// and no runtime of it is alive now: records exist, and none is of a live
// member seen within the deadline. It is the store's Down: a runtime's
// members are heartbeaten while it runs, and a machine that went away
// leaves them lost.
func DownByRecords(states []store.MemberState) bool {
	return !RuntimeFromRecords(slices.Values(states), 0).Running
}

// DeadLetters reads the dead letters of the team st keeps, oldest first,
// each read for a person, and says how many entries were not dead
// letters (skipped, never fatal).
func DeadLetters(ctx context.Context, st store.Store) ([]DeadLetter, int, error) {
	all, skipped, err := st.DeadLetters(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("dead letters: %w", err)
	}
	var letters []DeadLetter
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
