package tui

import (
	"testing"

	"github.com/charmbracelet/x/ansi"
)

func TestMarkedUnderlinesMatchesOnly(t *testing.T) {
	red := "\x1b[31m"
	for _, c := range []struct{ line, f, want string }{
		{"Audit November's ledger", "ledger", "Audit November's " + markOn + "ledger" + markOff},
		{"LEDGER and ledger", "Ledger", markOn + "LEDGER" + markOff + " and " + markOn + "ledger" + markOff},
		{red + "led" + "\x1b[0m" + "ger x", "ledger", red + markOn + "led\x1b[0m" + markOn + "ger" + markOff + " x"},
		{"no match here", "ledger", "no match here"},
		{"año año", "ño", "a" + markOn + "ño" + markOff + " a" + markOn + "ño" + markOff},
		{"\x1b]8;;http://x\aledger\x1b]8;;\a", "ledger", "\x1b]8;;http://x\a" + markOn + "ledger" + markOff + "\x1b]8;;\a"},
		{"anything", "", "anything"},
	} {
		got := marked(c.line, c.f)
		if got != c.want {
			t.Errorf("marked(%q, %q) = %q, want %q", c.line, c.f, got, c.want)
		}
		if ansi.Strip(got) != ansi.Strip(c.line) {
			t.Errorf("marked(%q) changed the text: %q", c.line, ansi.Strip(got))
		}
	}
}
