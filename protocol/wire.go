package protocol

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// The wire form of a Message is written by hand (appendWire) and read in
// one pass (parseLine): encoding/json's reflection, and a decode that went
// through a map of raw values and then one Unmarshal per field, cost more
// than the write(2) of the line and the read that brings it back
// (docs/PERFORMANCE.md). Both give what encoding/json gives, byte for byte
// and field for field; tests compare them with it (wire_test.go), and
// whatever is not plain (a foreign field, a nested invocation or result)
// still goes through encoding/json.

// AppendEncode validates m and appends its full wire form to b, as Encode
// returns it (no trailing newline). A writer that sends many messages
// encodes them into one buffer it keeps.
func AppendEncode(b []byte, m *Message) ([]byte, error) {
	if err := m.Validate(); err != nil {
		return b, err
	}
	out, err := m.appendWire(b)
	if err != nil {
		return b, encodeError(m, err)
	}
	return out, nil
}

// appendWire appends the wire form of m to b: what Marshal of its
// wireMessage writes, keys in the same order, strings escaped the same way
// (HTML characters kept as they are). With foreign fields (Extra) it
// merges them through encoding/json, as before.
func (m *Message) appendWire(b []byte) ([]byte, error) {
	if len(m.Extra) > 0 {
		w, err := m.marshalWithExtra()
		if err != nil {
			return b, err
		}
		return append(b, w...), nil
	}
	b = append(b, `{"id":`...)
	b = appendString(b, m.ID)
	b = append(b, `,"type":`...)
	b = appendString(b, string(m.Type))
	b = append(b, `,"from":`...)
	b = appendString(b, m.From)
	b = append(b, `,"to":`...)
	b = appendString(b, m.To)
	b = append(b, `,"ts":"`...)
	if !m.TS.IsZero() {
		// FormatTime's digits need no escaping.
		b = appendTime(b, m.TS)
	}
	b = append(b, '"')
	b = appendField(b, `,"content":`, m.Content)
	b = appendField(b, `,"request_id":`, m.RequestID)
	b = appendField(b, `,"reason":`, m.Reason)
	if m.Approve != nil {
		if *m.Approve {
			b = append(b, `,"approve":true`...)
		} else {
			b = append(b, `,"approve":false`...)
		}
	}
	b = appendField(b, `,"feedback":`, m.Feedback)
	b = appendField(b, `,"plan":`, m.Plan)
	var err error
	if m.Invocation != nil {
		if b, err = appendMarshal(append(b, `,"invocation":`...), m.Invocation); err != nil {
			return b, err
		}
	}
	if m.Result != nil {
		if b, err = appendMarshal(append(b, `,"result":`...), m.Result); err != nil {
			return b, err
		}
	}
	b = appendField(b, `,"status":`, string(m.Status))
	return append(b, '}'), nil
}

// appendTime appends t as FormatTime writes it (TimeLayout, UTC, whole
// microseconds), digit by digit for the years 0000-9999 (those Validate
// accepts), through time's own formatting otherwise.
func appendTime(b []byte, t time.Time) []byte {
	t = t.UTC().Truncate(time.Microsecond)
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(b, TimeLayout)
	}
	hour, minute, sec := t.Clock()
	b = appendDigits(b, year, 4)
	b = appendDigits(append(b, '-'), int(month), 2)
	b = appendDigits(append(b, '-'), day, 2)
	b = appendDigits(append(b, 'T'), hour, 2)
	b = appendDigits(append(b, ':'), minute, 2)
	b = appendDigits(append(b, ':'), sec, 2)
	b = appendDigits(append(b, '.'), t.Nanosecond()/1000, 6)
	return append(b, 'Z')
}

// appendDigits appends n, 0 <= n < 10^width, zero-padded to width digits.
func appendDigits(b []byte, n, width int) []byte {
	var d [6]byte
	for i := width - 1; i >= 0; i-- {
		d[i] = byte('0' + n%10)
		n /= 10
	}
	return append(b, d[:width]...)
}

// appendField appends key and s, a field tagged omitempty: nothing when s
// is empty.
func appendField(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendString(append(b, key...), s)
}

// appendMarshal appends v as Marshal writes it.
func appendMarshal(b []byte, v any) ([]byte, error) {
	w, err := Marshal(v)
	if err != nil {
		return b, err
	}
	return append(b, w...), nil
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string the way encoding/json writes it
// with HTML escaping off: ", \ and control characters escaped (\n, \r, \t,
// \b, \f by name, the rest as \u00XX), invalid UTF-8 as \ufffd, U+2028 and
// U+2029 as \u2028 and \u2029 (JavaScript reads them as line ends);
// everything else, <, > and & included, as it is.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// fieldBit numbers the fields parseLine knows, to catch one given twice;
// 0 for any other.
func fieldBit(key []byte) uint16 {
	switch string(key) {
	case "id":
		return 1 << 0
	case "type":
		return 1 << 1
	case "from":
		return 1 << 2
	case "to":
		return 1 << 3
	case "content":
		return 1 << 4
	case "request_id":
		return 1 << 5
	case "reason":
		return 1 << 6
	case "feedback":
		return 1 << 7
	case "plan":
		return 1 << 8
	case "status":
		return 1 << 9
	case "approve":
		return 1 << 10
	case "invocation":
		return 1 << 11
	case "result":
		return 1 << 12
	case "ts":
		return 1 << 13
	case "timestamp":
		return 1 << 14
	}
	return 0
}

// maxFastDepth is the deepest nesting parseLine follows; deeper lines go
// to parseSlow, which applies encoding/json's own limit to the whole line.
const maxFastDepth = 512

// parseLine reads one line (trimmed, starting with '{') in one pass over
// its bytes: the common case of parse, with the result parseSlow gives.
// It does not judge: ok is false for anything it does not take on itself
// (invalid JSON, a field of the wrong kind, a key written with escapes or
// given twice, a string with invalid UTF-8, a time that does not parse,
// deep nesting), and parse then runs parseSlow, whose answer (the message
// or the error) stands. Nested values (invocation, result, foreign fields)
// are found here and unmarshalled by encoding/json.
func parseLine(line []byte, fb Fallback) (Message, bool) {
	var l lineFields
	p := scanner{b: line, fb: fb, i: 1}
	p.ws()
	if p.peek() == '}' {
		p.i++
	} else if !p.fields(&l) {
		return Message{}, false
	}
	p.ws()
	if p.i != len(p.b) {
		return Message{}, false
	}
	m := l.m
	m.Type, m.Status = MessageType(l.typ), MemberStatus(l.status)
	switch {
	case l.ts != "":
		t, ok := fastTime(l.ts)
		if !ok {
			return Message{}, false
		}
		m.TS = t
	case l.timestamp != "":
		t, ok := fastTime(l.timestamp)
		if !ok {
			return Message{}, false
		}
		m.TS = t
	}
	m.complete(fb)
	return m, true
}

// lineFields is what parseLine gathers before it finishes the message.
type lineFields struct {
	m             Message
	typ, status   string
	ts, timestamp string // raw values; "" when absent or null
	seen          uint16 // fieldBit of each known field met
}

// fields reads the members of the line's object up to its closing brace.
func (p *scanner) fields(l *lineFields) bool {
	for {
		key, ok := p.key()
		if !ok {
			return false
		}
		bit := fieldBit(key)
		if l.seen&bit != 0 {
			return false
		}
		l.seen |= bit
		if !p.field(key, l) {
			return false
		}
		p.ws()
		switch p.next() {
		case ',':
			p.ws()
		case '}':
			return true
		default:
			return false
		}
	}
}

// field reads the value of key into l. A null leaves the field unset, as
// parseSlow does; ts or timestamp given as null counts as absent.
func (p *scanner) field(key []byte, l *lineFields) bool {
	m := &l.m
	var dst *string
	switch string(key) {
	case "id":
		dst = &m.ID
	case "type":
		return p.known(&l.typ, typeNames)
	case "from":
		return p.known(&m.From, []string{p.fb.To})
	case "to":
		return p.known(&m.To, []string{p.fb.To})
	case "content":
		dst = &m.Content
	case "request_id":
		dst = &m.RequestID
	case "reason":
		dst = &m.Reason
	case "feedback":
		dst = &m.Feedback
	case "plan":
		dst = &m.Plan
	case "status":
		return p.known(&l.status, statusNames)
	case "approve":
		return p.approve(m)
	case "ts":
		return p.rawTime(&l.ts)
	case "timestamp":
		return p.rawTime(&l.timestamp)
	case "invocation":
		return p.nested(func() any { m.Invocation = new(InvocationRequest); return m.Invocation })
	case "result":
		return p.nested(func() any { m.Result = new(InvocationResult); return m.Result })
	default:
		return p.extra(key, m)
	}
	if p.literal("null") {
		return true
	}
	s, ok := p.str()
	*dst = s
	return ok
}

// typeNames and statusNames are the strings a line's type and status
// usually hold, so that reading one allocates nothing.
var typeNames, statusNames = func() (t, s []string) {
	for _, x := range MessageTypes {
		t = append(t, string(x))
	}
	for _, x := range MemberStatuses {
		s = append(s, string(x))
	}
	return t, s
}()

// known reads a string field into dst; when it is one of names (written
// without escapes) dst takes that string instead of a copy. Each field
// otherwise gets its own copy, never a slice of a string holding the whole
// line: whoever keeps an id (the dedupe set keeps 1,024) would keep the
// whole line with it.
func (p *scanner) known(dst *string, names []string) bool {
	if p.literal("null") {
		return true
	}
	if p.peek() == '"' {
		if end := bytes.IndexByte(p.b[p.i+1:], '"'); end >= 0 && plainASCII(p.b[p.i+1:p.i+1+end]) {
			raw := p.b[p.i+1 : p.i+1+end]
			for _, n := range names {
				if n != "" && string(raw) == n {
					*dst = n
					p.i += end + 2
					return true
				}
			}
		}
	}
	s, ok := p.str()
	*dst = s
	return ok
}

// plainASCII reports whether raw is printable ASCII without a backslash:
// a JSON string's content that reads as it is written.
func plainASCII(raw []byte) bool {
	for _, c := range raw {
		if c < 0x20 || c >= utf8.RuneSelf || c == '\\' {
			return false
		}
	}
	return true
}

func (p *scanner) approve(m *Message) bool {
	switch {
	case p.literal("null"):
	case p.literal("true"):
		m.Approve = Bool(true)
	case p.literal("false"):
		m.Approve = Bool(false)
	default:
		return false
	}
	return true
}

// rawTime keeps the raw value of ts or timestamp for fastTime in dst.
func (p *scanner) rawTime(dst *string) bool {
	start, end, ok := p.value(0)
	if ok && string(p.b[start:end]) != "null" {
		*dst = string(p.b[start:end])
	}
	return ok
}

// nested unmarshals an object into what alloc returns (nothing for null).
func (p *scanner) nested(alloc func() any) bool {
	if p.literal("null") {
		return true
	}
	if p.peek() != '{' {
		return false
	}
	start, end, ok := p.value(0)
	return ok && json.Unmarshal(p.b[start:end], alloc()) == nil
}

// extra keeps a field this version does not know.
func (p *scanner) extra(key []byte, m *Message) bool {
	start, end, ok := p.value(0)
	if !ok {
		return false
	}
	if _, dup := m.Extra[string(key)]; dup {
		return false
	}
	var x any
	if json.Unmarshal(p.b[start:end], &x) != nil {
		return false
	}
	if m.Extra == nil {
		m.Extra = make(map[string]any)
	}
	m.Extra[string(key)] = x
	return true
}

// fastTime reads a time as parseTime does, when it is a string without
// escapes or a number; ok is false otherwise, and for anything parseTime
// would refuse.
func fastTime(v string) (time.Time, bool) {
	switch c := v[0]; {
	case c == '"':
		s := v[1 : len(v)-1]
		if strings.IndexByte(s, '\\') >= 0 {
			return time.Time{}, false
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return time.Time{}, false
		}
		return t.UTC(), true
	case c == '-' || '0' <= c && c <= '9':
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return time.Time{}, false
		}
		t, err := secondsTime(f)
		return t, err == nil
	}
	return time.Time{}, false
}

// scanner walks a line's bytes; fb is the line's Fallback.
type scanner struct {
	b  []byte
	fb Fallback
	i  int
}

func (p *scanner) peek() byte {
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

func (p *scanner) next() byte {
	c := p.peek()
	p.i++
	return c
}

// ws skips JSON whitespace.
func (p *scanner) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// literal consumes lit (true, false, null) when it comes next as a whole
// token.
func (p *scanner) literal(lit string) bool {
	j := p.i + len(lit)
	if j > len(p.b) || string(p.b[p.i:j]) != lit {
		return false
	}
	if j < len(p.b) && !delimiter(p.b[j]) {
		return false
	}
	p.i = j
	return true
}

// delimiter reports whether c may follow a scalar value.
func delimiter(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', ',', '}', ']':
		return true
	}
	return false
}

// key reads an object key and the colon after it: plain ASCII without
// escapes only.
func (p *scanner) key() ([]byte, bool) {
	if p.next() != '"' {
		return nil, false
	}
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			key := p.b[start:p.i]
			p.i++
			p.ws()
			if p.next() != ':' {
				return nil, false
			}
			p.ws()
			return key, true
		case c < 0x20 || c == '\\' || c >= utf8.RuneSelf:
			return nil, false
		}
		p.i++
	}
	return nil, false
}

// str reads a JSON string as encoding/json does; ok is false for invalid
// UTF-8 (encoding/json replaces it; parseSlow does that) and for what is
// not a valid string.
func (p *scanner) str() (string, bool) {
	start, end, escaped, ok := p.stringBounds()
	if !ok {
		return "", false
	}
	if !escaped {
		return string(p.b[start:end]), true
	}
	return unescape(p.b[start:end])
}

// Byte classes inside a JSON string, for stringBounds: most bytes are
// plain and cost one table load.
const (
	strPlain = iota
	strQuote
	strBackslash
	strControl
	strHigh
)

var strClass = func() (t [256]byte) {
	for c := range 256 {
		switch {
		case c == '"':
			t[c] = strQuote
		case c == '\\':
			t[c] = strBackslash
		case c < 0x20:
			t[c] = strControl
		case c >= utf8.RuneSelf:
			t[c] = strHigh
		}
	}
	return t
}()

// stringBounds skips a string and returns its raw content's bounds;
// control characters and, outside escapes, invalid UTF-8 are refused.
func (p *scanner) stringBounds() (start, end int, escaped, ok bool) {
	if p.next() != '"' {
		return 0, 0, false, false
	}
	start = p.i
	ascii := true
	for p.i < len(p.b) {
		switch strClass[p.b[p.i]] {
		case strPlain:
			p.i++
		case strQuote:
			end = p.i
			p.i++
			if !ascii && !utf8.Valid(p.b[start:end]) {
				return 0, 0, false, false
			}
			return start, end, escaped, true
		case strBackslash:
			escaped = true
			p.i += 2
		case strControl:
			return 0, 0, false, false
		default:
			ascii = false
			p.i++
		}
	}
	return 0, 0, false, false
}

// unescape decodes a string's escapes as encoding/json does: a \u
// surrogate that is not half of a valid pair becomes U+FFFD.
func unescape(raw []byte) (string, bool) {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		if i+1 == len(raw) {
			return "", false
		}
		i += 2
		switch e := raw[i-1]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(raw[i:])
			if !ok {
				return "", false
			}
			i += 4
			if utf16.IsSurrogate(r) {
				if i+1 < len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					if r2, ok := hex4(raw[i+2:]); ok {
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							out = utf8.AppendRune(out, dec)
							i += 6
							continue
						}
					}
				}
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
		default:
			return "", false
		}
	}
	return string(out), true
}

// hex4 reads the four hex digits of a \u escape.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// value skips one value of any kind and returns where it lies. It finds
// the end of a valid value but does not prove a value valid: a nested
// value is then read by encoding/json, which refuses what is not.
func (p *scanner) value(depth int) (start, end int, ok bool) {
	start = p.i
	switch c := p.peek(); {
	case c == '"':
		_, _, _, ok = p.stringBounds()
	case c == '{' || c == '[':
		ok = depth < maxFastDepth && p.skipContainer(depth)
	case c == 't':
		ok = p.literal("true")
	case c == 'f':
		ok = p.literal("false")
	case c == 'n':
		ok = p.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		ok = p.number()
	}
	return start, p.i, ok
}

// skipContainer skips an object or an array.
func (p *scanner) skipContainer(depth int) bool {
	closing := byte('}')
	if p.next() == '[' {
		closing = ']'
	}
	p.ws()
	if p.peek() == closing {
		p.i++
		return true
	}
	for {
		if closing == '}' {
			if _, ok := p.key(); !ok {
				return false
			}
		}
		if _, _, ok := p.value(depth + 1); !ok {
			return false
		}
		p.ws()
		switch p.next() {
		case ',':
			p.ws()
		case closing:
			return true
		default:
			return false
		}
	}
}

// number skips a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *scanner) number() bool {
	if p.peek() == '-' {
		p.i++
	}
	switch c := p.peek(); {
	case c == '0':
		p.i++
	case '1' <= c && c <= '9':
		p.digits()
	default:
		return false
	}
	if p.peek() == '.' {
		p.i++
		if !p.digits() {
			return false
		}
	}
	if c := p.peek(); c == 'e' || c == 'E' {
		p.i++
		if c := p.peek(); c == '+' || c == '-' {
			p.i++
		}
		if !p.digits() {
			return false
		}
	}
	return p.i == len(p.b) || delimiter(p.b[p.i])
}

// digits skips one digit or more.
func (p *scanner) digits() bool {
	start := p.i
	for p.i < len(p.b) && '0' <= p.b[p.i] && p.b[p.i] <= '9' {
		p.i++
	}
	return p.i > start
}
