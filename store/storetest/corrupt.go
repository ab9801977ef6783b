package storetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"huddle/protocol"
	"huddle/store"
)

// Spoil overwrites the record of kind (store.ChangeRequest or
// store.ChangeMember) named name with bytes that do not read, as a torn
// write or a foreign writer leaves it: each store says how.
type Spoil func(t *testing.T, kind store.ChangeKind, name string)

// RunCorrupt holds a store to what it does with records that do not read:
// the lists name them beside what they read, Request returns a
// *store.CorruptError, with what the decision alone says when the record
// had one, and the records around them read as before.
func RunCorrupt(t *testing.T, s store.Store, spoil Spoil) {
	ctx := t.Context()
	now := time.Now()
	mk := func(id string) *protocol.Request {
		r := protocol.NewRequest(protocol.KindPlan, id, "alice", protocol.Lead, now, time.Hour)
		r.Plan = "a plan"
		return &r
	}
	for _, id := range []string{"pl-c00000000001", "pl-c00000000002", "pl-c00000000003"} {
		if err := s.CreateRequest(ctx, mk(id)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Decide(ctx, "pl-c00000000003", store.Decision{Event: protocol.EventApprove, By: "cli", Text: "go", At: now}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"alice", "bob"} {
		if err := s.PutMember(ctx, &protocol.Member{Name: n, Role: "r", Runtime: "script", Status: protocol.MemberWorking, Since: now}); err != nil {
			t.Fatal(err)
		}
	}
	spoil(t, store.ChangeRequest, "pl-c00000000001")
	spoil(t, store.ChangeRequest, "pl-c00000000003")
	spoil(t, store.ChangeMember, "bob")

	names := func(bad []store.CorruptError) []string {
		var out []string
		for _, ce := range bad {
			if ce.File == "" || ce.Err == "" {
				t.Errorf("%+v names no place or no reason", ce)
			}
			out = append(out, ce.Name)
		}
		slices.Sort(out)
		return out
	}
	ids := func(rs []protocol.Request) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}
	live, bad, err := s.LiveRequests(ctx)
	if err != nil || !slices.Equal(ids(live), []string{"pl-c00000000002"}) || !slices.Equal(names(bad), []string{"pl-c00000000001", "pl-c00000000003"}) {
		t.Errorf("LiveRequests = %v, corrupt %v, %v; want pl-c00000000002, corrupt 1 and 3", ids(live), names(bad), err)
	}
	all, bad, err := s.Requests(ctx)
	if err != nil || !slices.Equal(ids(all), []string{"pl-c00000000002"}) || len(bad) != 2 {
		t.Errorf("Requests = %v, corrupt %v, %v; want pl-c00000000002, two corrupt", ids(all), names(bad), err)
	}
	ms, bad, err := s.Members(ctx, time.Hour)
	if err != nil || len(ms) != 1 || ms[0].Name != "alice" || !slices.Equal(names(bad), []string{"bob"}) {
		t.Errorf("Members = %+v, corrupt %v, %v; want alice, corrupt bob", ms, names(bad), err)
	}
	var ce *store.CorruptError
	if r, err := s.Request(ctx, "pl-c00000000001"); !errors.As(err, &ce) || r != nil || ce.Name != "pl-c00000000001" {
		t.Errorf("Request of a corrupt record without a decision = %+v, %v; want nil and a CorruptError", r, err)
	}
	r, err := s.Request(ctx, "pl-c00000000003")
	if !errors.As(err, &ce) || r == nil || r.Status != protocol.RequestApproved || r.ResolvedBy != "cli" || r.Feedback != "go" {
		t.Errorf("Request of a corrupt record with a decision = %+v, %v; want approved by cli, feedback go, and a CorruptError", r, err)
	}
	if _, err := s.Member(ctx, "bob", time.Hour); !errors.As(err, &ce) || ce.Name != "bob" {
		t.Errorf("Member of a corrupt record: %v, want a CorruptError", err)
	}
}
