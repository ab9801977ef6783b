package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"huddle/protocol"
)

// TestRosterShowsTokensAndCost: an llm member's tokens and cost are on its
// roster line, and the team's totals in the header.
func TestRosterShowsTokensAndCost(t *testing.T) {
	m, _ := newTestModel(t, 140, 40)
	snap := busySnapshot(t)
	snap.Members[1].Record.Counters = protocol.Counters{TokensIn: 12_300, TokensOut: 4_100, CostUSD: 0.098}
	snap.Members[2].Record.Counters = protocol.Counters{TokensIn: 700, TokensOut: 900}
	m.Update(SnapshotMsg(snap))
	screen := ansi.Strip(m.View().Content)
	lines := strings.Split(screen, "\n")
	if !strings.Contains(lines[0], "↑13.0k ↓5.0k $0.10") {
		t.Errorf("header %q lacks the team's tokens", lines[0])
	}
	var finanzas, data string
	for _, l := range lines {
		switch {
		case strings.Contains(l, "finanzas") && finanzas == "":
			finanzas = l
		case strings.Contains(l, " data") && data == "":
			data = l
		}
	}
	if !strings.Contains(finanzas, "↑12.3k ↓4.1k $0.10 ✉2") {
		t.Errorf("finanzas's line %q lacks its tokens, cost and mail", finanzas)
	}
	if !strings.Contains(data, "↑700 ↓900") || strings.Contains(data, "$") {
		t.Errorf("data's line %q: want tokens and no cost", data)
	}
}
