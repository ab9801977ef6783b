package claudeteam

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"
)

// Entry is one element of an inbox file's JSON array, as Claude Code writes
// it: the recipient is the file's name, and a protocol message is JSON
// encoded inside Text.
type Entry struct {
	From      string `json:"from"`
	Text      string `json:"text"`
	Timestamp string `json:"timestamp"`
	Read      bool   `json:"read"`
	Color     string `json:"color,omitempty"`
	Summary   string `json:"summary,omitempty"`
}

// timestampLayout is JavaScript's Date.toISOString, what Claude Code stamps.
const timestampLayout = "2006-01-02T15:04:05.000Z"

// Stamp formats t as Claude Code does.
func Stamp(t time.Time) string { return t.UTC().Format(timestampLayout) }

// parseStamp reads a timestamp in any RFC 3339 form; zero when it is not one.
func parseStamp(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// readInbox returns the elements of the inbox at path; a missing file is an
// empty inbox. A file that is not a JSON array (Claude Code rewrites it in
// place, so a read can meet it half written) is an error the caller retries.
func readInbox(path string) ([]json.RawMessage, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(b, &elems); err != nil {
		if len(bytes.TrimSpace(b)) == 0 {
			return nil, errors.New("inbox is empty (being rewritten?)")
		}
		return nil, fmt.Errorf("inbox is not a JSON array (being rewritten?): %w", err)
	}
	return elems, nil
}

// identity is what makes an element the same message across rewrites: every
// field but read, which the recipient flips.
func identity(raw json.RawMessage) (string, Entry) {
	var e Entry
	_ = json.Unmarshal(raw, &e)
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return string(raw), e // not an object: its bytes are its identity
	}
	delete(fields, "read")
	b, _ := json.Marshal(fields) // map keys are sorted: a canonical form
	return string(b), e
}

// newIndexes returns the positions of elements in cur that were not in
// prev: by position first (Claude Code appends, so prev is usually a prefix
// of cur), else by content, counting duplicates, so a message is never
// taken twice or lost when the array is rewritten.
func newIndexes(prev, cur []string) []int {
	prefix := len(prev) <= len(cur)
	for i := 0; prefix && i < len(prev); i++ {
		prefix = prev[i] == cur[i]
	}
	var out []int
	if prefix {
		for i := len(prev); i < len(cur); i++ {
			out = append(out, i)
		}
		return out
	}
	left := map[string]int{}
	for _, k := range prev {
		left[k]++
	}
	for i, k := range cur {
		if left[k] > 0 {
			left[k]--
			continue
		}
		out = append(out, i)
	}
	return out
}
