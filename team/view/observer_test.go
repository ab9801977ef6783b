package view

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"huddle/inbox"
	"huddle/internal/testkit"
	"huddle/internal/testkit/dirlead"
	"huddle/internal/testkit/dirrecords"
	"huddle/internal/testkit/teamkit"
	"huddle/ipc/trace"
	"huddle/protocol"
	"huddle/store"
	"huddle/store/filestore"
	"huddle/team"
	"huddle/teamdir"
)

// recorder keeps every snapshot sent and wakes waiters on each.
type recorder struct {
	mu      sync.Mutex
	snaps   []Snapshot
	notify  chan struct{} // closed and replaced on every send
	inSend  atomic.Int32
	overlap atomic.Bool // send was entered while another call was running
}

func newRecorder() *recorder { return &recorder{notify: make(chan struct{})} }

func (r *recorder) send(s Snapshot) {
	if r.inSend.Add(1) > 1 {
		r.overlap.Store(true)
	}
	defer r.inSend.Add(-1)
	r.mu.Lock()
	r.snaps = append(r.snaps, s)
	close(r.notify)
	r.notify = make(chan struct{})
	r.mu.Unlock()
}

func (r *recorder) count() int { r.mu.Lock(); defer r.mu.Unlock(); return len(r.snaps) }

func (r *recorder) all() []Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Snapshot(nil), r.snaps...)
}

// wait returns the first snapshot, at or after the latest one, for which
// cond holds; it fails the test when none comes within the deadline.
func (r *recorder) wait(t *testing.T, what string, cond func(Snapshot) bool) Snapshot {
	t.Helper()
	deadline := time.NewTimer(15 * time.Second)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		var last *Snapshot
		if n := len(r.snaps); n > 0 {
			last = &r.snaps[n-1]
		}
		ch := r.notify
		r.mu.Unlock()
		if last != nil && cond(*last) {
			return *last
		}
		select {
		case <-ch:
		case <-deadline.C:
			if last != nil {
				t.Fatalf("timed out waiting for %s; last snapshot (version %d): %s", what, last.Version, describe(*last))
			}
			t.Fatalf("timed out waiting for %s: no snapshot", what)
		}
	}
}

func describe(s Snapshot) string {
	var b strings.Builder
	for _, m := range s.Members {
		fmt.Fprintf(&b, "[%s %s %q unread=%d] ", m.Record.Name, m.Record.Status, m.Record.Activity, m.Unread)
	}
	for _, r := range s.Requests {
		fmt.Fprintf(&b, "{%s %s by %s} ", r.ID, r.Status, r.ResolvedBy)
	}
	fmt.Fprintf(&b, "pending=%d chains=%d messages=%d", s.Pending, s.Chains.Len(), len(s.Messages))
	return b.String()
}

// openDir opens the files store of the team directory dir, closed when the
// test ends.
func openDir(t *testing.T, dir string) store.Store {
	t.Helper()
	st, err := filestore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// observe starts an observer of the team directory dir, through its files
// store, that stops when the test ends.
func observe(t *testing.T, dir string, opts ObserveOptions) (*Observer, *recorder) {
	t.Helper()
	return observeStore(t, openDir(t, dir), opts)
}

// observeStore starts an observer of st that stops when the test ends.
func observeStore(t *testing.T, st store.Store, opts ObserveOptions) (*Observer, *recorder) {
	t.Helper()
	rec := newRecorder()
	o, err := Observe(context.Background(), st, opts, rec.send)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := o.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if rec.overlap.Load() {
			t.Error("send was called from two goroutines at once")
		}
	})
	return o, rec
}

// eventsOnly is the default: no periodic rescan, so what a test sees came
// by the store's watches (fsnotify on a team directory).
var eventsOnly = ObserveOptions{}

func external(name string) team.MemberSpec {
	return team.MemberSpec{Name: name, Role: "test", Runtime: team.RuntimeSpec{Kind: team.RuntimeExternal}}
}

func member(s Snapshot, name string) (MemberView, bool) {
	for _, m := range s.Members {
		if m.Record.Name == name {
			return m, true
		}
	}
	return MemberView{}, false
}

func names(s Snapshot) string {
	var out []string
	for _, m := range s.Members {
		out = append(out, m.Record.Name)
	}
	return strings.Join(out, ",")
}

func writeMember(t *testing.T, dir, name string, st protocol.MemberStatus, activity string) {
	t.Helper()
	if err := dirrecords.WriteMember(dir, &protocol.Member{Name: name, Status: st, Activity: activity, Since: teamkit.T0}); err != nil {
		t.Fatal(err)
	}
}

func TestObserverMemberRecords(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "team")
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: []team.MemberSpec{external("bob"), external("alice")}})
	_, rec := observe(t, dir, eventsOnly)
	for _, sub := range []string{teamdir.MembersDir, teamdir.RequestsDir, "inbox"} {
		// inbox/ is made by the inboxes' follow, just after the first
		// snapshot.
		testkit.WaitFor(t, 5*time.Second, sub+" made", func() bool {
			_, err := os.Stat(filepath.Join(dir, sub))
			return err == nil
		})
		if st, err := os.Stat(filepath.Join(dir, sub)); err != nil || st.Mode().Perm() != 0o700 {
			t.Fatalf("%s not created 0700: %v", sub, err)
		}
	}
	first := rec.wait(t, "the roster", func(s Snapshot) bool { return s.Team != nil && len(s.Members) == 2 })
	if names(first) != "bob,alice" || first.Members[0].Record.Status != "" || first.Members[0].Spec.Runtime.Kind != team.RuntimeExternal {
		t.Fatalf("roster before any record: %s", describe(first))
	}
	writeMember(t, dir, "alice", protocol.MemberWorking, "writing tests")
	rec.wait(t, "alice working", func(s Snapshot) bool {
		m, _ := member(s, "alice")
		return m.Record.Status == protocol.MemberWorking && m.Record.Activity == "writing tests"
	})
	// A record without a team.json entry comes after the roster.
	writeMember(t, dir, "zed", protocol.MemberIdle, "")
	writeMember(t, dir, "carol", protocol.MemberIdle, "")
	s := rec.wait(t, "carol and zed", func(s Snapshot) bool { return len(s.Members) == 4 })
	if names(s) != "bob,alice,carol,zed" {
		t.Fatalf("order %s, want team.json order then the rest by name", names(s))
	}
	if m, _ := member(s, "zed"); m.Spec.Name != "" {
		t.Fatalf("zed has a spec: %+v", m.Spec)
	}
	if err := os.Remove(filepath.Join(dir, teamdir.MembersDir, "zed.json")); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "zed gone", func(s Snapshot) bool { return names(s) == "bob,alice,carol" })
}

func TestObserverTeamJSON(t *testing.T) {
	dir := t.TempDir()
	_, rec := observe(t, dir, eventsOnly)
	s := rec.wait(t, "a snapshot", func(Snapshot) bool { return true })
	if s.Team != nil || !strings.Contains(s.TeamErr, "no team") {
		t.Fatalf("no team.json: team %v, err %q", s.Team, s.TeamErr)
	}
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: []team.MemberSpec{external("alice")}})
	rec.wait(t, "the team", func(s Snapshot) bool { return s.Team != nil && s.TeamErr == "" && names(s) == "alice" })
	if err := os.WriteFile(team.ConfigPath(dir), []byte(`{"name":`), 0o600); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "the error", func(s Snapshot) bool { return s.Team == nil && strings.Contains(s.TeamErr, "team.json") })
	// A member added to team.json: its inbox is followed from then on.
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: []team.MemberSpec{external("alice"), external("dave")}})
	rec.wait(t, "dave", func(s Snapshot) bool { return names(s) == "alice,dave" })
	if err := inbox.Append(dir, "dave", msg("alice", "dave", "welcome")); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "dave's message", func(s Snapshot) bool {
		m, _ := member(s, "dave")
		return len(s.Messages) == 1 && s.Messages[0].Inbox == "dave" && s.Messages[0].Msg.Content == "welcome" && m.Unread == 1
	})
}

func msg(from, to, content string) *protocol.Message {
	m := protocol.NewMessage(protocol.TypeMessage, from, to)
	m.Content = content
	return &m
}

func TestObserverRequestResolvedElsewhere(t *testing.T) {
	dir := t.TempDir()
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: []team.MemberSpec{external("alice"), external("bob")}})
	older := teamkit.PlanRequest("pl-000000000001", "alice", teamkit.T0)
	newer := teamkit.PlanRequest("pl-000000000002", "bob", teamkit.T0.Add(time.Minute))
	teamkit.MustCreate(t, dir, newer)
	_, rec := observe(t, dir, eventsOnly)
	rec.wait(t, "one pending", func(s Snapshot) bool { return s.Pending == 1 && len(s.Requests) == 1 })
	teamkit.MustCreate(t, dir, older)
	s := rec.wait(t, "two pending", func(s Snapshot) bool { return s.Pending == 2 })
	if s.Requests[0].ID != older.ID || s.Requests[1].ID != newer.ID {
		t.Fatalf("pending not oldest first: %s", describe(s))
	}

	// Another process approves the newer one.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), teamkit.RoleEnv+"=resolver", "DIR="+dir, "ME=other-ui", "EVENT="+string(protocol.EventApprove))
	cmd.Stdin = strings.NewReader(newer.ID + "\n")
	out, err := cmd.Output()
	if err != nil || !strings.HasPrefix(string(out), "won approved") {
		t.Fatalf("resolver: %v %s", err, out)
	}
	s = rec.wait(t, "approved by other-ui", func(s Snapshot) bool {
		return s.Pending == 1 && len(s.Requests) == 2 && s.Requests[1].Status == protocol.RequestApproved
	})
	if r := s.Requests[1]; r.ID != newer.ID || r.ResolvedBy != "other-ui" || r.ResolvedAt == nil {
		t.Fatalf("final request: %+v", r)
	}
	if s.Requests[0].ID != older.ID || s.Requests[0].Status != protocol.RequestPending {
		t.Fatalf("pending first: %s", describe(s))
	}

	// The CLI's way: Decide. The newest resolution comes first among the final.
	if _, err := dirlead.Decide(dir, older.ID, protocol.EventReject, "split it in two", "lead"); err != nil {
		t.Fatal(err)
	}
	s = rec.wait(t, "rejected", func(s Snapshot) bool { return s.Pending == 0 && s.Requests[0].Status == protocol.RequestRejected })
	if r := s.Requests[0]; r.ID != older.ID || r.ResolvedBy != "lead" || r.Feedback != "split it in two" || s.Requests[1].ID != newer.ID {
		t.Fatalf("after the rejection: %s", describe(s))
	}
}

func TestObserverMessagesAndUnread(t *testing.T) {
	dir := t.TempDir()
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: []team.MemberSpec{external("alice"), external("bob")}})
	_, rec := observe(t, dir, eventsOnly)
	rec.wait(t, "the roster", func(s Snapshot) bool { return len(s.Members) == 2 })
	for i := range 10 {
		if err := inbox.Append(dir, "alice", msg("bob", "alice", fmt.Sprint("m", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := inbox.Append(dir, protocol.Lead, msg("alice", protocol.Lead, "to the lead")); err != nil {
		t.Fatal(err)
	}
	contents := func(s Snapshot, in string) string {
		var out []string
		for _, m := range s.Messages {
			if m.Inbox == in {
				out = append(out, m.Msg.Content)
			}
		}
		return strings.Join(out, " ")
	}
	unread := func(s Snapshot, name string) int { m, _ := member(s, name); return m.Unread }
	s := rec.wait(t, "ten unread", func(s Snapshot) bool { return unread(s, "alice") == 10 && len(s.Messages) == 11 })
	if got := contents(s, "alice"); got != "m0 m1 m2 m3 m4 m5 m6 m7 m8 m9" {
		t.Fatalf("alice's messages: %q", got)
	}
	if contents(s, protocol.Lead) != "to the lead" || unread(s, "bob") != 0 {
		t.Fatalf("lead's inbox or bob: %s", describe(s))
	}
	// alice's consumer handles everything and compacts the file: nothing is
	// unread, and what was seen stays in Messages.
	c, err := inbox.NewConsumer(dir, "alice", func(context.Context, inbox.Delivery) error { return nil }, inbox.Options{CompactAt: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(filepath.Join(teamdir.InboxDirPath(dir), "alice.jsonl")); st.Size() != 0 {
		t.Fatal("not compacted")
	}
	rec.wait(t, "none unread", func(s Snapshot) bool { return unread(s, "alice") == 0 })
	for i := 10; i < 13; i++ {
		if err := inbox.Append(dir, "alice", msg("bob", "alice", fmt.Sprint("m", i))); err != nil {
			t.Fatal(err)
		}
	}
	s = rec.wait(t, "three unread", func(s Snapshot) bool { return unread(s, "alice") == 3 && len(s.Messages) == 14 })
	if got := contents(s, "alice"); got != "m0 m1 m2 m3 m4 m5 m6 m7 m8 m9 m10 m11 m12" {
		t.Fatalf("alice's messages after compaction: %q", got)
	}
	if err := c.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "none unread again", func(s Snapshot) bool { return unread(s, "alice") == 0 })
}

// TestObserverTraces: spans appended show as a chain of calls, on every
// store.
func TestObserverTraces(t *testing.T) {
	teamkit.EachStore(t, func(t *testing.T, ctx context.Context, st store.Store, _ *team.Team) { testTraces(t, ctx, st) })
}

func testTraces(t *testing.T, ctx context.Context, st store.Store) {
	_, rec := observeStore(t, st, eventsOnly)
	rec.wait(t, "a snapshot", func(Snapshot) bool { return true })
	t0 := teamkit.T0
	spans := []trace.Span{
		{Span: trace.SpanStart, TS: t0, RequestID: "req-1", CorrelationID: "corr-1", Caller: "reservas", Target: "finanzas", Action: "pagar_factura"},
		{Span: trace.SpanStart, TS: t0.Add(time.Millisecond), RequestID: "req-2", CorrelationID: "corr-1", ParentRequestID: "req-1",
			Caller: "finanzas", Target: "data", Action: "escribir", Hop: 1},
		{Span: trace.SpanEnd, TS: t0.Add(5 * time.Millisecond), RequestID: "req-2", CorrelationID: "corr-1", ParentRequestID: "req-1",
			Caller: "finanzas", Target: "data", Action: "escribir", Hop: 1, Status: "error", DurationMS: 4,
			Error: &trace.SpanError{Code: "DENIED", Message: "max hops", Details: json.RawMessage(`{"reason":"max_hops"}`)}},
	}
	for _, sp := range spans {
		if err := st.AppendSpan(ctx, sp); err != nil {
			t.Fatal(err)
		}
	}
	s := rec.wait(t, "the chain", func(s Snapshot) bool {
		return s.Chains.Len() == 1 && len(s.Chains.At(0).Rows) == 2 && s.Chains.At(0).Rows[1].Call.Status == trace.CallError
	})
	rows := s.Chains.At(0).Rows
	if rows[0].Call.Status != trace.CallRunning || rows[0].Depth != 0 || rows[1].Depth != 1 || rows[1].Call.ErrorReason != "max_hops" {
		t.Fatalf("rows: %+v %+v", *rows[0].Call, *rows[1].Call)
	}
	if err := st.AppendSpan(ctx, trace.Span{Span: trace.SpanEnd, TS: t0.Add(9 * time.Millisecond), RequestID: "req-1", CorrelationID: "corr-1",
		Status: "ok", DurationMS: 9}); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "the root done", func(s Snapshot) bool {
		return s.Chains.Len() == 1 && s.Chains.At(0).Rows[0].Call.Status == trace.CallOK && s.Chains.At(0).Rows[0].Call.DurationMS == 9
	})
}

// TestObserverCoalescesRapidChanges: thousands of changes made as fast as
// the store takes them reach the UI as at most one snapshot a frame, the
// last one holding them all, on every store.
func TestObserverCoalescesRapidChanges(t *testing.T) {
	teamkit.EachStore(t, func(t *testing.T, ctx context.Context, st store.Store, _ *team.Team) { testCoalesces(t, ctx, st) })
}

func testCoalesces(t *testing.T, ctx context.Context, st store.Store) {
	// A long frame, so that sending every change would exceed the bound
	// below even on a machine so busy that a change takes a frame to write.
	const frame = 100 * time.Millisecond
	start := time.Now()
	_, rec := observeStore(t, st, ObserveOptions{Frame: frame})
	rec.wait(t, "a snapshot", func(Snapshot) bool { return true })
	const records, messages, spans = 2000, 2000, 1000
	for i := range records + messages + spans {
		switch {
		case i%5 < 2:
			n := i / 5 * 2 // 0, 1, ... records-1
			if i%5 == 1 {
				n++
			}
			if err := st.PutMember(ctx, &protocol.Member{Name: "ana", Status: protocol.MemberWorking, Since: teamkit.T0,
				Counters: protocol.Counters{Sent: n}}); err != nil {
				t.Fatal(err)
			}
		case i%5 < 4:
			n := i / 5 * 2
			if i%5 == 3 {
				n++
			}
			if err := st.Append(ctx, "ana", msg(protocol.Lead, "ana", fmt.Sprint(n))); err != nil {
				t.Fatal(err)
			}
		default:
			n := i / 5
			if err := st.AppendSpan(ctx, trace.Span{Span: trace.SpanStart, TS: teamkit.T0.Add(time.Duration(n) * time.Millisecond),
				RequestID: fmt.Sprint("req-", n), CorrelationID: fmt.Sprint("corr-", n), Caller: "ana", Target: "bo", Action: "x"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	final := rec.wait(t, "the final state", func(s Snapshot) bool {
		m, _ := member(s, "ana")
		return m.Record.Counters.Sent == records-1 && len(s.Messages) == messages && s.Chains.Len() == spans
	})
	last := final.Messages[len(final.Messages)-1]
	if last.Msg.Content != fmt.Sprint(messages-1) || final.Chains.At(0).CorrelationID != fmt.Sprint("corr-", spans-1) {
		t.Fatalf("final state: last message %q, newest chain %s", last.Msg.Content, final.Chains.At(0).CorrelationID)
	}
	final = rec.wait(t, "every message unread", func(s Snapshot) bool { m, _ := member(s, "ana"); return m.Unread == messages })
	if m, _ := member(final, "ana"); m.Unread != messages {
		t.Fatalf("unread %d, want %d", m.Unread, messages)
	}
	all := rec.all()
	elapsed := time.Since(start)
	changes := records + messages + spans
	t.Logf("%d changes, %d snapshots in %v", changes, len(all), elapsed)
	// At most one send a frame, whatever the scheduler did: the bound is
	// the frames that elapsed (plus the first send), not a ratio that a
	// busy machine decides.
	if limit := int(elapsed/frame) + 1; len(all) > limit {
		t.Fatalf("%d snapshots in %v for %d changes: more than one a frame (%d)", len(all), elapsed, changes, limit)
	}
	for i := 1; i < len(all); i++ {
		if all[i].Version != all[i-1].Version+1 {
			t.Fatalf("versions %d then %d", all[i-1].Version, all[i].Version)
		}
	}
}

// TestObserverSnapshotsAreNeverModified: a snapshot handed out is never
// written again, whatever the observer folds after it, on every store.
func TestObserverSnapshotsAreNeverModified(t *testing.T) {
	teamkit.EachStore(t, func(t *testing.T, ctx context.Context, st store.Store, _ *team.Team) {
		testSnapshotsNeverModified(t, ctx, st)
	})
}

func testSnapshotsNeverModified(t *testing.T, ctx context.Context, st store.Store) {
	type kept struct {
		s    Snapshot
		json []byte
	}
	var mu sync.Mutex
	var keep []kept
	rec := newRecorder()
	o, err := Observe(ctx, st, ObserveOptions{Frame: time.Millisecond}, func(s Snapshot) {
		b, err := json.Marshal(s)
		if err != nil {
			t.Error(err)
		}
		mu.Lock()
		keep = append(keep, kept{s, b})
		mu.Unlock()
		rec.send(s)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	// Messages out of time order (bo's are older) take the sorting path.
	for i := range 30 {
		m := msg("lead", "ana", fmt.Sprint("a", i))
		if err := st.Append(ctx, "ana", m); err != nil {
			t.Fatal(err)
		}
		old := msg("lead", "bo", fmt.Sprint("b", i))
		old.TS = time.Now().Add(-time.Hour + time.Duration(i)*time.Second)
		if err := st.Append(ctx, "bo", old); err != nil {
			t.Fatal(err)
		}
		if err := st.PutMember(ctx, &protocol.Member{Name: "ana", Status: protocol.MemberWorking, Activity: fmt.Sprint("step ", i), Since: teamkit.T0}); err != nil {
			t.Fatal(err)
		}
		if err := st.CreateRequest(ctx, teamkit.PlanRequest(fmt.Sprintf("pl-%012d", i), "ana", teamkit.T0.Add(time.Duration(i)*time.Second))); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			if _, err := team.Decide(ctx, st, fmt.Sprintf("pl-%012d", i), protocol.EventApprove, "", "lead"); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.AppendSpan(ctx, trace.Span{Span: trace.SpanStart, TS: teamkit.T0.Add(time.Duration(i) * time.Millisecond), RequestID: fmt.Sprint("req-", i), CorrelationID: fmt.Sprint("corr-", i%3),
			Caller: "ana", Target: "bo", Action: "x"}); err != nil {
			t.Fatal(err)
		}
		// Read the latest snapshot while the observer builds the next one:
		// the race detector sees any write to what was handed out.
		if n := rec.count(); n > 0 {
			s := rec.all()[n-1]
			for _, m := range s.Messages {
				_ = m.Msg.Content
			}
			for _, c := range s.Chains.All() {
				for _, r := range c.Rows {
					_ = r.Call.Status
				}
			}
		}
	}
	final := rec.wait(t, "everything", func(s Snapshot) bool {
		m, _ := member(s, "ana")
		// 30 to bo, 30 to ana and 10 decisions told to ana.
		return len(s.Messages) == 70 && len(s.Requests) == 30 && m.Record.Activity == "step 29" &&
			s.Chains.Len() == 3 && s.Chains.Calls() == 30
	})
	for i := 1; i < len(final.Messages); i++ {
		if final.Messages[i].Msg.TS.Before(final.Messages[i-1].Msg.TS) {
			t.Fatalf("messages out of time order at %d", i)
		}
	}
	if final.Messages[0].Msg.Content != "b0" || final.Messages[29].Msg.Content != "b29" {
		t.Fatalf("older messages first: %q ... %q", final.Messages[0].Msg.Content, final.Messages[29].Msg.Content)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, k := range keep {
		b, _ := json.Marshal(k.s)
		if string(b) != string(k.json) {
			t.Fatalf("snapshot %d changed after it was sent", k.s.Version)
		}
	}
	if len(keep) < 2 {
		t.Fatalf("only %d snapshots", len(keep))
	}
}

// deafStore is a store whose Watch tells no change, as a file system that
// does not report them.
type deafStore struct{ store.Store }

func (deafStore) Watch(context.Context, func(store.Change), ...store.ChangeKind) (store.Subscription, error) {
	return deafSub{}, nil
}

type deafSub struct{}

func (deafSub) Stop() error { return nil }

// TestObserverRescanFindsMissedChanges: on a store whose watch tells no
// change of members and requests, ObserveOptions.Rescan still finds them.
func TestObserverRescanFindsMissedChanges(t *testing.T) {
	dir := t.TempDir()
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: []team.MemberSpec{external("alice")}})
	_, rec := observeStore(t, deafStore{openDir(t, dir)}, ObserveOptions{Rescan: 20 * time.Millisecond})
	rec.wait(t, "a snapshot", func(Snapshot) bool { return true })
	writeMember(t, dir, "alice", protocol.MemberAwaitingApproval, "waiting")
	teamkit.MustCreate(t, dir, teamkit.PlanRequest("pl-00000000000a", "alice", teamkit.T0))
	rec.wait(t, "the rescan", func(s Snapshot) bool {
		m, _ := member(s, "alice")
		return m.Record.Status == protocol.MemberAwaitingApproval && s.Pending == 1
	})
	if err := os.Remove(filepath.Join(dir, teamdir.RequestsDir, "pl-00000000000a.json")); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "the removal", func(s Snapshot) bool { return len(s.Requests) == 0 && s.Pending == 0 })
}

// clientGoroutines counts the goroutines of this process but those of an
// embedded NATS server (storekinds' "nats"): the server keeps a consumer a
// watch made for a while after the watch stopped, which is the server's
// to clean, not the observer's.
func clientGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if g != "" && !strings.Contains(g, "nats-server/v2/server") {
			count++
		}
	}
	return count
}

// TestObserverCloseStopsEverything: Close (or the end of its context)
// stops every goroutine the observer started, the store's watches too, and
// no snapshot is sent after it, on every store.
func TestObserverCloseStopsEverything(t *testing.T) {
	teamkit.EachStore(t, func(t *testing.T, ctx context.Context, st store.Store, _ *team.Team) { testCloseStops(t, ctx, st) })
}

func testCloseStops(t *testing.T, parent context.Context, st store.Store) {
	before := clientGoroutines()
	ctx, cancel := context.WithCancel(parent)
	rec := newRecorder()
	o, err := Observe(ctx, st, ObserveOptions{Rescan: 5 * time.Millisecond, Probe: 5 * time.Millisecond}, rec.send)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Append(parent, "bo", msg("ana", "bo", "hi")); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "the message", func(s Snapshot) bool { return len(s.Messages) == 1 })
	cancel() // the context ending stops it too; Close still waits
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	n := rec.count()
	// Some end after Close returns: under two -race runs of the whole
	// package at once, the NATS store's took over 5 s once.
	testkit.WaitFor(t, 30*time.Second, fmt.Sprintf("goroutines back to %d", before), func() bool {
		return clientGoroutines() <= before
	})
	if err := st.PutMember(parent, &protocol.Member{Name: "ana", Status: protocol.MemberWorking, Activity: "after close", Since: teamkit.T0}); err != nil {
		t.Fatal(err)
	}
	if rec.count() != n {
		t.Fatal("a snapshot was sent after Close returned")
	}
}

// TestObserverDeadLetters: what the team refuses reaches the snapshot as
// it is written (the store watches its dead letters: no clock reads them),
// with who caused it; an earlier snapshot's list is never changed by a
// later one. On every store.
func TestObserverDeadLetters(t *testing.T) {
	// No clock reads them: each store tells its dead letters as they come.
	defer func(every time.Duration) { refreshEvery = every }(refreshEvery)
	refreshEvery = time.Hour
	teamkit.EachStore(t, func(t *testing.T, ctx context.Context, st store.Store, _ *team.Team) { testDeadLetters(t, ctx, st) })
}

func testDeadLetters(t *testing.T, ctx context.Context, st store.Store) {
	_, rec := observeStore(t, st, eventsOnly)
	rec.wait(t, "a snapshot", func(Snapshot) bool { return true })
	forged, _ := json.Marshal(msg("reservas", "finanzas", "approve my own plan"))
	if err := st.DeadLetter(ctx, protocol.DeadLetterLine{Source: "inbox/finanzas.jsonl", Offset: 42, Reason: "only the lead answers a plan", Raw: string(forged)}); err != nil {
		t.Fatal(err)
	}
	first := rec.wait(t, "the first dead letter", func(s Snapshot) bool { return len(s.DeadLetters) == 1 })
	d := first.DeadLetters[0]
	if d.Member != "finanzas" || d.By != "reservas" || d.Reason != "only the lead answers a plan" || d.Offset != 42 {
		t.Fatalf("dead letter %+v", d)
	}
	if err := st.DeadLetter(ctx, protocol.DeadLetterLine{Source: "exec:auditor", Offset: 7, Reason: "not a JSON action", Raw: "garbage"}); err != nil {
		t.Fatal(err)
	}
	s := rec.wait(t, "the second", func(s Snapshot) bool { return len(s.DeadLetters) == 2 })
	if s.DeadLetters[1].By != "auditor" || len(first.DeadLetters) != 1 || first.DeadLetters[0] != d {
		t.Fatalf("second %+v; the first snapshot now holds %+v", s.DeadLetters[1], first.DeadLetters)
	}
}

// TestObserverNoticesAKilledRuntime: a runtime killed with kill -9 changes
// no file (the kernel drops its flock), so no event tells the observer;
// the probe it runs while a runtime runs does. The lock is held here by an
// open file description closed without a write, as a killed process's is.
func TestObserverNoticesAKilledRuntime(t *testing.T) {
	dir := t.TempDir()
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: []team.MemberSpec{external("alice")}})
	unlock, err := teamdir.LockRuntime(dir) // writes the record a runtime leaves
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	held, err := os.Open(teamdir.RuntimeLockPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(held.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	_, rec := observe(t, dir, ObserveOptions{Probe: 20 * time.Millisecond})
	rec.wait(t, "the runtime seen running", func(s Snapshot) bool { return s.Runtime.Running && !s.Down })
	held.Close() // the kill: the lock goes, the file is not written
	rec.wait(t, "the runtime seen gone", func(s Snapshot) bool { return !s.Runtime.Running && s.Down })
}
