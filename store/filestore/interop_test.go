package filestore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"huddle/inbox"
	"huddle/protocol"
	"huddle/store"
	"huddle/store/filestore"
	"huddle/team"
	"huddle/teamdir"
)

// TestSameFilesAsTheTeam: what the file store writes, the team package
// reads, and the other way round, so the team can move onto the store one
// caller at a time.
func TestSameFilesAsTheTeam(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := filestore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	// A request the store made, decided by the team package.
	p := protocol.NewRequest(protocol.KindPlan, protocol.NewRequestID(protocol.KindPlan), "alice", protocol.Lead, time.Now(), time.Hour)
	p.Plan = "plan"
	if err := s.CreateRequest(ctx, &p); err != nil {
		t.Fatal(err)
	}
	if err := team.CreateRequest(dir, &p); !errors.Is(err, store.ErrExists) {
		t.Fatalf("team.CreateRequest of the store's record: %v", err)
	}
	if _, err := team.Resolve(dir, p.ID, team.Resolution{Event: protocol.EventApprove, By: protocol.Lead}); err != nil {
		t.Fatal(err)
	}
	var already *store.AlreadyError
	if _, err := s.Decide(ctx, p.ID, store.Decision{Event: protocol.EventReject, By: "x"}); !errors.As(err, &already) || already.By != protocol.Lead {
		t.Fatalf("the store deciding what the team decided: %v", err)
	}
	// A request the team made, decided by the store.
	q := protocol.NewRequest(protocol.KindShutdown, protocol.NewRequestID(protocol.KindShutdown), protocol.Lead, "bob", time.Now(), time.Hour)
	if err := team.CreateRequest(dir, &q); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Decide(ctx, q.ID, store.Decision{Event: protocol.EventApprove, By: "bob", Text: "bye"}); err != nil {
		t.Fatal(err)
	}
	r, err := team.LoadRequest(dir, q.ID)
	if err != nil || r.Status != protocol.RequestApproved || r.ResponseReason != "bye" {
		t.Fatalf("team.LoadRequest after the store decided: %v %+v", err, r)
	}
	if _, err := team.Resolve(dir, q.ID, team.Resolution{Event: protocol.EventReject, By: "bob"}); err == nil {
		t.Fatal("the team decided again what the store decided")
	}
	// Archived by the team: the store still reads it, and refuses to decide it.
	if err := team.Archive(dir, r); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Request(ctx, q.ID); err != nil || got.Status != protocol.RequestApproved {
		t.Fatalf("an archived request: %v %+v", err, got)
	}

	// Member records both ways.
	m := &protocol.Member{Name: "alice", Status: protocol.MemberWorking, Since: time.Now().UTC()}
	if err := team.WriteMember(dir, m); err != nil {
		t.Fatal(err)
	}
	ms, _, err := s.Members(ctx, time.Hour)
	if err != nil || len(ms) != 1 || ms[0].Status != protocol.MemberWorking {
		t.Fatalf("store.Members of the team's record: %v %+v", err, ms)
	}
	m.Status = protocol.MemberIdle
	if err := s.PutMember(ctx, m); err != nil {
		t.Fatal(err)
	}
	if got, err := team.LoadMember(dir, "alice"); err != nil || got.Status != protocol.MemberIdle {
		t.Fatalf("team.LoadMember of the store's record: %v %+v", err, got)
	}

	// An inbox line appended by anyone (inbox.Append) reaches the store's
	// consumer, and the store's appends are plain inbox lines.
	msg := protocol.NewMessage(protocol.TypeMessage, protocol.Lead, "alice")
	msg.Content = "from inbox.Append"
	if err := inbox.Append(dir, "alice", &msg); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 2)
	sub, err := s.Consume(ctx, "alice", func(_ context.Context, d store.Delivery) error { got <- d.Msg.Content; return nil })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	select {
	case c := <-got:
		if c != "from inbox.Append" {
			t.Fatalf("got %q", c)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the store's consumer never saw inbox.Append's line")
	}
	sub.Stop()
	if n, err := inbox.Committed(dir, "alice"); err != nil || n == 0 {
		t.Fatalf("the store's consumer committed nothing in the cursor journal: %d %v", n, err)
	}

	// Nothing written outside the files docs/ARCHITECTURE.md, "The team directory and the store" names (and leases/).
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		switch e.Name() {
		case "requests", "members", "inbox", "cursors", "leases":
		default:
			t.Errorf("unexpected %s in the team directory", filepath.Join(dir, e.Name()))
		}
	}
	if _, err := os.Stat(teamdir.RuntimeLockPath(dir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("runtime.lock made by the store: %v", err)
	}
}
