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
	"huddle/teamdir"
)

// TestSameFilesAsTheInbox: an inbox line appended by anyone (inbox.Append)
// reaches the store's consumer, which commits it in the cursor journal the
// inbox package reads; and the store writes nothing outside the files
// docs/ARCHITECTURE.md, "The team directory and the store" names.
func TestSameFilesAsTheInbox(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := filestore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	// A request decided and archived, and a member record.
	p := protocol.NewRequest(protocol.KindPlan, protocol.NewRequestID(protocol.KindPlan), "alice", protocol.Lead, time.Now(), time.Hour)
	p.Plan = "plan"
	if err := s.CreateRequest(ctx, &p); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Decide(ctx, p.ID, store.Decision{Event: protocol.EventApprove, By: protocol.Lead}); err != nil {
		t.Fatal(err)
	}
	if err := s.Archive(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	m := &protocol.Member{Name: "alice", Status: protocol.MemberWorking, Since: time.Now().UTC()}
	if err := s.PutMember(ctx, m); err != nil {
		t.Fatal(err)
	}

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
