package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
)

// TimeLayout is the wire form of every timestamp: RFC 3339, UTC, microseconds.
const TimeLayout = "2006-01-02T15:04:05.000000Z07:00"

// FormatTime renders t in the wire form.
func FormatTime(t time.Time) string { return t.UTC().Truncate(time.Microsecond).Format(TimeLayout) }

// MaxLine is the largest inbox line, newline included (docs/ARCHITECTURE.md, "Bounds").
const MaxLine = 1 << 20

// ErrTooLarge is returned for a line over MaxLine.
var ErrTooLarge = errors.New("line exceeds 1 MiB")

type wireMessage struct {
	ID         string             `json:"id"`
	Type       MessageType        `json:"type"`
	From       string             `json:"from"`
	To         string             `json:"to"`
	TS         string             `json:"ts"`
	Content    string             `json:"content,omitempty"`
	RequestID  string             `json:"request_id,omitempty"`
	Reason     string             `json:"reason,omitempty"`
	Approve    *bool              `json:"approve,omitempty"`
	Feedback   string             `json:"feedback,omitempty"`
	Plan       string             `json:"plan,omitempty"`
	Invocation *InvocationRequest `json:"invocation,omitempty"`
	Result     *InvocationResult  `json:"result,omitempty"`
	Status     MemberStatus       `json:"status,omitempty"`
}

// Encode validates m and returns its full wire form, one JSON object without
// the trailing newline.
func Encode(m *Message) ([]byte, error) {
	b, err := AppendEncode(make([]byte, 0, m.wireSizeHint()), m)
	if err != nil {
		return nil, err
	}
	return b, nil
}

func encodeError(m *Message, err error) error { return fmt.Errorf("encode %s: %w", m.Type, err) }

// wireSizeHint is about the length of m's wire form, so that encoding it
// takes one allocation.
func (m *Message) wireSizeHint() int {
	return 160 + len(m.ID) + len(m.From) + len(m.To) + len(m.Content) + len(m.RequestID) +
		len(m.Reason) + len(m.Feedback) + len(m.Plan)
}

// MarshalJSON writes the full wire form (it does not validate).
func (m Message) MarshalJSON() ([]byte, error) {
	return m.appendWire(make([]byte, 0, m.wireSizeHint()))
}

// marshalWithExtra writes the wire form through encoding/json, with what a
// foreign writer added (Extra) merged in.
func (m *Message) marshalWithExtra() ([]byte, error) {
	w := wireMessage{
		ID: m.ID, Type: m.Type, From: m.From, To: m.To,
		Content: m.Content, RequestID: m.RequestID, Reason: m.Reason, Approve: m.Approve,
		Feedback: m.Feedback, Plan: m.Plan, Invocation: m.Invocation, Result: m.Result, Status: m.Status,
	}
	if !m.TS.IsZero() {
		w.TS = FormatTime(m.TS)
	}
	b, err := Marshal(w)
	if err != nil || len(m.Extra) == 0 {
		return b, err
	}
	// Keep what a foreign writer added, without letting it shadow a known field.
	var all map[string]any
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, err
	}
	for k, v := range m.Extra {
		if !knownField(k) {
			all[k] = v
		}
	}
	return Marshal(all)
}

// Marshal is json.Marshal without HTML escaping: <, > and & stay one byte
// each instead of a six-byte \u escape, so an answer full of markup is not
// blown up six times on its way through an inbox line (docs/ARCHITECTURE.md, "Bounds").
// Every wire form huddle writes goes through it.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// UnmarshalJSON reads either dialect without validating; see Decode.
func (m *Message) UnmarshalJSON(b []byte) error {
	out, err := parse(b, Fallback{})
	if err != nil {
		return err
	}
	*m = out
	return nil
}

// Fallback supplies what a line in the learn-claude-code dialect leaves out:
// the recipient (from the inbox file's name) and an id (from file and offset).
type Fallback struct {
	To string
	ID string
}

// Decode parses one line in either dialect and validates it.
//
// The full form is what Encode writes. The learn-claude-code form has
// `timestamp` as float seconds instead of `ts`, no `id` and no `to` (taken
// from fb), and submits a plan as a plan_approval_response that carries
// `plan` and no `approve`: that is read as a plan_approval_request. Fields
// this version does not know are kept in Extra.
func Decode(line []byte, fb Fallback) (Message, error) {
	m, err := parse(line, fb)
	if err != nil {
		return Message{}, err
	}
	if err := m.Validate(); err != nil {
		return Message{}, err
	}
	return m, nil
}

func knownField(k string) bool {
	switch k {
	case "id", "type", "from", "to", "ts", "timestamp", "content", "request_id", "reason",
		"approve", "feedback", "plan", "invocation", "result", "status":
		return true
	}
	return false
}

func parse(line []byte, fb Fallback) (Message, error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return Message{}, errors.New("decode: empty line")
	}
	if line[0] != '{' {
		return Message{}, errors.New("decode: not a JSON object")
	}
	if m, ok := parseLine(line, fb); ok {
		return m, nil
	}
	return parseSlow(line, fb)
}

// parseSlow is parse through encoding/json: the line into a map of raw
// values, then each field. parseLine gives the same in one pass for the
// lines it takes on; this one decides every other line, and gives the
// errors.
func parseSlow(line []byte, fb Fallback) (Message, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(line, &raw); err != nil {
		return Message{}, fmt.Errorf("decode: invalid JSON: %v", err)
	}
	var m Message
	str := func(key string, dst *string) error {
		v, ok := raw[key]
		if !ok || isNull(v) {
			return nil
		}
		if err := json.Unmarshal(v, dst); err != nil {
			return fmt.Errorf("decode: %s: want a string", key)
		}
		return nil
	}
	var typ, status string
	for _, f := range []struct {
		key string
		dst *string
	}{
		{"id", &m.ID}, {"type", &typ}, {"from", &m.From}, {"to", &m.To},
		{"content", &m.Content}, {"request_id", &m.RequestID}, {"reason", &m.Reason},
		{"feedback", &m.Feedback}, {"plan", &m.Plan}, {"status", &status},
	} {
		if err := str(f.key, f.dst); err != nil {
			return Message{}, err
		}
	}
	m.Type, m.Status = MessageType(typ), MemberStatus(status)
	if v, ok := raw["approve"]; ok && !isNull(v) {
		var b bool
		if err := json.Unmarshal(v, &b); err != nil {
			return Message{}, errors.New("decode: approve: want true or false")
		}
		m.Approve = &b
	}
	if v, ok := raw["invocation"]; ok && !isNull(v) {
		m.Invocation = new(InvocationRequest)
		if err := json.Unmarshal(v, m.Invocation); err != nil {
			return Message{}, fmt.Errorf("decode: invocation: %v", err)
		}
	}
	if v, ok := raw["result"]; ok && !isNull(v) {
		m.Result = new(InvocationResult)
		if err := json.Unmarshal(v, m.Result); err != nil {
			return Message{}, fmt.Errorf("decode: result: %v", err)
		}
	}
	var err error
	if v, ok := raw["ts"]; ok && !isNull(v) {
		if m.TS, err = parseTime(v); err != nil {
			return Message{}, fmt.Errorf("decode: ts: %v", err)
		}
	} else if v, ok := raw["timestamp"]; ok && !isNull(v) {
		if m.TS, err = parseTime(v); err != nil {
			return Message{}, fmt.Errorf("decode: timestamp: %v", err)
		}
	}
	m.complete(fb)
	for k, v := range raw {
		if knownField(k) {
			continue
		}
		var x any
		if err := json.Unmarshal(v, &x); err == nil {
			if m.Extra == nil {
				m.Extra = make(map[string]any)
			}
			m.Extra[k] = x
		}
	}
	return m, nil
}

func isNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }

// parseTime accepts an RFC 3339 string or a number of seconds since the epoch.
func parseTime(v json.RawMessage) (time.Time, error) {
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return time.Time{}, errors.New("want RFC 3339 time")
		}
		return t.UTC(), nil
	}
	var f float64
	if err := json.Unmarshal(v, &f); err != nil {
		return time.Time{}, errors.New("want RFC 3339 string or seconds since the epoch")
	}
	return secondsTime(f)
}

// secondsTime is the time f seconds after the epoch, to the microsecond,
// for f in (0, 1e11].
func secondsTime(f float64) (time.Time, error) {
	if f <= 0 || math.IsInf(f, 0) || math.IsNaN(f) || f > 1e11 {
		return time.Time{}, fmt.Errorf("seconds %v out of range", f)
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(math.Round(frac*1e6))*1e3).UTC(), nil
}

// complete fills what a line left out from fb (its id, its recipient) and
// reads a plan_approval_response that carries a plan and no answer as the
// request it is: both decoders end with it, so they agree.
func (m *Message) complete(fb Fallback) {
	if m.ID == "" {
		m.ID = fb.ID
	}
	if m.To == "" {
		m.To = fb.To
	}
	if m.Type == TypePlanApprovalResponse && m.Approve == nil && m.Plan != "" {
		m.Type = TypePlanApprovalRequest
	}
}
