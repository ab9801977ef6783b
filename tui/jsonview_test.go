package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// TestJSONLinesArePrettyColouredAndWrappedAtSpaces: a JSON body is drawn
// indented, its keys, strings and literals each in their ink, a long line
// broken between words (an id is never cut at its hyphen) and indented
// under itself; text that is not JSON stays text.
func TestJSONLinesArePrettyColouredAndWrappedAtSpaces(t *testing.T) {
	st := NewStyles(true, true)
	c := &common{styles: st}
	body := `{"id":"m-01M8SDQ2X7KF","ok":true,"n":-42.5,"note":"the ledger needs the payment reference before it can be closed","nested":{"x":null}}`
	lines := c.jsonLines(body, 40)
	plain := make([]string, len(lines))
	for i, l := range lines {
		plain[i] = ansi.Strip(l)
		if w := ansi.StringWidth(l); w > 40 {
			t.Errorf("line %d is %d wide: %q", i, w, plain[i])
		}
	}
	text := strings.Join(plain, "\n")
	for _, want := range []string{`  {`, `    "id": "m-01M8SDQ2X7KF",`, `    "ok": true,`, `    "n": -42.5,`, `      "x": null`, `  }`} {
		if !strings.Contains(text, want) {
			t.Errorf("pretty JSON lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "m-\n") || !strings.Contains(text, "\n      payment reference") {
		t.Errorf("the long line is not broken between words, indented:\n%s", text)
	}
	joined := strings.Join(lines, "\n")
	for what, want := range map[string]string{"key": st.Info.Render(`"id"`), "string": st.Success.Render(`"m-01M8SDQ2X7KF"`), "literal": st.Warning.Render("true")} {
		if !strings.Contains(joined, want) {
			t.Errorf("the %s is not in its ink (%q):\n%q", what, want, joined)
		}
	}
	if got := c.jsonLines("not json: a plain answer", 40); len(got) != 1 || ansi.Strip(got[0]) != "  not json: a plain answer" {
		t.Errorf("text drawn as %q", got)
	}
}
