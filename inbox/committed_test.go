package inbox

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"huddle/protocol"
	"huddle/teamdir"
)

func TestCommittedFollowsTheConsumer(t *testing.T) {
	team := t.TempDir()
	if got, err := Committed(team, "alice"); err != nil || got != 0 {
		t.Fatalf("no journal: %d, %v; want 0", got, err)
	}
	if _, err := Committed(team, "../alice"); err == nil {
		t.Fatal("an invalid name was accepted")
	}
	for _, s := range []string{"one", "two", "three"} {
		if err := Append(team, "alice", msg(protocol.Lead, "alice", s)); err != nil {
			t.Fatal(err)
		}
	}
	var seen []Delivery
	c, err := NewConsumer(team, "alice", func(_ context.Context, d Delivery) error {
		seen = append(seen, d)
		return nil
	}, Options{CompactAt: 1}) // compact as soon as everything is consumed
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 3 {
		t.Fatalf("delivered %d, want 3", len(seen))
	}
	st, err := os.Stat(filepath.Join(teamdir.InboxDirPath(team), "alice.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != 0 {
		t.Fatalf("inbox not compacted: %d bytes", st.Size())
	}
	// After compaction the file is empty, but the committed logical offset
	// is past the last line: base + off.
	got, err := Committed(team, "alice")
	if err != nil {
		t.Fatal(err)
	}
	last := seen[2].Offset
	if got <= last {
		t.Fatalf("committed %d, not past the last line at %d", got, last)
	}
	if err := Append(team, "alice", msg(protocol.Lead, "alice", "four")); err != nil {
		t.Fatal(err)
	}
	if again, _ := Committed(team, "alice"); again != got {
		t.Fatalf("an append moved the commit: %d -> %d", got, again)
	}
	if err := c.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if again, _ := Committed(team, "alice"); again <= seen[3].Offset {
		t.Fatalf("committed %d, not past the fourth line at %d", again, seen[3].Offset)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}
