package teamkit

import (
	"context"
	"fmt"
	"testing"
	"time"

	"huddle/internal/testkit/dirrecords"
	"huddle/protocol"
	"huddle/store"
	"huddle/team"
)

// T0 is a creation time for records whose age does not matter, in whole
// microseconds and UTC.
var T0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// PlanRequest is a pending plan of from's, made at created, due ten
// minutes later.
func PlanRequest(id, from string, created time.Time) *protocol.Request {
	r := protocol.NewRequest(protocol.KindPlan, id, from, protocol.Lead, created, 10*time.Minute)
	r.Plan = "plan of " + from
	return &r
}

// MustCreate writes r's record in the team directory dir.
func MustCreate(t testing.TB, dir string, r *protocol.Request) {
	t.Helper()
	if err := dirrecords.CreateRequest(dir, r); err != nil {
		t.Fatalf("CreateRequest %s: %v", r.ID, err)
	}
}

// NewPlan puts a pending plan of from's, due in a minute, in st.
func NewPlan(t *testing.T, ctx context.Context, st store.Store, from string) protocol.Request {
	t.Helper()
	r := protocol.NewRequest(protocol.KindPlan, protocol.NewRequestID(protocol.KindPlan), from, protocol.Lead, time.Now(), time.Minute)
	r.Plan = "do the thing"
	if err := st.CreateRequest(ctx, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// FinalRecords writes n approved plans of alice's in the team directory
// dir and returns their ids.
func FinalRecords(t testing.TB, dir string, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range n {
		r := protocol.NewRequest(protocol.KindPlan, fmt.Sprintf("old%06d", i), "alice", protocol.Lead, time.Now().Add(-time.Hour), time.Minute)
		r.Plan = "an old plan"
		if err := dirrecords.CreateRequest(dir, &r); err != nil {
			t.Fatal(err)
		}
		if _, err := dirrecords.Resolve(dir, r.ID, team.Resolution{Event: protocol.EventApprove, By: "lead"}); err != nil {
			t.Fatal(err)
		}
		ids[i] = r.ID
	}
	return ids
}

// Crew is a team of three external members, to put in a store of any
// kind.
var Crew = team.Team{Name: "crew", Settings: team.Settings{ShutdownDeadline: team.Duration(45 * time.Second)}, Members: []team.MemberSpec{
	{Name: "ana", Runtime: team.RuntimeSpec{Kind: team.RuntimeExternal}},
	{Name: "bo", Runtime: team.RuntimeSpec{Kind: team.RuntimeExternal}},
	{Name: "cy", Runtime: team.RuntimeSpec{Kind: team.RuntimeExternal}},
}}

// EachStore runs f on a store of each kind holding Crew.
func EachStore(t *testing.T, f func(t *testing.T, ctx context.Context, st store.Store, tm *team.Team)) {
	OnEachStore(t, Crew, func(t *testing.T, k *Kept) {
		if k.Tm.Name != "crew" || len(k.Tm.Members) != 3 {
			t.Fatalf("LoadFrom = %+v, want crew with 3 members", k.Tm)
		}
		f(t, t.Context(), k.St, k.Tm)
	})
}
