package team

import (
	"strings"
	"testing"
)

// TestTranscriptLineIsOneSafeLine: an entry reads as one line with its
// tool, arguments and text, and nothing in it reaches the terminal as a
// control sequence.
func TestTranscriptLineIsOneSafeLine(t *testing.T) {
	line := `{"ts":"2026-11-30T09:13:00Z","kind":"tool_call","conv":"inv-1","turn":3,"tool":"bash","args":{"command":"ls"},"text":"a\nb \u001b[31mred\u001b[0m"}` + "\n"
	got := TranscriptLine([]byte(line))
	for _, want := range []string{"tool_call", "[inv-1]", "#3", "bash", `{"command":"ls"}`, "a b ?[31mred?[0m"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	if strings.ContainsAny(got, "\n\x1b") {
		t.Errorf("%q holds a newline or an escape", got)
	}
	if got := TranscriptLine([]byte("not json\x07\n")); got != "(not an entry) not json?" {
		t.Errorf("a line that is not an entry: %q", got)
	}
}
