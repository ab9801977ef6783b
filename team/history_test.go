package team

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/protocol"
	"huddle/store"
	"huddle/teamdir"
)

// appendLine writes raw lines to a member's inbox as a foreign agent would.
func appendLine(t *testing.T, dir, member, lines string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "inbox"), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "inbox", member+".jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(lines); err != nil {
		t.Fatal(err)
	}
}

// TestForeignPlanStampedYearsAgoIsPendingAfterReceipt: a foreign agent's
// clock says its plan was written three years ago; the deadline counts from
// when huddle received it, so the plan is pending, not expired at once.
func TestForeignPlanStampedYearsAgoIsPendingAfterReceipt(t *testing.T) {
	dir := t.TempDir()
	writeTeam(t, dir, Team{Name: "t", Members: []MemberSpec{
		{Name: "ext", Role: "crawler", Runtime: RuntimeSpec{Kind: RuntimeExternal}},
	}})
	startTeam(t, dir, Options{})
	stamped := time.Now().AddDate(-3, 0, 0)
	received := time.Now()
	appendLine(t, dir, protocol.Lead, fmt.Sprintf(`{"type":"plan_approval_request","from":"ext","to":"lead","request_id":"old0clock","plan":"crawl","ts":%q}`+"\n",
		stamped.UTC().Format(time.RFC3339Nano)))
	testkit.WaitFor(t, 5*time.Second, "the record of the foreign plan", func() bool { r, _ := LoadRequest(dir, "old0clock"); return r != nil })
	r, _ := LoadRequest(dir, "old0clock")
	if want := received.Add(DefaultApprovalDeadline); r.Deadline.Before(want.Add(-time.Second)) || r.Created.Before(received.Add(-time.Second)) {
		t.Fatalf("deadline %v (created %v): want it to count from receipt, about %v", r.Deadline, r.Created, want)
	}
	got, err := dirDecide(dir, "old0clock", protocol.EventApprove, "", "")
	if err != nil || got.Status != protocol.RequestApproved {
		t.Fatalf("approve the foreign plan: %+v %v (want it still pending after receipt)", got, err)
	}
}

// finalRecords writes n final plan requests, each with its decision, as a
// team that has run for a long time has them.
func finalRecords(t testing.TB, dir string, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range n {
		r := protocol.NewRequest(protocol.KindPlan, fmt.Sprintf("old%06d", i), "alice", protocol.Lead, time.Now().Add(-time.Hour), time.Minute)
		r.Plan = "an old plan"
		if err := CreateRequest(dir, &r); err != nil {
			t.Fatal(err)
		}
		if _, err := Resolve(dir, r.ID, Resolution{Event: protocol.EventApprove, By: "lead"}); err != nil {
			t.Fatal(err)
		}
		ids[i] = r.ID
	}
	return ids
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

// TestTickArchivesFinalRecordsAndNeverReadsThem: final records move to
// requests/done/ (record and decision), requests/ keeps what can still
// change, and later ticks read no archived record; history is still listed.
func TestTickArchivesFinalRecordsAndNeverReadsThem(t *testing.T) {
	dir := t.TempDir()
	writeTeam(t, dir, Team{Name: "t", Members: []MemberSpec{
		scripted("alice", "", Step{Wait: Duration(time.Hour)}),
	}})
	ids := finalRecords(t, dir, 200)
	live := protocol.NewRequest(protocol.KindShutdown, "sd-still0live", protocol.Lead, "alice", time.Now(), time.Hour)
	if err := CreateRequest(dir, &live); err != nil {
		t.Fatal(err)
	}
	startTeam(t, dir, Options{})
	testkit.WaitFor(t, 10*time.Second, "requests/ to hold only the pending record", func() bool {
		names := liveNames(t, dir)
		return len(names) == 1 && names[0] == "sd-still0live.json"
	})
	for _, id := range ids[:3] {
		for _, ext := range []string{".json", ".decision"} {
			if _, err := os.Stat(filepath.Join(teamdir.DoneDirPath(dir), id+ext)); err != nil {
				t.Fatalf("archive of %s: %v", id, err)
			}
		}
	}
	// Let several ticks pass (each tick reads the live record, which moves
	// its access time forward … not reliable on noatime): wait on the
	// pending record being read by watching a request expire instead.
	before := readArchived.Load()
	soon := protocol.NewRequest(protocol.KindShutdown, "sd-expires0soon", protocol.Lead, "alice", time.Now(), time.Millisecond)
	if err := CreateRequest(dir, &soon); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the short request expired and archived", func() bool {
		names := liveNames(t, dir)
		return len(names) == 1 && archived(dir, soon.ID)
	})
	testkit.WaitFor(t, 10*time.Second, "another expiry, a few ticks later", func() bool {
		r := protocol.NewRequest(protocol.KindShutdown, protocol.NewRequestID(protocol.KindShutdown), protocol.Lead, "alice", time.Now(), time.Millisecond)
		if err := CreateRequest(dir, &r); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for !archived(dir, r.ID) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		return archived(dir, r.ID)
	})
	// archived() stats, it does not read; LoadRequest of the test itself
	// is not called above.
	if n := readArchived.Load() - before; n != 0 {
		t.Fatalf("the runtime read %d archived records in its ticks", n)
	}
	all, err := ListRequests(dir)
	if err != nil || len(all) != 203 {
		t.Fatalf("ListRequests after archiving: %d records, %v; want 203", len(all), err)
	}
	hist, _, err := ReadHistory(dir, 5)
	if err != nil || len(hist) != 5 {
		t.Fatalf("ReadHistory(5): %d, %v", len(hist), err)
	}
	for i := 1; i < len(hist); i++ {
		if resolvedAt(&hist[i]).After(resolvedAt(&hist[i-1])) {
			t.Fatalf("history not newest first: %v then %v", resolvedAt(&hist[i-1]), resolvedAt(&hist[i]))
		}
	}
	if r, err := LoadRequest(dir, ids[0]); err != nil || r.Status != protocol.RequestApproved {
		t.Fatalf("LoadRequest of an archived record: %+v %v", r, err)
	}
}

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

// TestCorruptPlanRecordDoesNotCrashItsTeammate: alice waits on a plan whose
// record turns to garbage. The runtime says which file, once; alice keeps
// waiting; the listing names it; a repaired record and an approval let her
// go on.
func TestCorruptPlanRecordDoesNotCrashItsTeammate(t *testing.T) {
	dir := t.TempDir()
	writeTeam(t, dir, Team{Name: "t", Members: []MemberSpec{
		scripted("alice", "", Step{Plan: "do the thing"}, Step{Say: "lead", Text: "did the thing"}, Step{Wait: Duration(time.Hour)}),
	}})
	ev := startTeam(t, dir, Options{})
	testkit.WaitFor(t, 5*time.Second, "alice awaiting approval", func() bool { return memberStatus(dir, "alice") == protocol.MemberAwaitingApproval })
	r := pendingPlan(dir, "alice")
	p, _ := teamdir.RequestPath(dir, r.ID)
	good, _ := os.ReadFile(p)
	if err := teamdir.ReplaceFile(p, []byte(`{"id": "`+r.ID+`", "kind": "pl`)); err != nil {
		t.Fatal(err)
	}
	file := "requests/" + r.ID + ".json"
	testkit.WaitFor(t, 5*time.Second, "a corrupt_record event naming the file", func() bool {
		return ev.has(func(e Event) bool { return e["event"] == "corrupt_record" && e["file"] == file })
	})
	testkit.WaitFor(t, 10*time.Second, "alice's wait to meet the corrupt record", func() bool {
		m, _ := LoadMember(dir, "alice")
		return m != nil && strings.Contains(m.Activity, "corrupt")
	})
	_, bad, err := ReadLiveRequests(dir)
	if err != nil || len(bad) != 1 || bad[0].File != file {
		t.Fatalf("ReadLiveRequests corrupt = %+v, %v", bad, err)
	}
	if _, err := dirDecide(dir, r.ID, protocol.EventApprove, "", ""); err == nil || !strings.Contains(err.Error(), file) {
		t.Fatalf("deciding a corrupt record: %v, want an error naming %s", err, file)
	}
	if st := memberStatus(dir, "alice"); st != protocol.MemberAwaitingApproval {
		t.Fatalf("alice after her record turned corrupt: %s", st)
	}
	if err := teamdir.ReplaceFile(p, good); err != nil {
		t.Fatal(err)
	}
	if _, err := dirDecide(dir, r.ID, protocol.EventApprove, "", ""); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "alice working after the approval", func() bool {
		return ev.has(func(e Event) bool {
			return e["event"] == "message_delivered" && e["from"] == "alice" && e["type"] == "message"
		})
	})
	n := 0
	ev.mu.Lock()
	defer ev.mu.Unlock()
	for _, e := range ev.es {
		if e["event"] == "corrupt_record" && e["file"] == file {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d corrupt_record events for %s, want 1", n, file)
	}
}

// TestStartCorrectsAMemberLeftWorkingByAKilledRuntime: a runtime killed
// with kill -9 left bob working, and bob is no longer in team.json; the
// next runtime records him stopped. A corrupt member record is reported.
func TestStartCorrectsAMemberLeftWorkingByAKilledRuntime(t *testing.T) {
	dir := t.TempDir()
	writeTeam(t, dir, Team{Name: "t", Members: []MemberSpec{
		scripted("alice", "", Step{Wait: Duration(time.Hour)}),
	}})
	if err := WriteMember(dir, &protocol.Member{Name: "bob", Runtime: RuntimeScript, Status: protocol.MemberWorking, Activity: "mid-step", Since: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "members", "carol.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	plan := protocol.NewRequest(protocol.KindPlan, "pl-0000000b0b01", "bob", protocol.Lead, time.Now(), time.Hour)
	plan.Plan = "bob's plan, left pending"
	if err := CreateRequest(dir, &plan); err != nil {
		t.Fatal(err)
	}
	ev := startTeam(t, dir, Options{})
	if st := memberStatus(dir, "bob"); st != protocol.MemberStopped {
		t.Fatalf("bob after the next start: %s, want stopped", st)
	}
	if r, _ := LoadRequest(dir, plan.ID); r == nil || r.Status != protocol.RequestCancelled {
		t.Fatalf("bob's pending plan after the next start: %+v, want cancelled", r)
	}
	if !ev.has(func(e Event) bool { return e["event"] == "corrupt_record" && e["file"] == "members/carol.json" }) {
		t.Fatal("no corrupt_record event for members/carol.json")
	}
}

// TestObserverWhileNoRuntimeRuns: a runtime killed with kill -9 left alice
// working; an observer sees that nobody holds runtime.lock and shows her
// stopped, saying what she was, until a runtime holds the lock again.
func TestObserverWhileNoRuntimeRuns(t *testing.T) {
	dir := t.TempDir()
	writeTeam(t, dir, Team{Name: "t", Members: []MemberSpec{scripted("alice", "", Step{Wait: Duration(time.Hour)})}})
	if err := WriteMember(dir, &protocol.Member{Name: "alice", Runtime: RuntimeScript, Status: protocol.MemberWorking, Activity: "mid-step", Since: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	// A runtime that ran and died: its lock file stays, nobody holds it.
	unlock, err := teamdir.LockRuntime(dir)
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	_, rec := observe(t, dir, eventsOnly)
	s := rec.wait(t, "alice shown stopped while nobody runs the team", func(s Snapshot) bool {
		m, _ := member(s, "alice")
		return s.Down && m.Record.Status == protocol.MemberStopped
	})
	if m, _ := member(s, "alice"); !strings.Contains(m.Record.Activity, "team not running (was working)") {
		t.Fatalf("alice's activity while down: %q", m.Record.Activity)
	}
	if line := NotRunning(s.Runtime); !strings.Contains(line, fmt.Sprintf("last ran pid %d, stopped at", os.Getpid())) {
		t.Fatalf("not-running line: %q", line)
	}
	unlock, err = teamdir.LockRuntime(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	rec.wait(t, "alice shown working once a runtime holds the lock", func(s Snapshot) bool {
		m, _ := member(s, "alice")
		return !s.Down && m.Record.Status == protocol.MemberWorking
	})
}

// TestObserverShowsCorruptRecords: a request or member record that cannot
// be read is in the snapshot as corrupt, with why; repaired, it is itself.
func TestObserverShowsCorruptRecords(t *testing.T) {
	dir := t.TempDir()
	writeTeam(t, dir, Team{Name: "t", Members: []MemberSpec{external("alice")}})
	if err := os.MkdirAll(filepath.Join(dir, "requests"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "requests", "pl-0000000bad01.json"), []byte("{garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, rec := observe(t, dir, eventsOnly)
	if err := os.WriteFile(filepath.Join(dir, "members", "alice.json"), []byte("[1,"), 0o600); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "both records shown corrupt", func(s Snapshot) bool {
		m, _ := member(s, "alice")
		reqOK := len(s.Requests) == 1 && s.Requests[0].Status == StatusCorrupt && strings.Contains(s.Requests[0].ResponseReason, "requests/pl-0000000bad01.json")
		return reqOK && m.Record.Status == StatusCorrupt && strings.Contains(m.Record.Error, "members/alice.json")
	})
	writeMember(t, dir, "alice", protocol.MemberIdle, "fine again")
	rec.wait(t, "alice repaired", func(s Snapshot) bool {
		m, _ := member(s, "alice")
		return m.Record.Status == protocol.MemberIdle
	})
}

// TestObserverKeepsABoundedHistory: an observer started on a long history
// reads only the newest MaxHistory archived requests.
func TestObserverKeepsABoundedHistory(t *testing.T) {
	dir := t.TempDir()
	writeTeam(t, dir, Team{Name: "t", Members: []MemberSpec{external("alice")}})
	for _, id := range finalRecords(t, dir, MaxHistory+20) {
		r, err := LoadRequest(dir, id)
		if err != nil {
			t.Fatal(err)
		}
		if err := Archive(dir, r); err != nil {
			t.Fatal(err)
		}
	}
	_, rec := observe(t, dir, eventsOnly)
	s := rec.wait(t, "the history", func(s Snapshot) bool { return len(s.Requests) > 0 })
	if len(s.Requests) != MaxHistory {
		t.Fatalf("%d requests in the snapshot, want the newest %d", len(s.Requests), MaxHistory)
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

// TestTickSeesARequestCreatedAfterAQuietSpell: once requests/ has been
// quiet for a while (its modification time settled, as a listing cache
// would trust it), a request created then still expires at its deadline.
func TestTickSeesARequestCreatedAfterAQuietSpell(t *testing.T) {
	dir := t.TempDir()
	writeTeam(t, dir, Team{Name: "t", Members: []MemberSpec{scripted("alice", "", Step{Wait: Duration(time.Hour)})}})
	if err := os.MkdirAll(teamdir.RequestsDirPath(dir), 0o700); err != nil {
		t.Fatal(err)
	}
	ev := startTeam(t, dir, Options{})
	quiet := func() bool {
		info, err := os.Stat(teamdir.RequestsDirPath(dir))
		return err == nil && time.Since(info.ModTime()) > 2*time.Second
	}
	testkit.WaitFor(t, 10*time.Second, "requests/ quiet for a while", quiet)
	r := protocol.NewRequest(protocol.KindShutdown, "sd-after0quiet", protocol.Lead, "alice", time.Now(), 50*time.Millisecond)
	if err := CreateRequest(dir, &r); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the request expired", func() bool {
		return ev.has(func(e Event) bool {
			return e["event"] == "request_resolved" && e["id"] == r.ID && e["status"] == "expired"
		})
	})
}
