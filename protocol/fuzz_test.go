package protocol_test

import (
	"bytes"
	"testing"

	"huddle/protocol"
)

// FuzzDecode checks that Decode never panics and that whatever it accepts,
// Encode writes and Decode reads back to the same message.
func FuzzDecode(f *testing.F) {
	for _, typ := range allTypes {
		m := validMessage(typ)
		b, err := protocol.Encode(&m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		`{"type":"message","from":"alice","content":"hi","timestamp":1764494000.25}`,
		`{"type":"plan_approval_response","from":"alice","request_id":"abcd1234","plan":"do X","timestamp":1764494000.25}`,
		`{"type":"plan_approval_response","from":"lead","request_id":"abcd1234","approve":true,"timestamp":1764494000}`,
		`{"type":"message","from":"alice","content":"hi","timestamp":1764494000,"summary":"s","meta":{"n":[1,2.5,null]}}`,
		`{"id":"m-1","type":"status","from":"alice","to":"lead","ts":"2026-11-30T10:12:58.1234567+01:00","status":"idle"}`,
		seedRequestJSON,
		`{"id":"m-1","type":"invocation_result","from":"a","to":"b","ts":"2026-11-30T09:12:58Z","result":` + seedErrorJSON + `}`,
		`not json`,
		`[1,2,3]`,
		`{"type":"shutdown_response","approve":"yes"}`,
		`{"type":"message","ts":"yesterday"}`,
		``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := protocol.Decode(line, protocol.Fallback{To: "bob", ID: "x-1"})
		if err != nil {
			return
		}
		b1, err := protocol.Encode(&m)
		if err != nil {
			t.Fatalf("Decode accepted %q but Encode fails: %v", line, err)
		}
		m2, err := protocol.Decode(b1, protocol.Fallback{})
		if err != nil {
			t.Fatalf("Decode accepted %q; its encoding %s does not decode: %v", line, b1, err)
		}
		b2, err := protocol.Encode(&m2)
		if err != nil {
			t.Fatalf("re-decoded %s does not encode: %v", b1, err)
		}
		if !bytes.Equal(b1, b2) {
			t.Fatalf("round trip changed the message:\n%s\n%s", b1, b2)
		}
	})
}
