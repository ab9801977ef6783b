package blueprint_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"huddle/ipc/blueprint"
)

// FuzzDecodeInvoke: DecodeInvoke never panics, accepts only JSON, refuses
// with a *FieldError, and what it accepts re-encodes to JSON that decodes
// again to an equal request. The seeds (here and in
// testdata/fuzz/FuzzDecodeInvoke) run as a normal test.
func FuzzDecodeInvoke(f *testing.F) {
	for _, s := range []string{
		seedRequest,
		`{"caller":{"id":"a","type":"user"},"skill_id":"alice.greet","inputs":{"prompt":"hi"}}`,
		`{"caller":{"id":"a","type":"user"},"skill_id":"s","inputs":{},"context":null}`,
		`{"caller":{"id":"a","type":"user"},"skill_id":"s","inputs":{"n":1e308,"neg":-0,"b":true,"z":null,"l":[1,{"x":"y"}]},"context":{"hop":1,"parent_request_id":"r1"}}`,
		`{"skill_id":"s","inputs":{}}`,
		`{"caller":{"id":" ","type":"user"},"skill_id":"s","inputs":{}}`,
		`{"caller":{"id":"a","type":"user"},"skill_id":7,"inputs":{}}`,
		`{"caller":{"id":"a","type":"user"},"skill_id":"s","inputs":[]}`,
		`{"caller":{"id":"a","type":"user"},"skill_id":"s","inputs":{},"context":{"timeout_ms":"soon"}}`,
		`{"caller":{"id":"a","type":"user"},"skill_id":"s","inputs":{},"context":{"timeout_ms":-1}}`,
		`{"caller":"me","skill_id":"s","inputs":{}}`,
		`{"caller":{"id":"a","type":"user","credentials":{"api_key":5}},"skill_id":"s","inputs":{}}`,
		`null`, `[]`, `"x"`, ``, `   `, `{`, `{"caller":`, "\x00\xff\xfe{}",
		`{"caller":{"id":"a","type":"user"},"skill_id":"s","inputs":{"k":"\xff\u0000<&>"}}`,
		strings.Repeat("[", 20000),
	} {
		f.Add([]byte(s))
	}
	// The 1 MiB bound is checked by TestDecodeInvokeAtTheBound, not seeded
	// here: the fuzzer would spend the minute minimising megabyte inputs.
	f.Fuzz(checkDecodeInvoke)
}

// TestDecodeInvokeAtTheBound holds the fuzz property for bodies past the
// 1 MiB bound and just under it.
func TestDecodeInvokeAtTheBound(t *testing.T) {
	big := func(n int) []byte {
		return []byte(`{"caller":{"id":"a","type":"user"},"skill_id":"s","inputs":{"t":"` + strings.Repeat("x", n) + `"}}`)
	}
	for _, n := range []int{blueprint.MaxBody, blueprint.MaxBody - 100} {
		checkDecodeInvoke(t, big(n))
	}
	if _, err := blueprint.DecodeInvoke(big(blueprint.MaxBody)); err == nil {
		t.Fatal("a body past the bound was accepted")
	}
	if _, err := blueprint.DecodeInvoke(big(blueprint.MaxBody - 100)); err != nil {
		t.Fatalf("a body under the bound was refused: %v", err)
	}
}

// checkDecodeInvoke is the property FuzzDecodeInvoke holds for every body.
func checkDecodeInvoke(t *testing.T, body []byte) {
	req, err := blueprint.DecodeInvoke(body)
	if err != nil {
		var fe *blueprint.FieldError
		if req != nil || !errors.As(err, &fe) || fe.Field == "" {
			t.Fatalf("DecodeInvoke(%q) = %v, %v: want nil and a *FieldError naming a field", body, req, err)
		}
		return
	}
	if !json.Valid(body) {
		t.Fatalf("DecodeInvoke accepted %q, which is not JSON", body)
	}
	if strings.TrimSpace(req.Caller.ID) == "" || strings.TrimSpace(req.Caller.Type) == "" ||
		strings.TrimSpace(req.SkillID) == "" || req.Inputs == nil || req.Context.TimeoutMS < 0 || req.Context.Hop < 0 {
		t.Fatalf("DecodeInvoke accepted an invalid request %+v from %q", req, body)
	}
	again, err := json.Marshal(req)
	if err != nil {
		t.Fatalf("re-encode %+v: %v", req, err)
	}
	if len(again) > blueprint.MaxBody {
		return // escaping grew it past the bound; the bound is checked elsewhere
	}
	req2, err := blueprint.DecodeInvoke(again)
	if err != nil {
		t.Fatalf("re-encoded %s does not decode: %v (from %q)", again, err, body)
	}
	if !reflect.DeepEqual(req, req2) {
		t.Fatalf("round trip changed the request:\n%+v\n%+v\nfrom %q", req, req2, body)
	}
	if again2, _ := json.Marshal(req2); !bytes.Equal(again, again2) {
		t.Fatalf("encoding is not stable: %s vs %s", again, again2)
	}
}
