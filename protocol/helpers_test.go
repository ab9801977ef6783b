package protocol_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"huddle/protocol"
)

// wireTS is the timestamp every fixture carries: UTC, whole microseconds, so
// that it survives the wire form unchanged.
var wireTS = time.Date(2026, 11, 30, 9, 12, 58, 123456000, time.UTC)

const wireTSString = "2026-11-30T09:12:58.123456Z"

func seedInvocation() *protocol.InvocationRequest {
	return &protocol.InvocationRequest{
		RequestID:     "req-20260224-001",
		CorrelationID: "corr-20260224-001",
		Caller:        "puruto-reservas",
		Target:        "puruto-finanzas",
		Action:        "pagar_factura",
		Prompt:        "Paga la factura #123 por 50 EUR",
		TimeoutSec:    120,
		Hop:           0,
	}
}

func okResult() *protocol.InvocationResult {
	return &protocol.InvocationResult{
		RequestID:     "req-20260224-001",
		CorrelationID: "corr-20260224-001",
		Status:        protocol.ResultOK,
		DurationMS:    824,
		Result:        json.RawMessage(`{"summary":"Factura #123 pagada"}`),
	}
}

func errResult() *protocol.InvocationResult {
	return &protocol.InvocationResult{
		RequestID:     "req-20260224-001",
		CorrelationID: "corr-20260224-001",
		Status:        protocol.ResultError,
		DurationMS:    15,
		Error: &protocol.InvocationError{
			Code:    protocol.ErrDenied,
			Message: "Target no está en la allowlist",
			Details: json.RawMessage(`{"reason":"not_allowed_target"}`),
		},
	}
}

// validMessage returns a message of type typ with every field its type
// requires (and some optional ones) set; it passes Validate.
func validMessage(typ protocol.MessageType) protocol.Message {
	m := protocol.Message{ID: "m-01JDX3ABCDEFGHJKMNPQRSTVWX", Type: typ, From: "reservas", To: protocol.Lead, TS: wireTS}
	switch typ {
	case protocol.TypeMessage:
		m.Content = "hola"
	case protocol.TypeBroadcast:
		m.From, m.To = protocol.Lead, "reservas"
		m.Content = "everyone: stand up"
	case protocol.TypeShutdownRequest:
		m.From, m.To = protocol.Lead, "reservas"
		m.RequestID = "sd-0123456789ab"
		m.Reason = "work is done"
	case protocol.TypeShutdownResponse:
		m.RequestID = "sd-0123456789ab"
		m.Approve = protocol.Bool(false)
		m.Reason = "mid critical section"
	case protocol.TypePlanApprovalRequest:
		m.RequestID = "pl-5f1c9a2b7e31"
		m.Plan = "1. read the invoice\n2. pay it"
	case protocol.TypePlanApprovalResponse:
		m.From, m.To = protocol.Lead, "reservas"
		m.RequestID = "pl-5f1c9a2b7e31"
		m.Approve = protocol.Bool(true)
		m.Feedback = "go ahead"
	case protocol.TypeInvocationRequest:
		m.From, m.To = "puruto-reservas", "puruto-finanzas"
		m.Invocation = seedInvocation()
	case protocol.TypeInvocationResult:
		m.From, m.To = "puruto-finanzas", "puruto-reservas"
		m.Result = errResult()
	case protocol.TypeInvocationCancel:
		m.From, m.To = "puruto-reservas", "puruto-finanzas"
		m.RequestID = "req-20260224-001"
	case protocol.TypePermissionRequest:
		m.RequestID = "pm-5f1c9a2b7e31"
		m.Content = "Bash: go test ./..."
	case protocol.TypePermissionResponse:
		m.From, m.To = protocol.Lead, "reservas"
		m.RequestID = "pm-5f1c9a2b7e31"
		m.Approve = protocol.Bool(false)
		m.Feedback = "not on main"
	case protocol.TypeStatus:
		m.Status = protocol.MemberWorking
		m.Content = "paying invoice #123"
	}
	return m
}

// allTypes is the table of docs/ARCHITECTURE.md, "Messages",, written out so that a type added to the
// package without a test fails TestMessageTypesList.
var allTypes = []protocol.MessageType{
	"message", "broadcast", "shutdown_request", "shutdown_response",
	"plan_approval_request", "plan_approval_response", "invocation_request",
	"invocation_result", "status", "invocation_cancel",
	"permission_request", "permission_response",
}

func mustEncode(t *testing.T, m *protocol.Message) []byte {
	t.Helper()
	b, err := protocol.Encode(m)
	if err != nil {
		t.Fatalf("Encode(%+v): %v", m, err)
	}
	return b
}

func wantErr(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil, want %q", want)
	}
	if err.Error() != want {
		t.Fatalf("err = %q, want %q", err, want)
	}
}

func wantErrPrefix(t *testing.T, err error, prefix string) {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil, want one starting %q", prefix)
	}
	if !strings.HasPrefix(err.Error(), prefix) {
		t.Fatalf("err = %q, want one starting %q", err, prefix)
	}
}

// jsonEqual reports whether a and b hold the same JSON value.
func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("unmarshal %s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("unmarshal %s: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}
