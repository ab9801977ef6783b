package team

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	"huddle/llm/record"
	"huddle/teamdir"
)

// TranscriptLine is one line of members/<name>.transcript.jsonl as a
// person reads it, on one line: time, kind, the conversation when it is
// not the main one, the turn, the tool and its arguments, then what the
// entry holds. A line that is not an entry is shown as it is, marked.
func TranscriptLine(line []byte) string {
	var e record.Entry
	if err := json.Unmarshal(bytes.TrimSpace(line), &e); err != nil {
		return "(not an entry) " + Printable(string(bytes.TrimSpace(line)))
	}
	var b strings.Builder
	b.WriteString(e.TS.Local().Format("15:04:05"))
	b.WriteString(" " + e.Kind)
	if e.Conv != "" && e.Conv != "main" {
		b.WriteString(" [" + e.Conv + "]")
	}
	if e.Turn > 0 {
		fmt.Fprintf(&b, " #%d", e.Turn)
	}
	if e.Tool != "" {
		b.WriteString(" " + e.Tool)
	}
	if len(e.Args) > 0 {
		var compact bytes.Buffer
		if json.Compact(&compact, e.Args) == nil {
			b.WriteString(" " + compact.String())
		}
	}
	if e.IsError {
		b.WriteString(" ERROR")
	}
	if e.Text != "" {
		sep := ": "
		if e.Kind == "tool_result" {
			sep = " → "
		}
		b.WriteString(sep + e.Text)
	}
	if e.Usage != nil {
		fmt.Fprintf(&b, " (tokens in %d, out %d)", e.Usage.In, e.Usage.Out)
	}
	if e.Duration > 0 {
		fmt.Fprintf(&b, " %dms", e.Duration)
	}
	return Printable(b.String())
}

// PrintableText is s with its control characters shown as '?' and tabs as
// spaces, newlines kept: text from an agent, for a screen that wraps it.
func PrintableText(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n':
			return r
		case r == '\t' || r == '\r':
			return ' '
		case unicode.IsControl(r) || r == unicode.ReplacementChar:
			return '?'
		}
		return r
	}, s)
}

// Printable is s on one line with no control characters: what a model or
// an agent writes must not move a terminal's cursor or change its colours.
func Printable(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || r == '\r' {
			return ' '
		}
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return '?'
		}
		return r
	}, s)
	return strings.Join(strings.Fields(s), " ")
}

// Feed is what a screen tails of a member: an llm member's transcript,
// any other member's log (its stderr), each line made readable.
type Feed struct {
	Path string
	What string // "transcript" or "log"
	Line func([]byte) string
}

// MemberFeed is the feed of the member named name with the runtime kind
// kind.
func MemberFeed(dir, name, kind string) (Feed, error) {
	if kind == "llm" {
		p, err := teamdir.TranscriptPath(dir, name)
		return Feed{Path: p, What: "transcript", Line: TranscriptLine}, err
	}
	p, err := teamdir.MemberLogPath(dir, name)
	return Feed{Path: p, What: "log", Line: func(b []byte) string { return Printable(string(b)) }}, err
}

// Count writes a token count short: 950, 12.3k, 4.1M.
func Count(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprint(n)
	case n < 1_000_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	default:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	}
}

// Clip is s cut to n runes, an ellipsis last when it was cut.
func Clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
