package protocol_test

import (
	"bytes"
	"strings"
	"testing"

	"huddle/protocol"
)

// TestEncodeKeepsHTMLCharactersOneByte: <, > and & are written as they are,
// not as six-byte \u escapes, so an answer of 390 KB stays 390 KB on the
// line; in a message, in an answer built by OK, in a foreign field and in a
// raw answer an agent wrote.
func TestEncodeKeepsHTMLCharactersOneByte(t *testing.T) {
	const size = 390 << 10
	text := strings.Repeat("<a&b>", size/5)
	req := protocol.InvocationRequest{RequestID: "iv-1", CorrelationID: "co-1", Caller: "lead", Target: "bob", Action: "a", Prompt: "p", TimeoutSec: 1}
	res, err := protocol.OK(&req, 1, map[string]string{"summary": text})
	if err != nil {
		t.Fatal(err)
	}
	withResult := protocol.NewMessage(protocol.TypeInvocationResult, "bob", "lead")
	withResult.Result = &res
	raw := res
	raw.Result = []byte(`{"summary":"` + text + `"}`)
	withRaw := protocol.NewMessage(protocol.TypeInvocationResult, "bob", "lead")
	withRaw.Result = &raw
	message := protocol.NewMessage(protocol.TypeMessage, "bob", "lead")
	message.Content = text
	message.Extra = map[string]any{"note": "<&>"}
	for name, m := range map[string]*protocol.Message{"OK": &withResult, "raw": &withRaw, "message": &message} {
		b, err := protocol.Encode(m)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if bytes.Contains(b, []byte(`\u003c`)) || bytes.Contains(b, []byte(`\u0026`)) || bytes.Contains(b, []byte(`\u003e`)) {
			t.Errorf("%s: HTML characters escaped: %.80s…", name, b[bytes.Index(b, []byte(`\u00`)):])
		}
		if len(b) > size+1024 {
			t.Errorf("%s: a %d-byte text took a %d-byte line", name, size, len(b))
		}
		back, err := protocol.Decode(b, protocol.Fallback{})
		if err != nil {
			t.Fatalf("%s: decode: %v", name, err)
		}
		if name == "message" && (back.Content != text || back.Extra["note"] != "<&>") {
			t.Errorf("message: round trip changed the content")
		}
		if bytes.HasSuffix(b, []byte("\n")) {
			t.Errorf("%s: Encode ends with a newline", name)
		}
	}
}
