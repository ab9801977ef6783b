package team

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"huddle/protocol"
	"huddle/store"
	"huddle/teamdir"
)

// TestLateClaimOnAnArchivedRequestLoses: a resolver that read a request
// while it was pending, and claims after it was decided and archived, loses
// and leaves nothing behind.
func TestLateClaimOnAnArchivedRequestLoses(t *testing.T) {
	dir := t.TempDir()
	r := protocol.NewRequest(protocol.KindPlan, "pl-00000000aaaa", "alice", protocol.Lead, time.Now(), time.Hour)
	r.Plan = "a plan"
	if err := CreateRequest(dir, &r); err != nil {
		t.Fatal(err)
	}
	stale, _ := LoadRequest(dir, r.ID)
	final, err := Resolve(dir, r.ID, Resolution{Event: protocol.EventApprove, By: "lead"})
	if err != nil {
		t.Fatal(err)
	}
	if err := Archive(dir, final); err != nil {
		t.Fatal(err)
	}
	_, err = resolve(dir, stale, Resolution{Event: protocol.EventReject, By: "bob", Text: "no"})
	var already *store.AlreadyError
	if !errors.As(err, &already) || already.By != "lead" || already.Status != protocol.RequestApproved {
		t.Fatalf("late claim: %v, want already approved by lead", err)
	}
	if names := liveNames(t, dir); len(names) != 0 {
		t.Fatalf("requests/ after a late claim: %v", names)
	}
	if got, _ := LoadRequest(dir, r.ID); got.Status != protocol.RequestApproved {
		t.Fatalf("record after a late claim: %+v", got)
	}
}

// TestClaimArchivedBeforeItsCheckStillWins: the runtime may apply and
// archive a decision between its claim's link and the claim's look at
// requests/done/ (it watches requests/). The archived decision is then the
// claim's own: it won, and taking it back would fail on a file already
// moved.
func TestClaimArchivedBeforeItsCheckStillWins(t *testing.T) {
	dir := t.TempDir()
	r := protocol.NewRequest(protocol.KindPlan, "pl-00000000bbbb", "alice", protocol.Lead, time.Now(), time.Hour)
	r.Plan = "a plan"
	if err := CreateRequest(dir, &r); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(decision{Event: protocol.EventApprove, By: "lead", At: time.Now().UTC()})
	// What the runtime leaves once it archived this claim: the same
	// decision in done/.
	done, err := teamdir.DoneDecisionPath(dir, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(teamdir.DoneDirPath(dir), teamdir.DirMode); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(done, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if won, err := claimDecision(dir, r.ID, b); err != nil || !won {
		t.Fatalf("claim whose own decision was archived: won %v, %v", won, err)
	}
	// Another resolver's decision archived first: a claim loses, and
	// leaves no live decision behind.
	other, _ := json.Marshal(decision{Event: protocol.EventReject, By: "bob", Text: "no", At: time.Now().UTC()})
	live, _ := teamdir.DecisionPath(dir, r.ID)
	if err := os.Remove(live); err != nil {
		t.Fatal(err)
	}
	if won, err := claimDecision(dir, r.ID, other); err != nil || won {
		t.Fatalf("late claim: won %v, %v", won, err)
	}
	if _, err := os.Stat(live); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a late claim left %s: %v", live, err)
	}
}

// TestArchiveAgainKeepsTheFirstDecision: a request archived once whose
// record came back to requests/ (a stale rewrite) with a late claim's
// decision beside it is archived again without that claim replacing the
// decision that won.
func TestArchiveAgainKeepsTheFirstDecision(t *testing.T) {
	dir := t.TempDir()
	r := protocol.NewRequest(protocol.KindPlan, "pl-00000000bbbb", "alice", protocol.Lead, time.Now(), time.Hour)
	r.Plan = "a plan"
	if err := CreateRequest(dir, &r); err != nil {
		t.Fatal(err)
	}
	final, err := Resolve(dir, r.ID, Resolution{Event: protocol.EventApprove, By: "lead"})
	if err != nil {
		t.Fatal(err)
	}
	if err := Archive(dir, final); err != nil {
		t.Fatal(err)
	}
	live, _ := teamdir.RequestPath(dir, r.ID)
	liveDecision, _ := teamdir.DecisionPath(dir, r.ID)
	if err := writeJSONAtomic(live, final, false); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(liveDecision, []byte(`{"event":"reject","by":"late","at":"2026-01-01T00:00:00Z"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Archive(dir, final); err != nil {
		t.Fatal(err)
	}
	if names := liveNames(t, dir); len(names) != 0 {
		t.Fatalf("requests/ after archiving again: %v", names)
	}
	if d, err := readDecision(dir, r.ID); err != nil || d.By != "lead" || d.Event != protocol.EventApprove {
		t.Fatalf("decision after archiving again: %+v %v", d, err)
	}
}

// TestReadPendingRequestsSkipsDecidedRecords: a record with a decision file
// beside it is not read (a corrupt one goes unnoticed); a pending one is.
func TestReadPendingRequestsSkipsDecidedRecords(t *testing.T) {
	dir := t.TempDir()
	pending := protocol.NewRequest(protocol.KindPlan, "pl-00000000cccc", "alice", protocol.Lead, time.Now(), time.Hour)
	pending.Plan = "a plan"
	if err := CreateRequest(dir, &pending); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"pl-00000000dddd.json", "pl-00000000dddd.decision"} {
		if err := os.WriteFile(filepath.Join(dir, "requests", name), []byte("{torn"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, bad, err := ReadPendingRequests(dir)
	if err != nil || len(bad) != 0 || len(got) != 1 || got[0].ID != pending.ID {
		t.Fatalf("ReadPendingRequests = %+v, corrupt %+v, %v", got, bad, err)
	}
}

// liveNames lists requests/ itself (not the archive).
func liveNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(teamdir.RequestsDirPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}
