package filestore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/protocol"
	"huddle/store"
	"huddle/teamdir"
)

// The request and member records of a team directory, as the files store
// writes and reads them: what the contract suite (storetest) cannot say of
// every store, because it is about the files.

// testTime is a fixed creation time, in whole microseconds and UTC.
var testTime = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func planRequest(id, from string, created time.Time) *protocol.Request {
	r := protocol.NewRequest(protocol.KindPlan, id, from, protocol.Lead, created, 10*time.Minute)
	r.Plan = "plan of " + from
	return &r
}

func shutdownRequest(id, to string, created time.Time) *protocol.Request {
	r := protocol.NewRequest(protocol.KindShutdown, id, protocol.Lead, to, created, 2*time.Minute)
	r.Reason = "done for today"
	return &r
}

// openDir opens the files store of a fresh team directory, closed with
// the test.
func openDir(t *testing.T) (string, *Store) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "team")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return dir, s
}

func mustCreate(t *testing.T, s *Store, r *protocol.Request) {
	t.Helper()
	if err := s.CreateRequest(t.Context(), r); err != nil {
		t.Fatalf("CreateRequest %s: %v", r.ID, err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// recordOnDisk is what requests/<id>.json holds.
func recordOnDisk(t *testing.T, dir, id string) *protocol.Request {
	t.Helper()
	var r protocol.Request
	if err := json.Unmarshal(readFile(t, recordPath(t, dir, id)), &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

func recordPath(t *testing.T, dir, id string) string {
	t.Helper()
	p, err := teamdir.RequestPath(dir, id)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// decisionPath is requests/<id>.decision of a valid id.
func decisionPath(t *testing.T, dir, id string) string {
	t.Helper()
	p, err := teamdir.DecisionPath(dir, id)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// writeDecision leaves in requests/ the decision of a resolver that died
// before it rewrote the record.
func writeDecision(t *testing.T, dir, id, event, by, text string, at time.Time) {
	t.Helper()
	b, _ := json.Marshal(store.Decision{Event: protocol.RequestEvent(event), By: by, Text: text, At: at})
	if err := os.WriteFile(decisionPath(t, dir, id), b, 0o600); err != nil {
		t.Fatal(err)
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

// TestRequestCreateReadList: a record reads back as it was created, 0600
// in a 0700 requests/; the list is oldest first whatever the ids, and
// leaves out what is no whole record (a record being created, a temp
// file), as a read of the one being created finds nothing.
func TestRequestCreateReadList(t *testing.T) {
	dir, s := openDir(t)
	ctx := t.Context()
	if got, bad, err := s.Requests(ctx); err != nil || len(got) != 0 || len(bad) != 0 {
		t.Fatalf("Requests of an empty team = %v, %v, %v; want nothing", got, bad, err)
	}
	newer := planRequest("pl-000000000002", "reservas", testTime.Add(time.Minute))
	older := shutdownRequest("sd-ffffffffffff", "finanzas", testTime)
	mustCreate(t, s, newer)
	mustCreate(t, s, older)

	got, err := s.Request(ctx, newer.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, newer) {
		t.Fatalf("Request = %+v\nwant %+v", got, newer)
	}
	info, err := os.Stat(recordPath(t, dir, newer.ID))
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("record mode %v, want 0600", perm)
	}
	if info, err := os.Stat(teamdir.RequestsDirPath(dir)); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("requests dir: %v, %v; want mode 0700", info, err)
	}

	if err := os.WriteFile(filepath.Join(teamdir.RequestsDirPath(dir), "pl-00000000000e.json"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(teamdir.RequestsDirPath(dir), ".tmp-123"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Request(ctx, "pl-00000000000e"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Request of an empty record: %v, want ErrNotFound", err)
	}
	list, bad, err := s.Requests(ctx)
	if err != nil || len(bad) != 0 {
		t.Fatalf("Requests: corrupt %v, %v", bad, err)
	}
	var ids []string
	for _, r := range list {
		ids = append(ids, r.ID)
	}
	if want := []string{older.ID, newer.ID}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("Requests ids = %v, want %v (oldest first)", ids, want)
	}
}

// TestCreateRequestNeverOverwrites: a second create of an id leaves the
// first record byte for byte; an invalid request leaves no file.
func TestCreateRequestNeverOverwrites(t *testing.T) {
	dir, s := openDir(t)
	first := planRequest("pl-aaaaaaaaaaaa", "reservas", testTime)
	mustCreate(t, s, first)
	before := readFile(t, recordPath(t, dir, first.ID))

	second := planRequest("pl-aaaaaaaaaaaa", "finanzas", testTime.Add(time.Hour))
	if err := s.CreateRequest(t.Context(), second); !errors.Is(err, store.ErrExists) {
		t.Fatalf("second CreateRequest: %v, want store.ErrExists", err)
	}
	if after := readFile(t, recordPath(t, dir, first.ID)); !bytes.Equal(before, after) {
		t.Fatalf("record changed:\n%s\nto\n%s", before, after)
	}

	bad := planRequest("pl-bbbbbbbbbbbb", "reservas", testTime)
	bad.Plan = ""
	if err := s.CreateRequest(t.Context(), bad); err == nil || !strings.Contains(err.Error(), "plan is required") {
		t.Fatalf("CreateRequest of a plan request without a plan: %v", err)
	}
	if _, err := os.Stat(recordPath(t, dir, bad.ID)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an invalid request left a file: %v", err)
	}
}

// TestDecideSecondResolverGetsAlreadyError: the winner gets the final
// record, the one on disk; every later decision, whatever its event, is
// told who won and changes no byte of the record.
func TestDecideSecondResolverGetsAlreadyError(t *testing.T) {
	dir, s := openDir(t)
	ctx := t.Context()
	r := planRequest("pl-0123456789ab", "reservas", testTime)
	mustCreate(t, s, r)

	won, err := s.Decide(ctx, r.ID, store.Decision{Event: protocol.EventApprove, By: protocol.Lead, Text: "go ahead"})
	if err != nil {
		t.Fatal(err)
	}
	if won.Status != protocol.RequestApproved || won.ResolvedBy != protocol.Lead || won.Feedback != "go ahead" ||
		won.Approve == nil || !*won.Approve || len(won.History) != 2 {
		t.Fatalf("decided record = %+v", won)
	}
	if onDisk := recordOnDisk(t, dir, r.ID); !reflect.DeepEqual(onDisk, won) {
		t.Fatalf("record on disk %+v\ndiffers from the one returned %+v", onDisk, won)
	}
	before := readFile(t, recordPath(t, dir, r.ID))

	for _, ev := range protocol.RequestEvents {
		_, err := s.Decide(ctx, r.ID, store.Decision{Event: ev, By: "ui-2", Text: "late"})
		var already *store.AlreadyError
		if !errors.As(err, &already) {
			t.Fatalf("second %s: %v, want *store.AlreadyError", ev, err)
		}
		if already.Status != protocol.RequestApproved || already.By != protocol.Lead {
			t.Errorf("second %s: %+v, want approved by lead", ev, already)
		}
		if want := "request pl-0123456789ab already approved by lead"; err.Error() != want {
			t.Errorf("second %s: %q, want %q", ev, err, want)
		}
	}
	if after := readFile(t, recordPath(t, dir, r.ID)); !bytes.Equal(before, after) {
		t.Fatalf("a refused decision changed the record:\n%s\nto\n%s", before, after)
	}
}

// TestRequestCompletesAnInterruptedResolution: a resolver that died after
// its decision and before the rewrite. A later resolver loses to the
// decision though the record says pending; a read applies it, whole, and
// writes the record so; reading again rewrites nothing. Without a decision
// a read writes nothing.
func TestRequestCompletesAnInterruptedResolution(t *testing.T) {
	dir, s := openDir(t)
	ctx := t.Context()
	r := planRequest("pl-c0ffee000001", "finanzas", testTime)
	mustCreate(t, s, r)

	before := readFile(t, recordPath(t, dir, r.ID))
	got, err := s.Request(ctx, r.ID)
	if err != nil || got.Status != protocol.RequestPending {
		t.Fatalf("Request without a decision = %+v, %v", got, err)
	}
	if after := readFile(t, recordPath(t, dir, r.ID)); !bytes.Equal(before, after) {
		t.Fatal("a read without a decision rewrote the record")
	}

	at := testTime.Add(90 * time.Second)
	writeDecision(t, dir, r.ID, "reject", protocol.Lead, "split the transfer", at)
	if st := recordOnDisk(t, dir, r.ID).Status; st != protocol.RequestPending {
		t.Fatalf("record is %s before any read", st)
	}
	_, err = s.Decide(ctx, r.ID, store.Decision{Event: protocol.EventApprove, By: "ui-2"})
	var already *store.AlreadyError
	if !errors.As(err, &already) || already.Status != protocol.RequestRejected || already.By != protocol.Lead {
		t.Fatalf("Decide against an unapplied decision: %v, want already rejected by lead", err)
	}

	got, err = s.Request(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != protocol.RequestRejected || got.ResolvedBy != protocol.Lead || got.Feedback != "split the transfer" ||
		got.Approve == nil || *got.Approve || got.ResolvedAt == nil || !got.ResolvedAt.Equal(at) {
		t.Fatalf("applied record = %+v", got)
	}
	last := got.History[len(got.History)-1]
	if last.From != protocol.RequestPending || last.To != protocol.RequestRejected || last.By != protocol.Lead || !last.At.Equal(at) {
		t.Fatalf("last transition = %+v", last)
	}
	if onDisk := recordOnDisk(t, dir, r.ID); !reflect.DeepEqual(onDisk, got) {
		t.Fatalf("on disk %+v\nreturned %+v", onDisk, got)
	}
	applied := readFile(t, recordPath(t, dir, r.ID))
	if _, err := s.Request(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	if again := readFile(t, recordPath(t, dir, r.ID)); !bytes.Equal(applied, again) {
		t.Fatal("a second read changed the record")
	}

	// A shutdown answer's text is the teammate's reason, not the lead's
	// request reason.
	sd := shutdownRequest("sd-c0ffee000002", "finanzas", testTime)
	mustCreate(t, s, sd)
	writeDecision(t, dir, sd.ID, "reject", "finanzas", "mid transfer", at)
	got, err = s.Request(ctx, sd.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != protocol.RequestRejected || got.ResponseReason != "mid transfer" || got.Reason != "done for today" || got.Feedback != "" {
		t.Fatalf("applied shutdown record = %+v", got)
	}
}

// TestTerminalRecordsNeverChange: a record a foreign writer left final,
// with a stray decision beside it that says otherwise, is moved by no
// decision and no read, and a refused decision writes no decision file.
func TestTerminalRecordsNeverChange(t *testing.T) {
	dir, s := openDir(t)
	ctx := t.Context()
	for i, st := range protocol.RequestStatuses {
		if !st.IsTerminal() {
			continue
		}
		r := planRequest(fmt.Sprintf("pl-7e57%08d", i), "data", testTime)
		r.Status, r.ResolvedBy = st, "finanzas"
		r.History = append(r.History, protocol.Transition{At: testTime, From: protocol.RequestPending, To: st, By: "finanzas"})
		b, _ := json.Marshal(r)
		path := recordPath(t, dir, r.ID)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, ev := range protocol.RequestEvents {
			_, err := s.Decide(ctx, r.ID, store.Decision{Event: ev, By: protocol.Lead, Text: "x"})
			var already *store.AlreadyError
			if !errors.As(err, &already) || already.Status != st || already.By != "finanzas" {
				t.Errorf("%s record, %s: %v, want already %s by finanzas", st, ev, err, st)
			}
		}
		if _, err := os.Stat(decisionPath(t, dir, r.ID)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s record: a refused decision wrote a decision (%v)", st, err)
		}
		writeDecision(t, dir, r.ID, "approve", protocol.Lead, "", testTime)
		got, err := s.Request(ctx, r.ID)
		if err != nil || got.Status != st {
			t.Errorf("%s record: Request = %+v, %v", st, got, err)
		}
		if after := readFile(t, path); !bytes.Equal(b, after) {
			t.Errorf("%s record changed:\n%s\nto\n%s", st, b, after)
		}
	}
}

// TestInvalidIDsNeverBecomePaths: an id that is not one huddle gives is
// refused by every request operation before it touches a file, and none
// reaches the file an escaping id would.
func TestInvalidIDsNeverBecomePaths(t *testing.T) {
	dir, s := openDir(t)
	ctx := t.Context()
	root := filepath.Dir(dir)
	mustCreate(t, s, planRequest("pl-000000000001", "reservas", testTime))
	if err := os.WriteFile(filepath.Join(dir, "x.json"), []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	before := testkit.Tree(t, root)

	bad := []string{"", "../x", "../../x", "a/b", "/etc/passwd", ".hidden", "-rf", "x y", "pl-\x00", strings.Repeat("a", 65)}
	for _, id := range bad {
		if _, err := teamdir.RequestPath(dir, id); err == nil {
			t.Errorf("teamdir.RequestPath(%q) accepted", id)
		}
		if _, err := s.Request(ctx, id); err == nil || errors.Is(err, store.ErrNotFound) {
			t.Errorf("Request(%q) = %v, want a validation error", id, err)
		}
		if _, err := s.Peek(ctx, id); err == nil || errors.Is(err, store.ErrNotFound) {
			t.Errorf("Peek(%q) = %v, want a validation error", id, err)
		}
		if _, err := s.Decide(ctx, id, store.Decision{Event: protocol.EventApprove, By: protocol.Lead}); err == nil {
			t.Errorf("Decide(%q) accepted", id)
		}
		if _, err := s.Reschedule(ctx, id, testTime); err == nil {
			t.Errorf("Reschedule(%q) accepted", id)
		}
		if err := s.Archive(ctx, id); err == nil {
			t.Errorf("Archive(%q) accepted", id)
		}
		r := planRequest("pl-000000000009", "reservas", testTime)
		r.ID = id
		if err := s.CreateRequest(ctx, r); err == nil {
			t.Errorf("CreateRequest with id %q accepted", id)
		}
	}
	if after := testkit.Tree(t, root); !reflect.DeepEqual(before, after) {
		t.Fatalf("invalid ids touched files:\nbefore %v\nafter  %v", before, after)
	}
}

// TestMemberRecords: a member record reads back whole, 0600; a rewrite
// replaces it whole; the list is sorted by name; an invalid name or
// status is refused before it touches a file.
func TestMemberRecords(t *testing.T) {
	dir, s := openDir(t)
	ctx := t.Context()
	root := filepath.Dir(dir)
	if got, bad, err := s.Members(ctx, time.Hour); err != nil || len(got) != 0 || len(bad) != 0 {
		t.Fatalf("Members of an empty team = %v, %v, %v", got, bad, err)
	}
	since := testTime.Add(time.Minute)
	recs := []protocol.Member{
		{Name: "reservas", Role: "bookings", Runtime: "script", Status: protocol.MemberWorking, Activity: "checking", Since: since},
		{Name: "data", Role: "records", Runtime: "exec", Status: protocol.MemberCrashed, Error: "exit status 1", PID: 4242, Since: since},
	}
	for i := range recs {
		if err := s.PutMember(ctx, &recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Member(ctx, "reservas", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Member, recs[0]) {
		t.Fatalf("Member = %+v, want %+v", got.Member, recs[0])
	}
	p, _ := teamdir.MemberPath(dir, "reservas")
	if info, err := os.Stat(p); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("member record: %v, %v; want mode 0600", info, err)
	}
	recs[0].Status, recs[0].Activity = protocol.MemberIdle, ""
	if err := s.PutMember(ctx, &recs[0]); err != nil {
		t.Fatal(err)
	}
	list, bad, err := s.Members(ctx, time.Hour)
	if err != nil || len(bad) != 0 {
		t.Fatalf("Members: corrupt %v, %v", bad, err)
	}
	var ms []protocol.Member
	for _, m := range list {
		ms = append(ms, m.Member)
	}
	if want := []protocol.Member{recs[1], recs[0]}; !reflect.DeepEqual(ms, want) {
		t.Fatalf("Members = %+v\nwant %+v (sorted by name)", ms, want)
	}

	before := testkit.Tree(t, root)
	for _, m := range []protocol.Member{
		{Name: "../x", Status: protocol.MemberIdle},
		{Name: "LEAD", Status: protocol.MemberIdle},
		{Name: "a/b", Status: protocol.MemberIdle},
		{Name: "ok", Status: "sleeping"},
	} {
		if err := s.PutMember(ctx, &m); err == nil {
			t.Errorf("PutMember(%q, %q) accepted", m.Name, m.Status)
		}
		_, err := s.Member(ctx, m.Name, time.Hour)
		if m.Name == "ok" {
			if !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Member(%q) after a refused write = %v, want no record", m.Name, err)
			}
			continue
		}
		if err == nil || errors.Is(err, store.ErrNotFound) {
			t.Errorf("Member(%q) = %v, want a validation error", m.Name, err)
		}
	}
	if after := testkit.Tree(t, root); !reflect.DeepEqual(before, after) {
		t.Fatalf("invalid member records touched files:\nbefore %v\nafter  %v", before, after)
	}
}

// TestLateClaimOnAnArchivedRequestLoses: a resolver that read a request
// while it was pending, and claims after it was decided and archived,
// loses, is told who won and leaves nothing behind.
func TestLateClaimOnAnArchivedRequestLoses(t *testing.T) {
	dir, s := openDir(t)
	ctx := t.Context()
	r := planRequest("pl-00000000aaaa", "alice", time.Now())
	mustCreate(t, s, r)
	stale, err := s.Request(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Decide(ctx, r.ID, store.Decision{Event: protocol.EventApprove, By: protocol.Lead}); err != nil {
		t.Fatal(err)
	}
	if err := s.Archive(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	_, err = s.decide(ctx, stale, store.Decision{Event: protocol.EventReject, By: "bob", Text: "no"})
	var already *store.AlreadyError
	if !errors.As(err, &already) || already.By != protocol.Lead || already.Status != protocol.RequestApproved {
		t.Fatalf("late claim: %v, want already approved by lead", err)
	}
	if names := liveNames(t, dir); len(names) != 0 {
		t.Fatalf("requests/ after a late claim: %v", names)
	}
	if got, err := s.Request(ctx, r.ID); err != nil || got.Status != protocol.RequestApproved {
		t.Fatalf("record after a late claim: %+v, %v", got, err)
	}
}

// TestClaimArchivedBeforeItsCheckStillWins: a runtime may apply and
// archive a decision between its claim's link and the claim's look at
// requests/done/ (it watches requests/). The archived decision is then the
// claim's own: it won, and taking it back would fail on a file already
// moved. Another resolver's decision archived first: the claim loses and
// leaves no live decision behind.
func TestClaimArchivedBeforeItsCheckStillWins(t *testing.T) {
	dir, s := openDir(t)
	ctx := t.Context()
	r := planRequest("pl-00000000bbbb", "alice", time.Now())
	mustCreate(t, s, r)
	stale, err := s.Request(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	mine := store.Decision{Event: protocol.EventApprove, By: protocol.Lead, At: time.Now().UTC()}
	// What the runtime leaves once it archived this claim: the same
	// decision in done/.
	b, _ := json.Marshal(mine)
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
	got, err := s.decide(ctx, stale, mine)
	if err != nil || got.Status != protocol.RequestApproved || got.ResolvedBy != protocol.Lead {
		t.Fatalf("claim whose own decision was archived: %+v, %v; want it won", got, err)
	}

	live := decisionPath(t, dir, r.ID)
	if err := os.Remove(live); err != nil {
		t.Fatal(err)
	}
	_, err = s.decide(ctx, stale, store.Decision{Event: protocol.EventReject, By: "bob", Text: "no", At: time.Now().UTC()})
	var already *store.AlreadyError
	if !errors.As(err, &already) || already.By != protocol.Lead || already.Status != protocol.RequestApproved {
		t.Fatalf("late claim: %v, want already approved by lead", err)
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
	dir, s := openDir(t)
	ctx := t.Context()
	r := planRequest("pl-00000000bbbb", "alice", time.Now())
	mustCreate(t, s, r)
	final, err := s.Decide(ctx, r.ID, store.Decision{Event: protocol.EventApprove, By: protocol.Lead})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Archive(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	if err := writeJSON(recordPath(t, dir, r.ID), final, false); err != nil {
		t.Fatal(err)
	}
	writeDecision(t, dir, r.ID, "reject", "late", "", testTime)
	if err := s.Archive(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	if names := liveNames(t, dir); len(names) != 0 {
		t.Fatalf("requests/ after archiving again: %v", names)
	}
	if d, err := s.readDecision(r.ID); err != nil || d.By != protocol.Lead || d.Event != protocol.EventApprove {
		t.Fatalf("decision after archiving again: %+v %v", d, err)
	}
	if got, err := s.Request(ctx, r.ID); err != nil || got.Status != protocol.RequestApproved || got.ResolvedBy != protocol.Lead {
		t.Fatalf("record after archiving again: %+v, %v", got, err)
	}
}

// TestLiveRequestsApplyDecisionsAndWriteNothing: the list of live records
// (the runtime's and the UI's read) shows a decision its record does not
// show yet, and leaves the rewrite to the resolver: it writes no record.
func TestLiveRequestsApplyDecisionsAndWriteNothing(t *testing.T) {
	dir, s := openDir(t)
	ctx := t.Context()
	pending := planRequest("pl-00000000cccc", "alice", testTime)
	decided := planRequest("pl-00000000dddd", "bob", testTime.Add(time.Second))
	mustCreate(t, s, pending)
	mustCreate(t, s, decided)
	writeDecision(t, dir, decided.ID, "approve", protocol.Lead, "go", testTime.Add(time.Minute))
	before := readFile(t, recordPath(t, dir, decided.ID))
	live, bad, err := s.LiveRequests(ctx)
	if err != nil || len(bad) != 0 || len(live) != 2 {
		t.Fatalf("LiveRequests = %+v, corrupt %+v, %v", live, bad, err)
	}
	if live[0].ID != pending.ID || live[0].Status != protocol.RequestPending ||
		live[1].ID != decided.ID || live[1].Status != protocol.RequestApproved || live[1].Feedback != "go" {
		t.Fatalf("LiveRequests = %+v, want alice's pending, bob's approved", live)
	}
	if after := readFile(t, recordPath(t, dir, decided.ID)); !bytes.Equal(before, after) {
		t.Fatalf("the list rewrote the decided record:\n%s\nto\n%s", before, after)
	}
}
