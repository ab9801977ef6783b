package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"huddle/protocol"
	"huddle/store"
	"huddle/team"
)

// TestStatusAndRequestsNameCorruptRecords: on both kinds of store, a
// member record and request records that do not read are named, one
// warning line each, beside what reads: status shows the member corrupt;
// requests warns of a pending record that does not read but not of a
// decided one (no pending request either way); --all warns of both and
// lists them as corrupt after the others.
func TestStatusAndRequestsNameCorruptRecords(t *testing.T) {
	onEachDemoStore(t, func(t *testing.T, k *teamOn) {
		ctx := context.Background()
		for _, id := range []string{"pl-c00000000001", "pl-c00000000002", "pl-c00000000003"} {
			r := protocol.NewRequest(protocol.KindPlan, id, "reservas", protocol.Lead, time.Now(), time.Hour)
			r.Plan = "a plan"
			if err := k.st.CreateRequest(ctx, &r); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := k.st.Decide(ctx, "pl-c00000000003", store.Decision{Event: protocol.EventApprove, By: protocol.Lead, At: time.Now()}); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"reservas", "data"} {
			if err := k.st.PutMember(ctx, &protocol.Member{Name: name, Runtime: team.RuntimeScript, Status: protocol.MemberIdle, Since: time.Now()}); err != nil {
				t.Fatal(err)
			}
		}
		k.spoil(t, store.ChangeRequest, "pl-c00000000001")
		k.spoil(t, store.ChangeRequest, "pl-c00000000003")
		k.spoil(t, store.ChangeMember, "data")

		st := k.huddle(t, "status", "--json")
		if st.code != ExitOK || strings.Count(st.stderr, "warning: ") != 1 || !strings.Contains(st.stderr, "is corrupt") {
			t.Fatalf("status: exit %d, stderr %q", st.code, st.stderr)
		}
		var rows []memberRow
		if err := json.Unmarshal([]byte(st.stdout), &rows); err != nil {
			t.Fatalf("status --json: %v\n%s", err, st.stdout)
		}
		byName := map[string]memberRow{}
		for _, r := range rows {
			byName[r.Name] = r
		}
		if r := byName["data"]; r.Status != team.StatusCorrupt || !strings.Contains(r.Error, "is corrupt") {
			t.Errorf("data's row %+v, want it corrupt and why", r)
		}
		if r := byName["reservas"]; r.Status != string(protocol.MemberIdle) {
			t.Errorf("reservas's row %+v, want idle", r)
		}

		pending := k.huddle(t, "requests", "--json")
		var recs []protocol.Request
		if err := json.Unmarshal([]byte(pending.stdout), &recs); err != nil || len(recs) != 1 || recs[0].ID != "pl-c00000000002" {
			t.Fatalf("requests --json: %v\n%s", err, pending.stdout)
		}
		if strings.Count(pending.stderr, "warning: ") != 1 || !strings.Contains(pending.stderr, "pl-c00000000001") {
			t.Fatalf("requests warned %q, want pl-c00000000001 only (pl-c00000000003 is decided)", pending.stderr)
		}

		all := k.huddle(t, "requests", "--all", "--json")
		recs = nil
		if err := json.Unmarshal([]byte(all.stdout), &recs); err != nil || len(recs) != 3 || recs[0].ID != "pl-c00000000002" {
			t.Fatalf("requests --all --json: %v\n%s", err, all.stdout)
		}
		for _, r := range recs[1:] {
			if r.Status != team.StatusCorrupt || (r.ID != "pl-c00000000001" && r.ID != "pl-c00000000003") {
				t.Errorf("requests --all lists %s %s after the readable one, want the corrupt ones", r.ID, r.Status)
			}
		}
		if strings.Count(all.stderr, "warning: ") != 2 {
			t.Fatalf("requests --all warned %q, want both corrupt records", all.stderr)
		}
	})
}
