package protocol_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"huddle/protocol"
)

func TestFormatTime(t *testing.T) {
	tests := []struct {
		in   time.Time
		want string
	}{
		{wireTS, wireTSString},
		{time.Date(2026, 11, 30, 9, 12, 58, 123456789, time.UTC), wireTSString}, // ns cut, not rounded
		{time.Date(2026, 11, 30, 10, 12, 58, 123456000, time.FixedZone("CET", 3600)), wireTSString},
		{time.Date(2026, 11, 30, 9, 12, 58, 0, time.UTC), "2026-11-30T09:12:58.000000Z"},
		{time.Date(2026, 1, 2, 3, 4, 5, 1000, time.FixedZone("X", -7*3600)), "2026-01-02T10:04:05.000001Z"},
	}
	for _, tt := range tests {
		if got := protocol.FormatTime(tt.in); got != tt.want {
			t.Errorf("FormatTime(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestEncodeFullForm(t *testing.T) {
	for _, typ := range allTypes {
		t.Run(string(typ), func(t *testing.T) {
			m := validMessage(typ)
			m.TS = time.Date(2026, 11, 30, 10, 12, 58, 123456789, time.FixedZone("CET", 3600))
			b := mustEncode(t, &m)
			if bytes.ContainsAny(b, "\n") {
				t.Errorf("encoded line contains a newline: %s", b)
			}
			var got map[string]any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("Encode wrote invalid JSON %s: %v", b, err)
			}
			want := map[string]any{"id": m.ID, "type": string(typ), "from": m.From, "to": m.To, "ts": wireTSString}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s = %v, want %v (line %s)", k, got[k], v, b)
				}
			}
			if _, ok := got["timestamp"]; ok {
				t.Errorf("the writer wrote the foreign timestamp field: %s", b)
			}
		})
	}
}

func TestEncodeFieldsByType(t *testing.T) {
	enc := func(typ protocol.MessageType) map[string]any {
		m := validMessage(typ)
		var got map[string]any
		if err := json.Unmarshal(mustEncode(t, &m), &got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	// A rejection must be written: approve:false is not the same as absent.
	sr := enc(protocol.TypeShutdownResponse)
	if v, ok := sr["approve"]; !ok || v != false {
		t.Errorf("shutdown_response approve = %v (present %v), want false", v, ok)
	}
	if sr["request_id"] != "sd-0123456789ab" || sr["reason"] != "mid critical section" {
		t.Errorf("shutdown_response = %v", sr)
	}
	pr := enc(protocol.TypePlanApprovalRequest)
	if pr["plan"] != "1. read the invoice\n2. pay it" || pr["request_id"] != "pl-5f1c9a2b7e31" {
		t.Errorf("plan_approval_request = %v", pr)
	}
	st := enc(protocol.TypeStatus)
	if st["status"] != "working" || st["content"] != "paying invoice #123" {
		t.Errorf("status = %v", st)
	}
	inv := enc(protocol.TypeInvocationRequest)
	if o, ok := inv["invocation"].(map[string]any); !ok || o["action"] != "pagar_factura" || o["hop"] != 0.0 {
		t.Errorf("invocation = %v", inv["invocation"])
	}
	// Fields a type does not use are left out.
	msg := enc(protocol.TypeMessage)
	for _, k := range []string{"request_id", "reason", "approve", "feedback", "plan", "invocation", "result", "status"} {
		if _, ok := msg[k]; ok {
			t.Errorf("message carries unused field %s: %v", k, msg)
		}
	}
}

func TestEncodeRefusesInvalid(t *testing.T) {
	m := validMessage(protocol.TypePlanApprovalResponse)
	m.RequestID = ""
	b, err := protocol.Encode(&m)
	wantErr(t, err, "plan_approval_response: request_id is required")
	if b != nil {
		t.Errorf("Encode returned bytes with an error: %s", b)
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	for _, typ := range allTypes {
		t.Run(string(typ), func(t *testing.T) {
			m := validMessage(typ)
			b := mustEncode(t, &m)
			got, err := protocol.Decode(b, protocol.Fallback{To: "ignored", ID: "ignored-1"})
			if err != nil {
				t.Fatalf("Decode(%s): %v", b, err)
			}
			if !reflect.DeepEqual(got, m) {
				t.Errorf("round trip:\n got %+v\nwant %+v\nline %s", got, m, b)
			}
			if b2 := mustEncode(t, &got); !bytes.Equal(b2, b) {
				t.Errorf("re-encoding differs:\n%s\n%s", b, b2)
			}
		})
	}
	// The ok result and a newline-terminated line, as read from an inbox.
	m := validMessage(protocol.TypeInvocationResult)
	m.Result = okResult()
	got, err := protocol.Decode(append(mustEncode(t, &m), '\n'), protocol.Fallback{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, m) {
		t.Errorf("ok result round trip:\n got %+v\nwant %+v", got, m)
	}
}

func TestExtraSurvivesAndNeverShadows(t *testing.T) {
	m := validMessage(protocol.TypePlanApprovalRequest)
	m.Extra = map[string]any{
		"summary":  "a plan",
		"priority": 3.0,
		"tags":     []any{"a", "b"},
		"meta":     map[string]any{"k": true, "n": nil},
		// Known names in Extra must never replace the real fields.
		"from":       "mallory",
		"to":         "everyone",
		"type":       "broadcast",
		"id":         "evil-1",
		"ts":         "1999-01-01T00:00:00Z",
		"timestamp":  1.0,
		"plan":       "rm -rf /",
		"request_id": "pl-000000000000",
		"approve":    true,
	}
	b := mustEncode(t, &m)
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"id": m.ID, "type": "plan_approval_request", "from": "reservas", "to": "lead", "ts": wireTSString,
		"request_id": "pl-5f1c9a2b7e31", "plan": m.Plan,
		"summary": "a plan", "priority": 3.0, "tags": []any{"a", "b"}, "meta": map[string]any{"k": true, "n": nil},
	}
	if !reflect.DeepEqual(raw, want) {
		t.Errorf("encoded with extras:\n got %v\nwant %v", raw, want)
	}

	got, err := protocol.Decode(b, protocol.Fallback{})
	if err != nil {
		t.Fatal(err)
	}
	wantExtra := map[string]any{"summary": "a plan", "priority": 3.0, "tags": []any{"a", "b"}, "meta": map[string]any{"k": true, "n": nil}}
	if !reflect.DeepEqual(got.Extra, wantExtra) {
		t.Errorf("Extra after round trip = %v, want %v", got.Extra, wantExtra)
	}
	got.Extra = nil
	m.Extra = nil
	if !reflect.DeepEqual(got, m) {
		t.Errorf("known fields after round trip:\n got %+v\nwant %+v", got, m)
	}
}

func TestDecodeFullFormIgnoresFallbackAndNormalisesTime(t *testing.T) {
	line := `{"id":"m-1","type":"message","from":"alice","to":"bob","ts":"2026-11-30T10:12:58.123456+01:00","content":"hi"}`
	m, err := protocol.Decode([]byte(line), protocol.Fallback{To: "carol", ID: "x-9"})
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != "m-1" || m.To != "bob" {
		t.Errorf("id, to = %q, %q; the line's own values win over the fallback", m.ID, m.To)
	}
	if !m.TS.Equal(wireTS) || m.TS.Location() != time.UTC {
		t.Errorf("ts = %v, want %v in UTC", m.TS, wireTS)
	}
	if m.Extra != nil {
		t.Errorf("Extra = %v, want nil for a line with only known fields", m.Extra)
	}
}

func TestDecodeLearnClaudeCodeMessage(t *testing.T) {
	line := `{"type":"message","from":"alice","content":"hi","timestamp":1764494000.25}`
	m, err := protocol.Decode([]byte(line), protocol.Fallback{To: "bob", ID: "x-1"})
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	want := protocol.Message{
		ID: "x-1", Type: protocol.TypeMessage, From: "alice", To: "bob",
		TS: time.Unix(1764494000, 250_000_000).UTC(), Content: "hi",
	}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("got %+v\nwant %+v", m, want)
	}
	if got := protocol.FormatTime(m.TS); got != "2025-11-30T09:13:20.250000Z" {
		t.Errorf("ts = %s, want the fraction kept", got)
	}

	// Without a fallback the line lacks id and to, so it is refused.
	_, err = protocol.Decode([]byte(line), protocol.Fallback{})
	wantErr(t, err, "message: id is required")
	_, err = protocol.Decode([]byte(line), protocol.Fallback{ID: "x-1"})
	wantErr(t, err, "message: to is required")

	// The writer always writes the full form.
	b := mustEncode(t, &m)
	if !strings.Contains(string(b), `"ts":"2025-11-30T09:13:20.250000Z"`) || strings.Contains(string(b), "timestamp") {
		t.Errorf("re-encoded dialect line = %s, want the full form", b)
	}
}

func TestDecodeLearnClaudeCodeTimestamps(t *testing.T) {
	tests := []struct {
		ts   string
		want time.Time
	}{
		{"1764494000", time.Unix(1764494000, 0)},
		{"1764494000.5", time.Unix(1764494000, 500_000_000)},
		{"1764494000.123456", time.Unix(1764494000, 123_456_000)},
		{"1.7644940001e9", time.Unix(1764494000, 100_000_000)},
		{`"2026-11-30T09:12:58.123456Z"`, wireTS},
	}
	for _, tt := range tests {
		line := `{"type":"message","from":"alice","content":"hi","timestamp":` + tt.ts + `}`
		m, err := protocol.Decode([]byte(line), protocol.Fallback{To: "bob", ID: "x-1"})
		if err != nil {
			t.Errorf("timestamp %s: %v", tt.ts, err)
			continue
		}
		if !m.TS.Equal(tt.want) {
			t.Errorf("timestamp %s: ts = %v, want %v", tt.ts, m.TS, tt.want.UTC())
		}
	}
	// ts wins over timestamp when both are present.
	line := `{"id":"m-1","type":"message","from":"a","to":"b","content":"x","ts":"` + wireTSString + `","timestamp":1}`
	m, err := protocol.Decode([]byte(line), protocol.Fallback{})
	if err != nil || !m.TS.Equal(wireTS) {
		t.Errorf("ts and timestamp: ts = %v, err = %v; want ts", m.TS, err)
	}
}

func TestDecodeLearnClaudeCodePlan(t *testing.T) {
	const base = `{"type":"plan_approval_response","from":"alice","request_id":"abcd1234","plan":"do X","timestamp":1764494000.25`
	fb := protocol.Fallback{To: protocol.Lead, ID: "x-2"}

	m, err := protocol.Decode([]byte(base+`}`), fb)
	if err != nil {
		t.Fatalf("plan without approve: %v", err)
	}
	if m.Type != protocol.TypePlanApprovalRequest || m.Plan != "do X" || m.RequestID != "abcd1234" || m.Approve != nil {
		t.Errorf("plan without approve = %+v, want a plan_approval_request", m)
	}
	if m.To != protocol.Lead || m.ID != "x-2" {
		t.Errorf("to, id = %q, %q; want the fallback", m.To, m.ID)
	}

	for _, approve := range []bool{true, false} {
		line := base + `,"approve":` + map[bool]string{true: "true", false: "false"}[approve] + `}`
		m, err := protocol.Decode([]byte(line), fb)
		if err != nil {
			t.Fatalf("approve=%v: %v", approve, err)
		}
		if m.Type != protocol.TypePlanApprovalResponse {
			t.Errorf("approve=%v: type = %s, want it to stay a response", approve, m.Type)
		}
		if m.Approve == nil || *m.Approve != approve {
			t.Errorf("approve=%v: Approve = %s", approve, ptrStr(m.Approve))
		}
	}

	// approve: null is as good as absent.
	m, err = protocol.Decode([]byte(base+`,"approve":null}`), fb)
	if err != nil || m.Type != protocol.TypePlanApprovalRequest {
		t.Errorf("approve null: type %s, err %v; want a request", m.Type, err)
	}

	// A response with neither plan nor approve stays a response and is refused.
	_, err = protocol.Decode([]byte(`{"type":"plan_approval_response","from":"lead","request_id":"abcd1234","timestamp":1764494000}`), fb)
	wantErr(t, err, "plan_approval_response: approve is required")

	// A real plan_approval_request is left alone.
	m, err = protocol.Decode([]byte(`{"type":"plan_approval_request","from":"alice","request_id":"abcd1234","plan":"do X","timestamp":1764494000}`), fb)
	if err != nil || m.Type != protocol.TypePlanApprovalRequest {
		t.Errorf("plan_approval_request: %+v, %v", m, err)
	}
}

func TestDecodeExtrasAtTopLevel(t *testing.T) {
	line := `{"type":"message","from":"alice","content":"hi","timestamp":1764494000.25,"summary":"greeting","color":"blue","meta":{"n":[1,2]},"flag":false,"nothing":null}`
	m, err := protocol.Decode([]byte(line), protocol.Fallback{To: "bob", ID: "x-1"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"summary": "greeting", "color": "blue", "meta": map[string]any{"n": []any{1.0, 2.0}},
		"flag": false, "nothing": nil,
	}
	if !reflect.DeepEqual(m.Extra, want) {
		t.Errorf("Extra = %#v\nwant %#v", m.Extra, want)
	}
	// Written back in the full form, with the extras.
	var raw map[string]any
	if err := json.Unmarshal(mustEncode(t, &m), &raw); err != nil {
		t.Fatal(err)
	}
	for k, v := range want {
		if !reflect.DeepEqual(raw[k], v) {
			t.Errorf("re-encoded %s = %v, want %v", k, raw[k], v)
		}
	}
	if raw["ts"] != "2025-11-30T09:13:20.250000Z" || raw["id"] != "x-1" || raw["to"] != "bob" {
		t.Errorf("re-encoded envelope = %v", raw)
	}
}

func TestDecodeGarbage(t *testing.T) {
	const env = `"id":"m-1","from":"alice","to":"bob","ts":"2026-11-30T09:12:58.123456Z"`
	tests := []struct {
		name string
		line string
		want string // substring of the error
	}{
		{"empty", "", "empty line"},
		{"blank", " \t\r\n", "empty line"},
		{"text", "hello world", "not a JSON object"},
		{"array", `[1,2,3]`, "not a JSON object"},
		{"array of messages", `[{"type":"message"}]`, "not a JSON object"},
		{"null", `null`, "not a JSON object"},
		{"number", `42`, "not a JSON object"},
		{"string", `"message"`, "not a JSON object"},
		{"bom", "\xef\xbb\xbf{}", "not a JSON object"},
		{"truncated", `{"type":"message","from":"al`, "invalid JSON"},
		{"trailing comma", `{"type":"message",}`, "invalid JSON"},
		{"two objects", `{"type":"message"}{"type":"message"}`, "invalid JSON"},
		{"unterminated", `{`, "invalid JSON"},
		{"empty object", `{}`, "message: type is required"},
		{"unknown type", `{"type":"gossip",` + env + `}`, `unknown type "gossip"`},
		{"type as object", `{"type":{"a":1},` + env + `}`, "type: want a string"},
		{"from as number", `{"type":"message","id":"m-1","from":7,"to":"bob","ts":"2026-11-30T09:12:58Z","content":"x"}`, "from: want a string"},
		{"content as array", `{"type":"message",` + env + `,"content":["x"]}`, "content: want a string"},
		{"id as bool", `{"type":"message","id":true,"from":"a","to":"b","ts":"2026-11-30T09:12:58Z","content":"x"}`, "id: want a string"},
		{"approve as string", `{"type":"shutdown_response",` + env + `,"request_id":"sd-0123456789ab","approve":"yes"}`, "approve: want true or false"},
		{"approve as number", `{"type":"shutdown_response",` + env + `,"request_id":"sd-0123456789ab","approve":1}`, "approve: want true or false"},
		{"ts bad string", `{"type":"message","id":"m-1","from":"a","to":"b","ts":"yesterday","content":"x"}`, "ts:"},
		{"ts without zone", `{"type":"message","id":"m-1","from":"a","to":"b","ts":"2026-11-30T09:12:58","content":"x"}`, "ts:"},
		{"ts with space", `{"type":"message","id":"m-1","from":"a","to":"b","ts":"2026-11-30 09:12:58Z","content":"x"}`, "ts:"},
		{"ts empty", `{"type":"message","id":"m-1","from":"a","to":"b","ts":"","content":"x"}`, "ts:"},
		{"ts as bool", `{"type":"message","id":"m-1","from":"a","to":"b","ts":true,"content":"x"}`, "ts:"},
		{"ts as object", `{"type":"message","id":"m-1","from":"a","to":"b","ts":{},"content":"x"}`, "ts:"},
		{"timestamp bad string", `{"type":"message","from":"a","content":"x","timestamp":"noon"}`, "timestamp:"},
		{"timestamp zero", `{"type":"message","from":"a","content":"x","timestamp":0}`, "timestamp:"},
		{"timestamp negative", `{"type":"message","from":"a","content":"x","timestamp":-5}`, "timestamp:"},
		{"timestamp huge", `{"type":"message","from":"a","content":"x","timestamp":1e300}`, "timestamp:"},
		{"timestamp overflow", `{"type":"message","from":"a","content":"x","timestamp":1e400}`, "timestamp:"},
		{"invocation as string", `{"type":"invocation_request",` + env + `,"invocation":"run it"}`, "invocation:"},
		{"invocation timeout as string", `{"type":"invocation_request",` + env + `,"invocation":{"request_id":"r","correlation_id":"c","caller":"a","target":"b","action":"x","timeout_sec":"120"}}`, "invocation:"},
		{"invocation invalid", `{"type":"invocation_request",` + env + `,"invocation":{"request_id":"r"}}`, "correlation_id is required"},
		{"result as number", `{"type":"invocation_result",` + env + `,"result":5}`, "result:"},
		{"result error as string", `{"type":"invocation_result",` + env + `,"result":{"request_id":"r","correlation_id":"c","status":"error","error":"boom"}}`, "result:"},
		{"status as number", `{"type":"status",` + env + `,"status":1}`, "status: want a string"},
		{"request id path", `{"type":"shutdown_request",` + env + `,"request_id":"../../etc/passwd"}`, "request_id: invalid id"},
		{"from path", `{"type":"message","id":"m-1","from":"../lead","to":"b","ts":"2026-11-30T09:12:58Z","content":"x"}`, "from: invalid name"},
		{"fallback id invalid", `{"type":"message","from":"a","content":"x","timestamp":1764494000}`, "id: invalid id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fb := protocol.Fallback{To: "bob", ID: "x-1"}
			if tt.name == "fallback id invalid" {
				fb.ID = "inbox/bob.jsonl:0"
			}
			m, err := protocol.Decode([]byte(tt.line), fb)
			if err == nil {
				t.Fatalf("Decode(%q) = %+v, nil; want an error", tt.line, m)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Decode(%q): err = %q, want it to contain %q", tt.line, err, tt.want)
			}
			if !reflect.DeepEqual(m, protocol.Message{}) {
				t.Errorf("Decode returned %+v with an error, want the zero Message", m)
			}
		})
	}
}

func TestDecodeHostileInputDoesNotPanic(t *testing.T) {
	lines := [][]byte{
		[]byte("{\x00}"),
		[]byte("{\"type\":\"message\xff\xfe\"}"),
		[]byte(`{"type":"message","content":"\ud800"}`),
		bytes.Repeat([]byte("["), 20000),
		[]byte(`{"x":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`),
		[]byte(`{"type":"invocation_result","result":{"status":"error","error":null}}`),
		[]byte(`{"type":"invocation_result","result":{"status":"ok","result":null}}`),
		[]byte(`{"type":null,"from":null,"to":null,"id":null,"ts":null,"timestamp":null,"invocation":null,"result":null}`),
		bytes.Repeat([]byte(" "), 1<<16),
	}
	for _, l := range lines {
		if m, err := protocol.Decode(l, protocol.Fallback{To: "bob", ID: "x-1"}); err == nil {
			t.Errorf("Decode(%.60q) = %+v, nil; want an error", l, m)
		}
		_ = json.Unmarshal(l, new(protocol.Message)) // must not panic
	}
}

// A ts the parser accepts must be one the writer can write and the parser
// read back: the wire holds microseconds and four-digit UTC years.
func TestDecodeTimeOutsideWireForm(t *testing.T) {
	tests := []struct{ ts, want string }{
		// Non-zero, but zero once cut to microseconds.
		{"0001-01-01T00:00:00.0000001Z", "message: ts is required"},
		{"0001-01-01T00:00:00Z", "message: ts is required"},
		// Four-digit years that leave 0000-9999 when moved to UTC.
		{"0000-01-01T00:00:00+01:00", "message: ts: year -1 is outside 0000-9999"},
		{"9999-12-31T23:59:59-01:00", "message: ts: year 10000 is outside 0000-9999"},
	}
	for _, tt := range tests {
		line := `{"id":"m-1","type":"message","from":"a","to":"b","content":"x","ts":"` + tt.ts + `"}`
		_, err := protocol.Decode([]byte(line), protocol.Fallback{})
		wantErr(t, err, tt.want)
	}
	// Encode refuses what it could not write readably.
	m := validMessage(protocol.TypeMessage)
	m.TS = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	_, err := protocol.Encode(&m)
	wantErr(t, err, "message: ts: year 10000 is outside 0000-9999")
	// The edges of the range are fine, both ways.
	for _, ts := range []string{"0000-01-01T00:00:00.000000Z", "9999-12-31T23:59:59.999999Z", "0001-01-01T00:00:00.000001Z"} {
		line := `{"id":"m-1","type":"message","from":"a","to":"b","content":"x","ts":"` + ts + `"}`
		m, err := protocol.Decode([]byte(line), protocol.Fallback{})
		if err != nil {
			t.Errorf("ts %s: %v", ts, err)
			continue
		}
		b := mustEncode(t, &m)
		if !strings.Contains(string(b), `"ts":"`+ts+`"`) {
			t.Errorf("ts %s re-encoded as %s", ts, b)
		}
		if _, err := protocol.Decode(b, protocol.Fallback{}); err != nil {
			t.Errorf("ts %s: re-decode: %v", ts, err)
		}
	}
}
