package inbox

import (
	"context"
	"encoding/json"
	"os"
	"testing"
)

// TestRecordLineIsWhatJSONMarshalWrites: the journal's hand-written records
// are byte for byte encoding/json's, so journals written before and after
// read the same, and each parses back to the record written.
func TestRecordLineIsWhatJSONMarshalWrites(t *testing.T) {
	for _, r := range []record{
		{},
		{Base: 1 << 40, Off: 7},
		{Base: 3, Off: 99, ID: "m-01HZY.x_9"},
		{Base: 3, Off: 99, ID: "x123-lead", First: &anchor{N: 4096, Sum: 4294967295}},
		{Base: 0, Off: 12, Clean: true, First: &anchor{N: 1, Sum: 0}},
		{ID: `needs "escaping" <&> ` + "\x01\u2028é"},
	} {
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		got := r.appendLine([]byte("keep:"))
		if string(got) != "keep:"+string(want)+"\n" {
			t.Errorf("record %+v:\n got %s\nwant %s", r, got, want)
		}
		var back record
		if err := json.Unmarshal(got[len("keep:"):], &back); err != nil {
			t.Fatalf("%s does not parse: %v", got, err)
		}
		if back.Base != r.Base || back.Off != r.Off || back.ID != r.ID || back.Clean != r.Clean || (back.First == nil) != (r.First == nil) || (r.First != nil && *back.First != *r.First) {
			t.Errorf("%s parsed back as %+v, want %+v", got, back, r)
		}
	}
}

// TestJournalCreatedByItsFirstRecord: a consumer that has committed nothing
// leaves no journal, stopped cleanly or not, and starts again as from a
// clean stop; its first commit creates the journal, and from then on a
// clean stop and a crash read as such.
func TestJournalCreatedByItsFirstRecord(t *testing.T) {
	team := t.TempDir()
	var got collect
	open := func() *Consumer {
		t.Helper()
		c, err := NewConsumer(team, "bob", got.handle, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	journal := cursorPath(team, "bob")
	exists := func() bool {
		_, err := os.Stat(journal)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return err == nil
	}
	ctx := context.Background()
	c := open()
	if err := c.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c = open()
	if err := c.Abandon(); err != nil {
		t.Fatal(err)
	}
	if exists() {
		t.Fatal("a consumer that committed nothing left a journal")
	}
	if err := Append(team, "bob", msg("alice", "bob", "one")); err != nil {
		t.Fatal(err)
	}
	c = open()
	if c.firstAfterCrash {
		t.Fatal("no journal read as a crash")
	}
	if err := c.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if !exists() {
		t.Fatal("a commit left no journal")
	}
	if err := c.Abandon(); err != nil {
		t.Fatal(err)
	}
	if err := Append(team, "bob", msg("alice", "bob", "two")); err != nil {
		t.Fatal(err)
	}
	c = open()
	defer c.Close()
	if err := c.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	ds := got.ds
	if len(ds) != 2 || ds[0].Msg.Content != "one" || ds[0].Redelivery || ds[1].Msg.Content != "two" || !ds[1].Redelivery {
		t.Fatalf("deliveries %+v: want one, then two marked as a redelivery after the abandoned run", ds)
	}
}
