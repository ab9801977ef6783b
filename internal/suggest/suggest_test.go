package suggest

import "testing"

func TestNearest(t *testing.T) {
	known := []string{"status", "start", "approve", "attach", "approval_deadline", "members", "name"}
	for _, c := range []struct{ word, want string }{
		{"statsu", "status"}, // a swap
		{"stauts", "status"}, // a swap
		{"approval_dedline", "approval_deadline"},
		{"aprove", "approve"},
		{"memebrs", "members"},
		{"Status", "status"}, // case alone
		{"naem", "name"},
		{"status", ""}, // known: nothing to suggest
		{"frobnicate", ""},
		{"x", ""},
		{"", ""},
	} {
		if got := Nearest(c.word, known); got != c.want {
			t.Errorf("Nearest(%q) = %q, want %q", c.word, got, c.want)
		}
	}
}

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"", "ab", 2}, {"abc", "abc", 0},
		{"abc", "acb", 1}, {"kitten", "sitting", 3}, {"ñandú", "nandu", 2},
	} {
		if got := distance(c.a, c.b); got != c.want {
			t.Errorf("distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
