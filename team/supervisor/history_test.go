package supervisor

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/internal/testkit/dirlead"
	"huddle/internal/testkit/dirrecords"
	"huddle/internal/testkit/teamkit"
	"huddle/protocol"
	"huddle/store/filestore"
	"huddle/team"
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
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: []team.MemberSpec{
		{Name: "ext", Role: "crawler", Runtime: team.RuntimeSpec{Kind: team.RuntimeExternal}},
	}})
	startTeam(t, dir, Options{})
	stamped := time.Now().AddDate(-3, 0, 0)
	received := time.Now()
	appendLine(t, dir, protocol.Lead, fmt.Sprintf(`{"type":"plan_approval_request","from":"ext","to":"lead","request_id":"old0clock","plan":"crawl","ts":%q}`+"\n",
		stamped.UTC().Format(time.RFC3339Nano)))
	testkit.WaitFor(t, 5*time.Second, "the record of the foreign plan", func() bool { r, _ := dirrecords.LoadRequest(dir, "old0clock"); return r != nil })
	r, _ := dirrecords.LoadRequest(dir, "old0clock")
	if want := received.Add(team.DefaultApprovalDeadline); r.Deadline.Before(want.Add(-time.Second)) || r.Created.Before(received.Add(-time.Second)) {
		t.Fatalf("deadline %v (created %v): want it to count from receipt, about %v", r.Deadline, r.Created, want)
	}
	got, err := dirlead.Decide(dir, "old0clock", protocol.EventApprove, "", "")
	if err != nil || got.Status != protocol.RequestApproved {
		t.Fatalf("approve the foreign plan: %+v %v (want it still pending after receipt)", got, err)
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

// TestTickArchivesFinalRecordsAndNeverReadsThem: final records move to
// requests/done/ (record and decision), requests/ keeps what can still
// change, and later ticks read no archived record; history is still listed.
func TestTickArchivesFinalRecordsAndNeverReadsThem(t *testing.T) {
	dir := t.TempDir()
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: []team.MemberSpec{
		teamkit.Scripted("alice", "", team.Step{Wait: team.Duration(time.Hour)}),
	}})
	ids := teamkit.FinalRecords(t, dir, 200)
	live := protocol.NewRequest(protocol.KindShutdown, "sd-still0live", protocol.Lead, "alice", time.Now(), time.Hour)
	if err := dirrecords.CreateRequest(dir, &live); err != nil {
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
	before := filestore.ArchivedReads()
	soon := protocol.NewRequest(protocol.KindShutdown, "sd-expires0soon", protocol.Lead, "alice", time.Now(), time.Millisecond)
	if err := dirrecords.CreateRequest(dir, &soon); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the short request expired and archived", func() bool {
		names := liveNames(t, dir)
		return len(names) == 1 && teamdir.Archived(dir, soon.ID)
	})
	again := protocol.NewRequest(protocol.KindShutdown, "sd-expires0again", protocol.Lead, "alice", time.Now(), time.Millisecond)
	if err := dirrecords.CreateRequest(dir, &again); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "another expiry, a few ticks later", func() bool { return teamdir.Archived(dir, again.ID) })
	// teamdir.Archived stats, it does not read; the test itself reads no
	// archived record above.
	if n := filestore.ArchivedReads() - before; n != 0 {
		t.Fatalf("the runtime read %d archived records in its ticks", n)
	}
	all, err := dirrecords.ListRequests(dir)
	if err != nil || len(all) != 203 {
		t.Fatalf("ListRequests after archiving: %d records, %v; want 203", len(all), err)
	}
	hist, _, err := dirrecords.ReadHistory(dir, 5)
	if err != nil || len(hist) != 5 {
		t.Fatalf("ReadHistory(5): %d, %v", len(hist), err)
	}
	for i := 1; i < len(hist); i++ {
		if hist[i].ResolvedOrCreated().After(hist[i-1].ResolvedOrCreated()) {
			t.Fatalf("history not newest first: %v then %v", hist[i-1].ResolvedOrCreated(), hist[i].ResolvedOrCreated())
		}
	}
	if r, err := dirrecords.LoadRequest(dir, ids[0]); err != nil || r.Status != protocol.RequestApproved {
		t.Fatalf("LoadRequest of an archived record: %+v %v", r, err)
	}
}

// TestCorruptPlanRecordDoesNotCrashItsTeammate: alice waits on a plan whose
// record turns to garbage. The runtime says which file, once; alice keeps
// waiting; the listing names it; a repaired record and an approval let her
// go on.
func TestCorruptPlanRecordDoesNotCrashItsTeammate(t *testing.T) {
	dir := t.TempDir()
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: []team.MemberSpec{
		teamkit.Scripted("alice", "", team.Step{Plan: "do the thing"}, team.Step{Say: "lead", Text: "did the thing"}, team.Step{Wait: team.Duration(time.Hour)}),
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
		m, _ := dirrecords.LoadMember(dir, "alice")
		return m != nil && strings.Contains(m.Activity, "corrupt")
	})
	_, bad, err := dirrecords.ReadLiveRequests(dir)
	if err != nil || len(bad) != 1 || bad[0].File != file {
		t.Fatalf("ReadLiveRequests corrupt = %+v, %v", bad, err)
	}
	if _, err := dirlead.Decide(dir, r.ID, protocol.EventApprove, "", ""); err == nil || !strings.Contains(err.Error(), file) {
		t.Fatalf("deciding a corrupt record: %v, want an error naming %s", err, file)
	}
	if st := memberStatus(dir, "alice"); st != protocol.MemberAwaitingApproval {
		t.Fatalf("alice after her record turned corrupt: %s", st)
	}
	if err := teamdir.ReplaceFile(p, good); err != nil {
		t.Fatal(err)
	}
	if _, err := dirlead.Decide(dir, r.ID, protocol.EventApprove, "", ""); err != nil {
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
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: []team.MemberSpec{
		teamkit.Scripted("alice", "", team.Step{Wait: team.Duration(time.Hour)}),
	}})
	if err := dirrecords.WriteMember(dir, &protocol.Member{Name: "bob", Runtime: team.RuntimeScript, Status: protocol.MemberWorking, Activity: "mid-step", Since: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "members", "carol.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	plan := protocol.NewRequest(protocol.KindPlan, "pl-0000000b0b01", "bob", protocol.Lead, time.Now(), time.Hour)
	plan.Plan = "bob's plan, left pending"
	if err := dirrecords.CreateRequest(dir, &plan); err != nil {
		t.Fatal(err)
	}
	ev := startTeam(t, dir, Options{})
	if st := memberStatus(dir, "bob"); st != protocol.MemberStopped {
		t.Fatalf("bob after the next start: %s, want stopped", st)
	}
	if r, _ := dirrecords.LoadRequest(dir, plan.ID); r == nil || r.Status != protocol.RequestCancelled {
		t.Fatalf("bob's pending plan after the next start: %+v, want cancelled", r)
	}
	if !ev.has(func(e Event) bool { return e["event"] == "corrupt_record" && e["file"] == "members/carol.json" }) {
		t.Fatal("no corrupt_record event for members/carol.json")
	}
}

// TestTickSeesARequestCreatedAfterAQuietSpell: once requests/ has been
// quiet for a while (its modification time settled, as a listing cache
// would trust it), a request created then still expires at its deadline.
func TestTickSeesARequestCreatedAfterAQuietSpell(t *testing.T) {
	dir := t.TempDir()
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: []team.MemberSpec{teamkit.Scripted("alice", "", team.Step{Wait: team.Duration(time.Hour)})}})
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
	if err := dirrecords.CreateRequest(dir, &r); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the request expired", func() bool {
		return ev.has(func(e Event) bool {
			return e["event"] == "request_resolved" && e["id"] == r.ID && e["status"] == "expired"
		})
	})
}
