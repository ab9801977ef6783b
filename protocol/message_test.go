package protocol_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"huddle/protocol"
)

func TestMessageTypesList(t *testing.T) {
	if !slices.Equal(protocol.MessageTypes, allTypes) {
		t.Fatalf("MessageTypes = %v, want %v", protocol.MessageTypes, allTypes)
	}
	for _, typ := range allTypes {
		if !typ.Known() {
			t.Errorf("%q.Known() = false", typ)
		}
	}
	for _, typ := range []protocol.MessageType{"", "gossip", "Message", "plan_approval"} {
		if typ.Known() {
			t.Errorf("%q.Known() = true", typ)
		}
	}
}

type field struct {
	name  string
	blank func(*protocol.Message)
}

var envelopeFields = []field{
	{"id", func(m *protocol.Message) { m.ID = "" }},
	{"from", func(m *protocol.Message) { m.From = "" }},
	{"to", func(m *protocol.Message) { m.To = "" }},
	{"ts", func(m *protocol.Message) { m.TS = time.Time{} }},
}

// requiredFields lists, per type, the type-specific fields docs/ARCHITECTURE.md, "Messages" requires.
var requiredFields = map[protocol.MessageType][]field{
	protocol.TypeMessage:              {{"content", func(m *protocol.Message) { m.Content = "" }}},
	protocol.TypeBroadcast:            {{"content", func(m *protocol.Message) { m.Content = "" }}},
	protocol.TypeShutdownRequest:      {{"request_id", func(m *protocol.Message) { m.RequestID = "" }}},
	protocol.TypeShutdownResponse:     {{"request_id", func(m *protocol.Message) { m.RequestID = "" }}, {"approve", func(m *protocol.Message) { m.Approve = nil }}},
	protocol.TypePlanApprovalRequest:  {{"request_id", func(m *protocol.Message) { m.RequestID = "" }}, {"plan", func(m *protocol.Message) { m.Plan = "" }}},
	protocol.TypePlanApprovalResponse: {{"request_id", func(m *protocol.Message) { m.RequestID = "" }}, {"approve", func(m *protocol.Message) { m.Approve = nil }}},
	protocol.TypeInvocationRequest:    {{"invocation", func(m *protocol.Message) { m.Invocation = nil }}},
	protocol.TypeInvocationResult:     {{"result", func(m *protocol.Message) { m.Result = nil }}},
	protocol.TypeStatus:               {{"status", func(m *protocol.Message) { m.Status = "" }}},
	protocol.TypeInvocationCancel:     {{"request_id", func(m *protocol.Message) { m.RequestID = "" }}},
	protocol.TypePermissionRequest:    {{"request_id", func(m *protocol.Message) { m.RequestID = "" }}, {"content", func(m *protocol.Message) { m.Content = "" }}},
	protocol.TypePermissionResponse:   {{"request_id", func(m *protocol.Message) { m.RequestID = "" }}, {"approve", func(m *protocol.Message) { m.Approve = nil }}},
}

func TestMessageValidateRequiredFields(t *testing.T) {
	for _, typ := range allTypes {
		t.Run(string(typ), func(t *testing.T) {
			m := validMessage(typ)
			if err := m.Validate(); err != nil {
				t.Fatalf("valid %s: %v", typ, err)
			}
			specific, ok := requiredFields[typ]
			if !ok {
				t.Fatalf("no required fields listed for %s", typ)
			}
			for _, f := range append(slices.Clone(envelopeFields), specific...) {
				m := validMessage(typ)
				f.blank(&m)
				wantErr(t, m.Validate(), fmt.Sprintf("%s: %s is required", typ, f.name))
				if _, err := protocol.Encode(&m); err == nil {
					t.Errorf("Encode without %s succeeded", f.name)
				}
			}
			m = validMessage(typ)
			m.Type = ""
			wantErr(t, m.Validate(), "message: type is required")
		})
	}
}

func TestMessageValidateOptionalFields(t *testing.T) {
	// Fields that docs/ARCHITECTURE.md, "Messages" lists but does not require may be empty.
	for _, typ := range allTypes {
		m := validMessage(typ)
		m.Reason, m.Feedback = "", ""
		if typ == protocol.TypeStatus {
			m.Content = ""
		}
		if err := m.Validate(); err != nil {
			t.Errorf("%s without reason/feedback: %v", typ, err)
		}
	}
	// A rejection is a present false, not a missing approve.
	m := validMessage(protocol.TypePlanApprovalResponse)
	m.Approve = protocol.Bool(false)
	if err := m.Validate(); err != nil {
		t.Errorf("approve=false: %v", err)
	}
}

func TestMessageValidateUnknownType(t *testing.T) {
	m := validMessage(protocol.TypeMessage)
	m.Type = "gossip"
	wantErr(t, m.Validate(), `message: unknown type "gossip"`)
	m.Type = protocol.MessageType(strings.Repeat("x", 5000))
	if err := m.Validate(); err == nil || len(err.Error()) > 200 {
		t.Errorf("long unknown type: err = %.200v (want a short error)", err)
	}
}

func TestMessageValidateInvalidNames(t *testing.T) {
	bad := []string{"../x", "a/b", strings.Repeat("a", 64), "LEAD", "Alice", ".x", "a b"}
	for _, typ := range allTypes {
		for _, name := range bad {
			m := validMessage(typ)
			m.From = name
			wantErrPrefix(t, m.Validate(), fmt.Sprintf("%s: from: invalid name", typ))
			m = validMessage(typ)
			m.To = name
			wantErrPrefix(t, m.Validate(), fmt.Sprintf("%s: to: invalid name", typ))
		}
		// Empty is "required", checked in TestMessageValidateRequiredFields;
		// the lead and a 63-character name are fine on either side.
		m := validMessage(typ)
		m.From, m.To = protocol.Lead, strings.Repeat("a", 63)
		if err := m.Validate(); err != nil {
			t.Errorf("%s from lead to a 63-char name: %v", typ, err)
		}
	}
}

func TestMessageValidateInvalidIDs(t *testing.T) {
	bad := []string{"../x", "a/b", ".x", "-x", "a b", "a:1", "A" + strings.Repeat("z", 64)}
	for _, typ := range allTypes {
		for _, id := range bad {
			m := validMessage(typ)
			m.ID = id
			wantErrPrefix(t, m.Validate(), fmt.Sprintf("%s: id: invalid id", typ))
		}
	}
	withRequestID := []protocol.MessageType{
		protocol.TypeShutdownRequest, protocol.TypeShutdownResponse,
		protocol.TypePlanApprovalRequest, protocol.TypePlanApprovalResponse,
	}
	for _, typ := range withRequestID {
		for _, id := range bad {
			m := validMessage(typ)
			m.RequestID = id
			wantErrPrefix(t, m.Validate(), fmt.Sprintf("%s: request_id: invalid id", typ))
		}
		// A foreign agent's id is fine as long as it matches the pattern.
		m := validMessage(typ)
		m.RequestID = "abcd1234"
		if err := m.Validate(); err != nil {
			t.Errorf("%s with foreign request id: %v", typ, err)
		}
	}
}

func TestMessageValidateNested(t *testing.T) {
	m := validMessage(protocol.TypeInvocationRequest)
	m.Invocation.Action = ""
	err := m.Validate()
	wantErrPrefix(t, err, "invocation_request: invocation: ")
	if !strings.HasSuffix(err.Error(), "action is required") {
		t.Errorf("err = %q, want it to name action", err)
	}

	m = validMessage(protocol.TypeInvocationResult)
	m.Result.Error.Code = "NOPE"
	err = m.Validate()
	wantErrPrefix(t, err, "invocation_result: result: ")
	if !strings.Contains(err.Error(), `"NOPE"`) {
		t.Errorf("err = %q, want it to name the code", err)
	}

	m = validMessage(protocol.TypeStatus)
	m.Status = "napping"
	wantErr(t, m.Validate(), `status: unknown status "napping"`)
	for _, s := range protocol.MemberStatuses {
		m.Status = s
		if err := m.Validate(); err != nil {
			t.Errorf("status %s: %v", s, err)
		}
	}
}

func TestNewMessage(t *testing.T) {
	before := time.Now()
	m := protocol.NewMessage(protocol.TypeMessage, "alice", "bob")
	after := time.Now()
	if m.Type != protocol.TypeMessage || m.From != "alice" || m.To != "bob" {
		t.Errorf("envelope = %+v", m)
	}
	if !messageIDRE.MatchString(m.ID) {
		t.Errorf("id = %q, want a message id", m.ID)
	}
	if m.TS.Before(before.Truncate(time.Microsecond)) || m.TS.After(after) || m.TS.Location() != time.UTC {
		t.Errorf("ts = %v, want now in UTC", m.TS)
	}
	m.Content = "hi"
	if err := m.Validate(); err != nil {
		t.Errorf("NewMessage + content: %v", err)
	}
	if n := protocol.NewMessage(protocol.TypeMessage, "alice", "bob"); n.ID == m.ID {
		t.Error("two NewMessage calls share an id")
	}
}

func TestMessageApproved(t *testing.T) {
	for _, tt := range []struct {
		approve *bool
		want    bool
	}{{nil, false}, {protocol.Bool(false), false}, {protocol.Bool(true), true}} {
		m := protocol.Message{Approve: tt.approve}
		if got := m.Approved(); got != tt.want {
			t.Errorf("Approved() with %s = %v, want %v", ptrStr(tt.approve), got, tt.want)
		}
	}
}

// TestMessageEvent: an answer line stands for approve only when it says
// approve: true; absent or false is reject, as Approved says.
func TestMessageEvent(t *testing.T) {
	for _, tt := range []struct {
		approve *bool
		want    protocol.RequestEvent
	}{{nil, protocol.EventReject}, {protocol.Bool(false), protocol.EventReject}, {protocol.Bool(true), protocol.EventApprove}} {
		m := protocol.Message{Approve: tt.approve}
		if got := m.Event(); got != tt.want {
			t.Errorf("Event() with %s = %q, want %q", ptrStr(tt.approve), got, tt.want)
		}
	}
}

func TestMessageJSONMarshalerUsesWireForm(t *testing.T) {
	m := validMessage(protocol.TypeShutdownResponse)
	b, err := json.Marshal(struct{ M protocol.Message }{m})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"ts":"`+wireTSString+`"`) || !strings.Contains(string(b), `"approve":false`) {
		t.Errorf("json.Marshal = %s, want the wire form", b)
	}
	var back struct{ M protocol.Message }
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.M.ID != m.ID || !back.M.TS.Equal(m.TS) || back.M.Approve == nil || *back.M.Approve {
		t.Errorf("json.Unmarshal = %+v, want %+v", back.M, m)
	}
	// UnmarshalJSON reads without validating; Decode is the validating path.
	var loose protocol.Message
	if err := json.Unmarshal([]byte(`{"type":"message","content":"no envelope"}`), &loose); err != nil {
		t.Errorf("UnmarshalJSON of an incomplete message: %v", err)
	}
	if loose.Content != "no envelope" {
		t.Errorf("content = %q", loose.Content)
	}
	if err := json.Unmarshal([]byte(`{"type":"message","approve":"yes"}`), &loose); err == nil {
		t.Error("UnmarshalJSON with approve as a string: err = nil")
	}
}
