package filestore_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"huddle/inbox"
	"huddle/protocol"
	"huddle/store"
	"huddle/store/filestore"
	"huddle/store/storetest"
	"huddle/teamdir"
)

func factory(t *testing.T) storetest.Opener {
	dir := t.TempDir()
	return func(t *testing.T) store.Store {
		s, err := filestore.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
}

// openTemp opens the files store of a fresh directory, closed with the
// test.
func openTemp(t *testing.T) (string, *filestore.Store) {
	t.Helper()
	dir := t.TempDir()
	s, err := filestore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return dir, s
}

// TestContract holds the file store to the store contract.
func TestContract(t *testing.T) { storetest.Run(t, factory) }

// TestMembersLiveWithTheRuntimeLock: on a directory a runtime ran, its
// runtime.lock says whether the members are alive, not the age of their
// records: while a runtime holds the lock a member whose record is old is
// seen now; once the lock is released a working member is lost at once,
// though its record is new. Without a lock, the records' ages decide.
func TestMembersLiveWithTheRuntimeLock(t *testing.T) {
	dir, s := openTemp(t)
	ctx := t.Context()
	m := &protocol.Member{Name: "alice", Role: "test", Runtime: "script", Status: protocol.MemberWorking, Since: time.Now()}
	if err := s.PutMember(ctx, m); err != nil {
		t.Fatal(err)
	}
	p, err := teamdir.MemberPath(dir, "alice")
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	alice := func() store.MemberState {
		t.Helper()
		ms, err := s.Member(ctx, "alice", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		all, _, err := s.Members(ctx, time.Minute)
		if err != nil || len(all) != 1 || all[0].Lost != ms.Lost {
			t.Fatalf("Members %+v (%v) disagrees with Member %+v", all, err, ms)
		}
		return *ms
	}
	if ms := alice(); !ms.Lost {
		t.Fatalf("no runtime ever ran here and the record is an hour old: %+v, want lost", ms)
	}
	unlock, err := teamdir.LockRuntime(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ms := alice(); ms.Lost || time.Since(ms.Seen) > time.Minute {
		t.Fatalf("a runtime holds the lock: %+v, want alive and seen now", ms)
	}
	unlock()
	if err := s.Heartbeat(ctx, "alice"); err != nil { // a fresh record
		t.Fatal(err)
	}
	if ms := alice(); !ms.Lost {
		t.Fatalf("the runtime released its lock: %+v, want lost at once", ms)
	}
	m.Status = protocol.MemberStopped
	if err := s.PutMember(ctx, m); err != nil {
		t.Fatal(err)
	}
	if ms := alice(); ms.Lost {
		t.Fatalf("a stopped member is never lost: %+v", ms)
	}
}

// TestDeadLettersCountsWhatIsNone: a line of deadletter.jsonl that is not a
// dead letter (a foreign writer's, or one with no source) is counted as
// skipped, not left out silently; a last line without its newline is being
// written and is neither read nor counted.
func TestDeadLettersCountsWhatIsNone(t *testing.T) {
	dir, s := openTemp(t)
	ctx := t.Context()
	if err := s.DeadLetter(ctx, protocol.DeadLetterLine{Source: "exec:alice", Reason: "bad", Raw: "first"}); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(teamdir.DeadLetterPath(dir), os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("not a dead letter\n{\"reason\":\"no source\"}\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := s.DeadLetter(ctx, protocol.DeadLetterLine{Source: "exec:alice", Reason: "bad", Raw: "second"}); err != nil {
		t.Fatal(err)
	}
	f, err = os.OpenFile(teamdir.DeadLetterPath(dir), os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"source":"exec:alice","reason":"half`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	dls, skipped, err := s.DeadLetters(ctx)
	if err != nil || skipped != 2 || len(dls) != 2 || dls[0].Raw != "first" || dls[1].Raw != "second" {
		t.Fatalf("DeadLetters = %+v, %d skipped, %v; want first and second, 2 skipped", dls, skipped, err)
	}
}

// TestRequestFinishesARewriteACrashLeft: a decision whose resolver died
// before rewriting the record is applied by the next read, and the live
// record is rewritten so: a reader of requests/<id>.json does not find it
// pending beside its decision once a command has read it. Peek applies the
// decision too and writes nothing; the archive finishes what it left.
func TestRequestFinishesARewriteACrashLeft(t *testing.T) {
	dir, s := openTemp(t)
	ctx := t.Context()
	onDisk := func(id string) protocol.RequestStatus {
		t.Helper()
		p, err := teamdir.RequestPath(dir, id)
		if _, serr := os.Stat(p); err != nil || serr != nil {
			p, _ = teamdir.DoneRequestPath(dir, id)
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var r protocol.Request
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatalf("%s: %s (%v)", p, raw, err)
		}
		return r.Status
	}
	for _, tc := range []struct {
		id   string
		read func(context.Context, string) (*protocol.Request, error)
		want protocol.RequestStatus
	}{
		{"pl-0123456789ab", s.Request, protocol.RequestApproved},
		{"pl-0123456789cd", s.Peek, protocol.RequestPending},
	} {
		r := protocol.NewRequest(protocol.KindPlan, tc.id, "alice", protocol.Lead, time.Now(), time.Hour)
		r.Plan = "a plan"
		if err := s.CreateRequest(ctx, &r); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(store.Decision{Event: protocol.EventApprove, By: "cli", At: time.Now().UTC()})
		if won, err := teamdir.ClaimDecision(dir, r.ID, b); err != nil || !won {
			t.Fatalf("claim: %v %v", won, err)
		}
		got, err := tc.read(ctx, r.ID)
		if err != nil || got.Status != protocol.RequestApproved || got.ResolvedBy != "cli" {
			t.Fatalf("read = %+v, %v; want approved by cli", got, err)
		}
		if st := onDisk(r.ID); st != tc.want {
			t.Fatalf("requests/%s.json after the read: %s, want %s", r.ID, st, tc.want)
		}
	}
	if err := s.Archive(ctx, "pl-0123456789cd"); err != nil {
		t.Fatal(err)
	}
	if st := onDisk("pl-0123456789cd"); st != protocol.RequestApproved {
		t.Fatalf("requests/done/pl-0123456789cd.json: %s, want approved", st)
	}
}

// TestConsumersTakeTheInboxOptions: the options OpenWith is given reach
// the consumers Consume starts, as a directory's runtime gives them: a
// damaged cursor journal is told to Warn (and its messages are handed
// again, marked), not only logged.
func TestConsumersTakeTheInboxOptions(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	var mu sync.Mutex
	var warned []string
	s, err := filestore.OpenWith(dir, filestore.Options{Inbox: inbox.Options{Warn: func(member string, err error) {
		mu.Lock()
		warned = append(warned, member+": "+err.Error())
		mu.Unlock()
	}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m := protocol.NewMessage(protocol.TypeMessage, protocol.Lead, "alice")
	m.Content = "hello"
	if err := s.Append(ctx, "alice", &m); err != nil {
		t.Fatal(err)
	}
	cur, err := teamdir.CursorPath(dir, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(cur), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cur, []byte("\x00garbage{{{\nnot a record\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got := make(chan store.Delivery, 4)
	sub, err := s.Consume(ctx, "alice", func(_ context.Context, d store.Delivery) error { got <- d; return nil })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	select {
	case d := <-got:
		if d.Msg.Content != "hello" || !d.Redelivery {
			t.Fatalf("after a damaged journal: %+v, want hello marked a redelivery", d)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("nothing was handed after a damaged journal")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(warned) == 0 || !strings.HasPrefix(warned[0], "alice: ") || !strings.Contains(warned[0], "cursor") {
		t.Fatalf("Warn heard %q, want the damaged journal of alice", warned)
	}
}

// TestSweepRemovesWhatACrashLeft: Sweep removes the temp files older than
// teamdir.SweepAge in every directory the files store writes, leases/ and
// restart/ included; a young temp file (a writer may own it) and every
// real file stay.
func TestSweepRemovesWhatACrashLeft(t *testing.T) {
	dir, s := openTemp(t)
	old := time.Now().Add(-2 * teamdir.SweepAge)
	write := func(rel string, age time.Time) string {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, age, age); err != nil {
			t.Fatal(err)
		}
		return rel
	}
	var gone []string
	for _, d := range []string{".", "inbox", "cursors", "members", "requests", filestore.LeasesDir, "restart"} {
		gone = append(gone, write(filepath.Join(d, teamdir.TempPrefix+"x.json-123"), old))
	}
	kept := []string{
		write(filepath.Join(filestore.LeasesDir, teamdir.TempPrefix+"young-1"), time.Now()),
		write(filepath.Join(filestore.LeasesDir, "alice.json"), old),
		write(filepath.Join("restart", "alice"), old),
		write(filepath.Join("requests", "pl-0123456789ab.json"), old),
	}
	if err := s.Sweep(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, rel := range gone {
		if _, err := os.Stat(filepath.Join(dir, rel)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there after Sweep (%v)", rel, err)
		}
	}
	for _, rel := range kept {
		if _, err := os.Stat(filepath.Join(dir, rel)); err != nil {
			t.Errorf("Sweep removed %s: %v", rel, err)
		}
	}
}

// TestCorruptRecordsNamed holds the file store to storetest.RunCorrupt:
// a record torn or written wrong by a foreign agent is named, not left out.
func TestCorruptRecordsNamed(t *testing.T) {
	dir, s := openTemp(t)
	storetest.RunCorrupt(t, s, func(t *testing.T, kind store.ChangeKind, name string) {
		p, err := teamdir.MemberPath(dir, name)
		if kind == store.ChangeRequest {
			p, err = teamdir.RequestPath(dir, name)
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(`{"id": "torn`), 0o644); err != nil {
			t.Fatal(err)
		}
	})
}

// TestPeekLiveReadsNoArchive: PeekLive reads a live record as Peek does,
// and an archived one is not found without a read of requests/done/
// (filestore.ArchivedReads stays), while Request still finds it there.
func TestPeekLiveReadsNoArchive(t *testing.T) {
	_, s := openTemp(t)
	ctx := t.Context()
	r := protocol.NewRequest(protocol.KindPlan, "pl-0123456789ef", "alice", protocol.Lead, time.Now(), time.Hour)
	r.Plan = "a plan"
	if err := s.CreateRequest(ctx, &r); err != nil {
		t.Fatal(err)
	}
	if got, err := s.PeekLive(ctx, r.ID); err != nil || got.Status != protocol.RequestPending {
		t.Fatalf("PeekLive of a live record = %+v, %v", got, err)
	}
	if _, err := s.Decide(ctx, r.ID, store.Decision{Event: protocol.EventApprove, By: "lead", At: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	if err := s.Archive(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	before := filestore.ArchivedReads()
	if got, err := s.PeekLive(ctx, r.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("PeekLive of an archived record = %+v, %v; want not found", got, err)
	}
	if n := filestore.ArchivedReads() - before; n != 0 {
		t.Fatalf("PeekLive read %d archived files", n)
	}
	if got, err := s.Request(ctx, r.ID); err != nil || got.Status != protocol.RequestApproved {
		t.Fatalf("Request of the archived record = %+v, %v", got, err)
	}
	if filestore.ArchivedReads() == before {
		t.Fatal("a read of requests/done/ was not counted")
	}
}
