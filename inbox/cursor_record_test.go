package inbox

import (
	"encoding/json"
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
