package protocol_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"huddle/protocol"
)

// The examples of the Puruto IPC document, verbatim.
const (
	seedRequestJSON = `{"request_id":"req-20260224-001","correlation_id":"corr-20260224-001","caller":"puruto-reservas","target":"puruto-finanzas","action":"pagar_factura","prompt":"Paga la factura #123 por 50 EUR","timeout_sec":120,"hop":0}`
	seedOKJSON      = `{"request_id":"req-20260224-001","correlation_id":"corr-20260224-001","status":"ok","duration_ms":824,"result":{"summary":"Factura #123 pagada"}}`
	seedErrorJSON   = `{"request_id":"req-20260224-001","correlation_id":"corr-20260224-001","status":"error","duration_ms":15,"error":{"code":"DENIED","message":"Target no está en la allowlist","details":null}}`
)

func TestSeedInvocationRequestVector(t *testing.T) {
	var r protocol.InvocationRequest
	if err := json.Unmarshal([]byte(seedRequestJSON), &r); err != nil {
		t.Fatal(err)
	}
	if err := r.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if !reflect.DeepEqual(&r, seedInvocation()) {
		t.Errorf("decoded %+v, want %+v", r, *seedInvocation())
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != seedRequestJSON {
		t.Errorf("round trip not exact:\n got %s\nwant %s", b, seedRequestJSON)
	}
}

func TestSeedInvocationResultVectors(t *testing.T) {
	tests := []struct {
		name string
		json string
		want *protocol.InvocationResult
	}{
		{"ok", seedOKJSON, okResult()},
		{"error", seedErrorJSON, func() *protocol.InvocationResult {
			r := errResult()
			r.Error.Details = json.RawMessage("null")
			return r
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r protocol.InvocationResult
			if err := json.Unmarshal([]byte(tt.json), &r); err != nil {
				t.Fatal(err)
			}
			if err := r.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if !reflect.DeepEqual(&r, tt.want) {
				t.Errorf("decoded %+v, want %+v", r, *tt.want)
			}
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			if !jsonEqual(t, b, []byte(tt.json)) {
				t.Errorf("round trip:\n got %s\nwant %s", b, tt.json)
			}
		})
	}
}

func TestSeedVectorsInsideMessages(t *testing.T) {
	for _, tt := range []struct {
		typ   protocol.MessageType
		field string
		json  string
	}{
		{protocol.TypeInvocationRequest, "invocation", seedRequestJSON},
		{protocol.TypeInvocationResult, "result", seedOKJSON},
		{protocol.TypeInvocationResult, "result", seedErrorJSON},
	} {
		line := `{"id":"m-1","type":"` + string(tt.typ) + `","from":"puruto-reservas","to":"puruto-finanzas","ts":"` + wireTSString + `","` + tt.field + `":` + tt.json + `}`
		m, err := protocol.Decode([]byte(line), protocol.Fallback{})
		if err != nil {
			t.Fatalf("Decode(%s): %v", line, err)
		}
		b := mustEncode(t, &m)
		var outer map[string]json.RawMessage
		if err := json.Unmarshal(b, &outer); err != nil {
			t.Fatal(err)
		}
		if !jsonEqual(t, outer[tt.field], []byte(tt.json)) {
			t.Errorf("%s after Decode+Encode = %s, want %s", tt.field, outer[tt.field], tt.json)
		}
	}
}

func TestInvocationRequestValidate(t *testing.T) {
	required := []struct {
		field string
		blank func(*protocol.InvocationRequest)
	}{
		{"request_id", func(r *protocol.InvocationRequest) { r.RequestID = "" }},
		{"correlation_id", func(r *protocol.InvocationRequest) { r.CorrelationID = "" }},
		{"caller", func(r *protocol.InvocationRequest) { r.Caller = "" }},
		{"target", func(r *protocol.InvocationRequest) { r.Target = "" }},
		{"action", func(r *protocol.InvocationRequest) { r.Action = "" }},
	}
	for _, f := range required {
		r := seedInvocation()
		f.blank(r)
		wantErr(t, r.Validate(), fmt.Sprintf("invocation_request: %s is required", f.field))
	}

	invalid := []struct {
		name string
		edit func(*protocol.InvocationRequest)
		want string
	}{
		{"request_id path", func(r *protocol.InvocationRequest) { r.RequestID = "../x" }, "invocation_request: request_id: invalid id"},
		{"correlation_id slash", func(r *protocol.InvocationRequest) { r.CorrelationID = "a/b" }, "invocation_request: correlation_id: invalid id"},
		{"parent_request_id", func(r *protocol.InvocationRequest) { r.ParentRequestID = "a b" }, "invocation_request: parent_request_id: invalid id"},
		{"timeout negative", func(r *protocol.InvocationRequest) { r.TimeoutSec = -1 }, "invocation_request: timeout_sec must not be negative"},
		{"hop negative", func(r *protocol.InvocationRequest) { r.Hop = -1 }, "invocation_request: hop must not be negative"},
	}
	for _, tt := range invalid {
		r := seedInvocation()
		tt.edit(r)
		wantErrPrefix(t, r.Validate(), tt.want)
	}

	// Optional: prompt, parent, traceparent; zero timeout means the default.
	r := seedInvocation()
	r.Prompt, r.TimeoutSec = "", 0
	if err := r.Validate(); err != nil {
		t.Errorf("without prompt and timeout: %v", err)
	}
	r = seedInvocation()
	r.Hop = 3
	r.ParentRequestID = "req-20260224-000"
	r.Traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	if err := r.Validate(); err != nil {
		t.Fatalf("with parent and traceparent: %v", err)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"parent_request_id":"req-20260224-000"`) || !strings.Contains(string(b), `"traceparent":"00-4bf92f`) {
		t.Errorf("optional fields not written: %s", b)
	}
	var back protocol.InvocationRequest
	if err := json.Unmarshal(b, &back); err != nil || back != *r {
		t.Errorf("round trip = %+v, %v; want %+v", back, err, *r)
	}
}

func TestInvocationResultValidate(t *testing.T) {
	if err := okResult().Validate(); err != nil {
		t.Fatalf("ok result: %v", err)
	}
	if err := errResult().Validate(); err != nil {
		t.Fatalf("error result: %v", err)
	}
	tests := []struct {
		name  string
		base  func() *protocol.InvocationResult
		edit  func(*protocol.InvocationResult)
		want  string
		exact bool
	}{
		{"request_id", okResult, func(r *protocol.InvocationResult) { r.RequestID = "" }, "invocation_result: request_id is required", true},
		{"correlation_id", errResult, func(r *protocol.InvocationResult) { r.CorrelationID = "" }, "invocation_result: correlation_id is required", true},
		{"status", okResult, func(r *protocol.InvocationResult) { r.Status = "" }, "invocation_result: status is required", true},
		{"status unknown", okResult, func(r *protocol.InvocationResult) { r.Status = "maybe" }, `invocation_result: status "maybe": want ok or error`, true},
		{"request_id invalid", okResult, func(r *protocol.InvocationResult) { r.RequestID = "../x" }, "invocation_result: request_id: invalid id", false},
		{"correlation_id invalid", okResult, func(r *protocol.InvocationResult) { r.CorrelationID = "a/b" }, "invocation_result: correlation_id: invalid id", false},
		{"duration negative", okResult, func(r *protocol.InvocationResult) { r.DurationMS = -1 }, "invocation_result: duration_ms must not be negative", false},
		{"ok without result", okResult, func(r *protocol.InvocationResult) { r.Result = nil }, "invocation_result: result is required when status is ok", true},
		{"ok with null result", okResult, func(r *protocol.InvocationResult) { r.Result = json.RawMessage("null") }, "invocation_result: result is required when status is ok", true},
		{"ok with array result", okResult, func(r *protocol.InvocationResult) { r.Result = json.RawMessage("[1]") }, "invocation_result: result must be an object", true},
		{"ok with string result", okResult, func(r *protocol.InvocationResult) { r.Result = json.RawMessage(`"done"`) }, "invocation_result: result must be an object", true},
		{"ok with error", okResult, func(r *protocol.InvocationResult) { r.Error = errResult().Error }, "invocation_result: error must be absent when status is ok", true},
		{"error without error", errResult, func(r *protocol.InvocationResult) { r.Error = nil }, "invocation_result: error is required when status is error", true},
		{"error without code", errResult, func(r *protocol.InvocationResult) { r.Error.Code = "" }, "invocation_result: error.code is required", true},
		{"error unknown code", errResult, func(r *protocol.InvocationResult) { r.Error.Code = "NOPE" }, `invocation_result: error.code "NOPE" is not a known code`, true},
		{"error lower-case code", errResult, func(r *protocol.InvocationResult) { r.Error.Code = "denied" }, `invocation_result: error.code "denied" is not a known code`, true},
		{"error without message", errResult, func(r *protocol.InvocationResult) { r.Error.Message = "" }, "invocation_result: error.message is required", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.base()
			tt.edit(r)
			if tt.exact {
				wantErr(t, r.Validate(), tt.want)
			} else {
				wantErrPrefix(t, r.Validate(), tt.want)
			}
		})
	}

	// Every docs/ARCHITECTURE.md, "Invocation (Puruto IPC)" code is accepted; nil or null details are fine.
	codes := []protocol.ErrorCode{"TARGET_NOT_FOUND", "DENIED", "TIMEOUT", "INVALID_RESPONSE", "IPC_ERROR"}
	if !reflect.DeepEqual(protocol.ErrorCodes, codes) {
		t.Errorf("ErrorCodes = %v, want %v", protocol.ErrorCodes, codes)
	}
	for _, c := range codes {
		r := errResult()
		r.Error.Code, r.Error.Details = c, nil
		if err := r.Validate(); err != nil {
			t.Errorf("code %s: %v", c, err)
		}
	}
}

func TestOKAndFail(t *testing.T) {
	req := seedInvocation()

	r, err := protocol.OK(req, 824, map[string]string{"summary": "Factura #123 pagada"})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Validate(); err != nil {
		t.Errorf("OK result: %v", err)
	}
	if !reflect.DeepEqual(&r, okResult()) {
		t.Errorf("OK = %+v, want %+v", r, *okResult())
	}
	if _, err := protocol.OK(req, 1, make(chan int)); err == nil {
		t.Error("OK with an unmarshalable result: err = nil")
	}
	if r, err := protocol.OK(req, 1, []int{1}); err != nil || r.Validate() == nil {
		t.Errorf("OK with a non-object result: err %v, Validate %v; want it refused by Validate", err, r.Validate())
	}

	f := protocol.Fail(req, 15, protocol.ErrDenied, "Target no está en la allowlist", nil)
	if err := f.Validate(); err != nil {
		t.Errorf("Fail result: %v", err)
	}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if !jsonEqual(t, b, []byte(seedErrorJSON)) {
		t.Errorf("Fail = %s, want %s", b, seedErrorJSON)
	}

	f = protocol.Fail(req, 3, protocol.ErrDenied, "hop limit", map[string]any{"reason": protocol.DeniedMaxHops})
	if string(f.Error.Details) != `{"reason":"max_hops"}` {
		t.Errorf("details = %s", f.Error.Details)
	}
	if f.RequestID != req.RequestID || f.CorrelationID != req.CorrelationID || f.Status != protocol.ResultError || f.DurationMS != 3 {
		t.Errorf("Fail = %+v", f)
	}
	if bad := protocol.Fail(req, 1, "WHATEVER", "x", nil); bad.Validate() == nil {
		t.Error("Fail with an unknown code validates")
	}
}

func TestDeniedReasons(t *testing.T) {
	got := []string{protocol.DeniedNotAllowedTarget, protocol.DeniedNotAllowedAction, protocol.DeniedMaxHops, protocol.DeniedDisabled}
	want := []string{"not_allowed_target", "not_allowed_action", "max_hops", "disabled"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("denied reasons = %v, want %v", got, want)
	}
}
