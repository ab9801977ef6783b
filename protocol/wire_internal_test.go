package protocol

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// awkward are strings every escape rule of encoding/json applies to.
var awkward = []string{
	"", "plain", `quote " and \ backslash`, "<a href=\"x\">&amp;</a>", "line\nbreak\r\ttab\b\f",
	"\x00\x01\x1f\x7f", "niño ünïcödé 日本語 🎉", "\u2028 and \u2029", "bad \xff utf-8 \xc3",
	"\xed\xa0\x80 surrogate", "ends with a lone \xe2\x82", strings.Repeat("x", 5000),
}

// wireCases are messages of every type, with every optional field set and
// unset.
func wireCases() []Message {
	ts := time.Date(2026, 11, 30, 9, 12, 58, 123456789, time.FixedZone("x", 3600))
	var out []Message
	for _, typ := range MessageTypes {
		for _, s := range awkward {
			m := Message{ID: "m-1" + s, Type: typ, From: "alice", To: "bob" + s, TS: ts, Content: s,
				RequestID: s, Reason: s, Feedback: s, Plan: s, Status: MemberStatus(s)}
			out = append(out, m)
			m.Approve, m.TS = Bool(true), time.Time{}
			out = append(out, m)
			m.Approve = Bool(false)
			m.Invocation = &InvocationRequest{RequestID: "r" + s, CorrelationID: "c", Caller: "a<b>", Target: "t", Action: s, Prompt: s, TimeoutSec: 3}
			m.Result = &InvocationResult{RequestID: "r", CorrelationID: "c", Status: "ok", DurationMS: 5, Result: json.RawMessage(`{"x": "<&>"}`)}
			out = append(out, m)
		}
	}
	return out
}

// TestAppendWireIsWhatMarshalWrites: the hand-written encoder gives what
// Marshal of the wire struct gives, byte for byte.
func TestAppendWireIsWhatMarshalWrites(t *testing.T) {
	for _, m := range wireCases() {
		compareWire(t, &m)
	}
}

// FuzzAppendWire compares the hand-written encoder with Marshal on
// arbitrary field values.
func FuzzAppendWire(f *testing.F) {
	for _, s := range awkward {
		f.Add(s, s, "status", int64(1764494000123456789), uint8(1))
	}
	f.Fuzz(func(t *testing.T, content, plan, status string, ns int64, approve uint8) {
		m := Message{ID: content, Type: MessageType(plan), From: status, To: "bob", TS: time.Unix(0, ns),
			Content: content, Plan: plan, Status: MemberStatus(status), RequestID: plan, Reason: content, Feedback: status}
		if approve%3 > 0 {
			m.Approve = Bool(approve%3 == 1)
		}
		compareWire(t, &m)
	})
}

func compareWire(t *testing.T, m *Message) {
	t.Helper()
	want, werr := m.marshalWithExtra() // Extra is empty: Marshal of the wire struct
	got, gerr := m.appendWire(nil)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("Marshal error %v, appendWire error %v", werr, gerr)
	}
	if werr == nil && !bytes.Equal(got, want) {
		t.Fatalf("appendWire differs from Marshal:\n got %s\nwant %s", got, want)
	}
}

// TestAppendEncodeAppends: AppendEncode keeps what b held, adds the same
// bytes Encode returns, and leaves b as it was when m is refused.
func TestAppendEncodeAppends(t *testing.T) {
	m := NewMessage(TypeMessage, "alice", "bob")
	m.Content = "hi"
	enc, err := Encode(&m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := AppendEncode([]byte("head\n"), &m)
	if err != nil || string(got) != "head\n"+string(enc) {
		t.Fatalf("AppendEncode = %q, %v; want head then %s", got, err, enc)
	}
	bad := m
	bad.Content = ""
	got, err = AppendEncode([]byte("head\n"), &bad)
	if err == nil || string(got) != "head\n" {
		t.Fatalf("AppendEncode of an invalid message = %q, %v; want head and an error", got, err)
	}
}

// parseCorpus are lines in both dialects, valid and not, that the one-pass
// reader must read as parseSlow does or leave to it.
var parseCorpus = []string{
	`{}`,
	`{"type":"message","from":"alice","content":"hi","timestamp":1764494000.25}`,
	`{"type":"plan_approval_response","from":"alice","request_id":"abcd1234","plan":"do X","timestamp":1764494000.25}`,
	`{"type":"plan_approval_response","from":"lead","request_id":"abcd1234","approve":true,"timestamp":1764494000}`,
	`{"type":"message","from":"alice","content":"hi","timestamp":1764494000,"summary":"s","meta":{"n":[1,2.5,null]}}`,
	`{"id":"m-1","type":"status","from":"alice","to":"lead","ts":"2026-11-30T10:12:58.1234567+01:00","status":"idle"}`,
	`{"type":"message","from":"alice","content":"caf\u00e9 \ud83c\udf89 \ud83c \udf89 \ud83cx \u2028","timestamp":1.5e9}`,
	`{"type":"message","from":"alice","content":"tab\tnot allowed raw"}`,
	`{"type":"message","from":"alice","content":"esc \" \\ \/ \b \f \n \r \t"}`,
	`{"type":"message","from":"alice","content":"bad \x escape"}`,
	`{"type":"message","from":"alice","content":"short \u12"}`,
	` { "id" : "m-2" , "type" : "message" , "from" : "a" , "to" : "b" , "ts" : "2026-11-30T09:12:58Z" , "content" : "x" } `,
	`{"id":"m-1","id":"m-2","type":"message"}`,
	`{"id":"m-1","id":null,"type":"message"}`,
	`{"x":1,"x":2,"type":"message"}`,
	`{"id":null,"type":null,"from":null,"to":null,"ts":null,"content":null,"approve":null,"invocation":null,"result":null,"status":null}`,
	`{"ts":null,"timestamp":1764494000}`,
	`{"ts":"not a time","timestamp":1764494000}`,
	`{"ts":1764494000}`,
	`{"ts":"2026-11-30T09:12:58\u005a"}`,
	`{"timestamp":-1}`, `{"timestamp":1e400}`, `{"timestamp":01}`, `{"timestamp":1.}`, `{"timestamp":true}`,
	`{"approve":"yes"}`, `{"approve":1}`, `{"approve":truex}`, `{"approve":true,}`,
	`{"id":5}`, `{"id":"m-1"`, `{"id":"m-1"}x`, `{"id":"m-1"}}`, `{"id" "m-1"}`, `{"id":"m-1",}`, `{,}`,
	`{"invocation":{"request_id":"r","correlation_id":"c","caller":"a","target":"b","action":"x","prompt":"p","timeout_sec":3,"hop":0}}`,
	`{"invocation":{"Request_ID":"r","timeout_sec":"3"}}`,
	`{"invocation":[1]}`, `{"invocation":"x"}`,
	`{"result":{"request_id":"r","correlation_id":"c","status":"ok","duration_ms":1,"result":{"a":[1,{"b":null}]}}}`,
	`{"result":{"request_id":"r","status":"error","error":{"code":"TIMEOUT","message":"m"}}}`,
	`{"extra":{"deep":[[[[[[{"k":"\u00e9"}]]]]]]},"n":-0.5e-3,"t":true,"f":false,"z":null,"s":"<&>"}`,
	`{"extra":{"a":1,}}`, `{"extra":[1,]}`, `{"extra":[1 2]}`, `{"extra":{"a" 1}}`, `{"extra":"\u00zz"}`,
	`{"k\u0069":"v"}`, `{"ké":"v"}`, `{"id":"caf` + "\xff" + `"}`,
	`{"type":"message","content":"` + "\u2028 é 日本" + `"}`,
	"{\"type\":\"message\"}\u00a0",
}

// TestParseLineAgreesWithParseSlow: on every line the one-pass reader
// takes on, it gives exactly what parseSlow gives; and it takes on every
// line Encode writes with a time, which is what the inboxes carry.
func TestParseLineAgreesWithParseSlow(t *testing.T) {
	fb := Fallback{To: "bob", ID: "x7-bob"}
	for _, s := range parseCorpus {
		compareParse(t, []byte(s), fb)
	}
	for _, m := range wireCases() {
		b, err := m.appendWire(nil)
		if err != nil {
			t.Fatal(err)
		}
		compareParse(t, b, fb)
		if _, ok := parseLine(b, fb); !ok && !m.TS.IsZero() { // "ts":"" is refused
			t.Errorf("parseLine left an encoded line to parseSlow: %.200s", b)
		}
	}
	deep := `{"x":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}`
	if _, ok := parseLine([]byte(deep), fb); ok {
		t.Error("parseLine took on a line nested past maxFastDepth")
	}
	compareParse(t, []byte(deep), fb)
}

// FuzzParseLine compares the one-pass reader with parseSlow on arbitrary
// lines.
func FuzzParseLine(f *testing.F) {
	for _, s := range parseCorpus {
		f.Add([]byte(s))
	}
	for _, m := range wireCases()[:40] {
		b, _ := m.appendWire(nil)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		compareParse(t, line, Fallback{To: "bob", ID: "x7-bob"})
	})
}

func compareParse(t *testing.T, line []byte, fb Fallback) {
	t.Helper()
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return // parse answers these itself
	}
	fast, ok := parseLine(trimmed, fb)
	slow, err := parseSlow(trimmed, fb)
	if !ok {
		return
	}
	if err != nil {
		t.Fatalf("parseLine took %q, parseSlow refuses it: %v", line, err)
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("parseLine and parseSlow differ on %q:\n fast %#v\n slow %#v", line, fast, slow)
	}
}

// BenchmarkWire times one ordinary message (the inbox benchmarks' line)
// encoded and decoded by the hand-written paths and by encoding/json, in
// one run so the two can be compared: go test -run '^$' -bench Wire ./protocol
func BenchmarkWire(b *testing.B) {
	m := NewMessage(TypeMessage, "alice", "bob")
	m.Content = "a message of an ordinary length, about as long as a short status line"
	line, err := Encode(&m)
	if err != nil {
		b.Fatal(err)
	}
	fb := Fallback{To: "bob", ID: "x0-bob"}
	b.Run("encode", func(b *testing.B) {
		for b.Loop() {
			if _, err := Encode(&m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode-json", func(b *testing.B) {
		for b.Loop() {
			if _, err := m.marshalWithExtra(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		for b.Loop() {
			if _, err := Decode(line, fb); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode-json", func(b *testing.B) {
		for b.Loop() {
			if _, err := parseSlow(line, fb); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestDecodedIDKeepsNotTheLine: the id a dedupe set keeps is a string of
// its own, not a slice of a string holding the whole line (which would
// keep each line's content alive as long as its id is remembered).
func TestDecodedIDKeepsNotTheLine(t *testing.T) {
	line := []byte(`{"id":"m-1","type":"message","from":"alice","to":"bob","ts":"2026-11-30T09:12:58Z","request_id":"r-1","content":"` + strings.Repeat("x", 4096) + `"}`)
	m, err := Decode(line, Fallback{To: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	content := uintptr(unsafe.Pointer(unsafe.StringData(m.Content)))
	for name, s := range map[string]string{"id": m.ID, "request_id": m.RequestID, "from": m.From} {
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		if p >= content-512 && p < content+uintptr(len(m.Content))+512 {
			t.Errorf("%s shares the content's memory", name)
		}
	}
	if m.To != "bob" || m.Type != TypeMessage {
		t.Fatalf("decoded %+v", m)
	}
}

// TestAppendTimeIsFormatTime: the digit-by-digit time is FormatTime's, at
// the edges of every field and of the years, in other zones, and outside
// 0000-9999 (where it hands over to time's formatting).
func TestAppendTimeIsFormatTime(t *testing.T) {
	zones := []*time.Location{time.UTC, time.FixedZone("east", 14*3600), time.FixedZone("west", -12*3600-30*60)}
	var times []time.Time
	for _, y := range []int{-1, 0, 1, 999, 1969, 1970, 2026, 9999, 10000} {
		for _, z := range zones {
			times = append(times,
				time.Date(y, 1, 1, 0, 0, 0, 0, z),
				time.Date(y, 12, 31, 23, 59, 59, 999999999, z),
				time.Date(y, 2, 28, 12, 30, 5, 1000, z),
				time.Date(y, 7, 9, 9, 5, 7, 999, z))
		}
	}
	for ns := int64(-3e17); ns < 3e17; ns += 7_777_777_777_777_777 {
		times = append(times, time.Unix(0, ns))
	}
	for _, tm := range times {
		if got, want := string(appendTime([]byte("x"), tm)), "x"+FormatTime(tm); got != want {
			t.Errorf("appendTime(%v) = %s, FormatTime %s", tm, got, want)
		}
	}
}
