package protocol

import (
	"regexp"
	"strings"
	"testing"
)

// The patterns isName and isID check byte by byte, as docs/ARCHITECTURE.md, "Messages"
// writes them.
var (
	namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)
	idPattern   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
)

// TestNameAndIDChecksMatchTheirPatterns compares the byte checks with the
// regexps on every string of one and two bytes, and on the boundary
// lengths around the limits.
func TestNameAndIDChecksMatchTheirPatterns(t *testing.T) {
	var cases []string
	for a := range 256 {
		cases = append(cases, string([]byte{byte(a)}))
		for b := range 256 {
			cases = append(cases, string([]byte{byte(a), byte(b)}))
		}
	}
	for _, n := range []int{61, 62, 63, 64, 65} {
		cases = append(cases, "a"+strings.Repeat("b", n-1), "A"+strings.Repeat("b", n-1),
			"a"+strings.Repeat("B", n-1), "a"+strings.Repeat("b", n-2)+"\n", "a"+strings.Repeat("-", n-1))
	}
	cases = append(cases, "", "niño", "m-01JDX3ABCDEFGHJKMNPQRSTVWX", "a\nb", "a\n")
	for _, s := range cases {
		checkPatterns(t, s)
	}
}

// FuzzNameAndIDChecks compares the byte checks with the regexps on
// arbitrary strings.
func FuzzNameAndIDChecks(f *testing.F) {
	for _, s := range []string{"alice", "Alice", "m-01JDX3", "a.b_c-d", "", "é", "a\n", strings.Repeat("x", 64)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkPatterns(t, s) })
}

func checkPatterns(t *testing.T, s string) {
	t.Helper()
	if got, want := isName(s), namePattern.MatchString(s); got != want {
		t.Fatalf("isName(%q) = %v, the pattern says %v", s, got, want)
	}
	if got, want := isID(s), idPattern.MatchString(s); got != want {
		t.Fatalf("isID(%q) = %v, the pattern says %v", s, got, want)
	}
}
