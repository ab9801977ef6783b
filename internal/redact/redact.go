// Package redact takes the secrets huddle knows (API keys, a store URL's
// token, NATS credentials) out of text before it is written or sent: in
// their raw form, URL-escaped, and base64-encoded at any offset, in the
// standard or the URL alphabet, across the line breaks base64 wraps at.
package redact

import (
	"encoding/base64"
	"net/url"
	"slices"
	"strings"
)

// Mark is what a secret is replaced with.
const Mark = "[redacted]"

// minSecret is the shortest secret scrubbed, and minEncoded the shortest
// whose base64 forms are: shorter, they would match ordinary text.
const (
	minSecret  = 4
	minEncoded = 6
)

// Set is a set of secrets and every form of them it scrubs. The zero Set
// and a nil *Set scrub nothing. A Set is not changed after New: it is safe
// for concurrent use.
type Set struct {
	forms   []string // longest first
	encoded []string // the base64 forms, searched across line breaks too
	shortB4 int      // the length of the shortest encoded form
}

// New is the set of secrets, empty ones and those too short to scrub
// without harming ordinary text left out.
func New(secrets ...string) *Set {
	s := &Set{}
	seen := map[string]bool{}
	add := func(list *[]string, f string) {
		if f != "" && !seen[f] {
			seen[f] = true
			*list = append(*list, f)
		}
	}
	for _, sec := range secrets {
		if len(sec) < minSecret {
			continue
		}
		add(&s.forms, sec)
		add(&s.forms, url.QueryEscape(sec))
		add(&s.forms, url.PathEscape(sec))
		if len(sec) < minEncoded {
			continue
		}
		for _, f := range encodings(sec) {
			add(&s.encoded, f)
		}
	}
	s.forms = append(s.forms, s.encoded...)
	byLength := func(a, b string) int { return len(b) - len(a) }
	slices.SortFunc(s.forms, byLength)
	slices.SortFunc(s.encoded, byLength)
	for _, f := range s.encoded {
		if s.shortB4 == 0 || len(f) < s.shortB4 {
			s.shortB4 = len(f)
		}
	}
	return s
}

// encodings are the base64 characters of sec that do not depend on what
// comes before or after it in the encoded bytes: for each of the three
// offsets sec may start at within a 3-byte group, in both alphabets.
func encodings(sec string) []string {
	var out []string
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		for k := range 3 {
			e := enc.EncodeToString(append(make([]byte, k), sec...))
			from := (8*k + 5) / 6        // the first character of sec's bits only
			to := 8 * (k + len(sec)) / 6 // past the last
			out = append(out, e[from:to])
		}
	}
	return out
}

// Empty reports whether s scrubs nothing.
func (s *Set) Empty() bool { return s == nil || len(s.forms) == 0 }

// String is text with every form of every secret replaced by Mark.
func (s *Set) String(text string) string {
	if s.Empty() {
		return text
	}
	for _, f := range s.forms {
		if strings.Contains(text, f) {
			text = strings.ReplaceAll(text, f, Mark)
		}
	}
	if len(s.encoded) > 0 && strings.ContainsAny(text, "\r\n") {
		text = s.wrapped(text)
	}
	return text
}

// Bytes is String for a byte slice.
func (s *Set) Bytes(b []byte) []byte {
	if s.Empty() {
		return b
	}
	return []byte(s.String(string(b)))
}

// Holds reports whether text holds a form of a secret.
func (s *Set) Holds(text string) bool { return s.String(text) != text }

// wrapped replaces the base64 forms that a line break cuts (base64 wraps
// at 76 columns): each run of base64 characters and line breaks is
// searched with its breaks taken out.
func (s *Set) wrapped(text string) string {
	var b strings.Builder
	last := 0 // text[:last] is in b
	for i := 0; i < len(text); {
		if !isB64(text[i]) {
			i++
			continue
		}
		j, breaks := i, false
		for j < len(text) && (isB64(text[j]) || text[j] == '\n' || text[j] == '\r') {
			breaks = breaks || text[j] == '\n' || text[j] == '\r'
			j++
		}
		if breaks && j-i >= s.shortB4 {
			if run, ok := s.scrubRun(text[i:j]); ok {
				b.WriteString(text[last:i])
				b.WriteString(run)
				last = j
			}
		}
		i = j
	}
	if last == 0 {
		return text
	}
	b.WriteString(text[last:])
	return b.String()
}

// scrubRun replaces the encoded forms in run, a stretch of base64
// characters and line breaks, searched without its breaks; each match
// becomes Mark where it began, its characters and breaks dropped.
func (s *Set) scrubRun(run string) (string, bool) {
	joined := make([]byte, 0, len(run))
	at := make([]int, 0, len(run)) // joined[k] is run[at[k]]
	for i := 0; i < len(run); i++ {
		if run[i] != '\n' && run[i] != '\r' {
			joined = append(joined, run[i])
			at = append(at, i)
		}
	}
	hit := make([]bool, len(run)) // the characters a match covers
	start := make([]bool, len(run))
	found := false
	for _, f := range s.encoded {
		for from := 0; ; {
			k := strings.Index(string(joined[from:]), f)
			if k < 0 {
				break
			}
			k += from
			first, end := at[k], at[k+len(f)-1]
			start[first] = true
			for p := first; p <= end; p++ {
				hit[p] = true
			}
			found = true
			from = k + len(f)
		}
	}
	if !found {
		return run, false
	}
	var b strings.Builder
	for p := 0; p < len(run); p++ {
		switch {
		case start[p]:
			b.WriteString(Mark)
		case !hit[p]:
			b.WriteByte(run[p])
		}
	}
	return b.String(), true
}

func isB64(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '-' || c == '_' || c == '='
}
