package tui

import (
	"slices"
	"testing"

	tea "charm.land/bubbletea/v2"
)

func TestListCursorMovesAndStopsAtTheEnds(t *testing.T) {
	var l list[int]
	l.move(1)
	if _, ok := l.selected(); ok || l.cursor != 0 {
		t.Fatalf("an empty list: cursor %d, selected %v", l.cursor, ok)
	}
	l.setRows([]int{10, 20, 30})
	l.scroll = 7
	l.move(1)
	if row, _ := l.selected(); row != 20 || l.scroll != 0 {
		t.Fatalf("after one down: row %d, scroll %d (a move puts the details at their top)", row, l.scroll)
	}
	l.move(5)
	if row, _ := l.selected(); row != 30 {
		t.Fatalf("past the end: row %d, want the last", row)
	}
	l.move(-9)
	if row, _ := l.selected(); row != 10 {
		t.Fatalf("past the top: row %d, want the first", row)
	}
	l.move(2)
	l.home()
	if l.cursor != 0 {
		t.Fatalf("home: cursor %d", l.cursor)
	}
	l.toEnd()
	if l.cursor != 2 {
		t.Fatalf("toEnd: cursor %d", l.cursor)
	}
	l.setRows([]int{10})
	l.clampCursor()
	if row, ok := l.selected(); !ok || row != 10 {
		t.Fatalf("after the rows shrank: row %d, selected %v", row, ok)
	}
}

func TestListFilterMatchesAnyFieldIgnoringCase(t *testing.T) {
	var l list[int]
	if !l.matches("anything") || !l.matches() {
		t.Fatal("without a filter every row matches")
	}
	l.filter = "DaTa"
	if !l.matches("finanzas", "the data member") {
		t.Fatal("the filter misses a field that holds it in another case")
	}
	if l.matches("finanzas", "reservas") {
		t.Fatal("the filter matches fields without it")
	}
	fields := [][]string{{"reservas", "lead"}, {"finanzas", "data"}, {"data", "lead"}}
	var rows []int
	for i, f := range fields {
		if l.matches(f...) {
			rows = append(rows, i)
		}
	}
	if !slices.Equal(rows, []int{1, 2}) {
		t.Fatalf("filtered rows %v, want [1 2]", rows)
	}
}

func TestListKeepsTheSelectionByIDAcrossARefresh(t *testing.T) {
	l := list[string]{idOf: func(s string) string { return s }}
	always := func(string) bool { return true }
	l.setRows([]string{"a", "b", "c"})
	l.move(1)
	if l.id != "b" {
		t.Fatalf("a move remembers the id: %q", l.id)
	}
	// A new row arrives above: the cursor follows b.
	l.setRows([]string{"x", "a", "b", "c"})
	if moved := l.reselect(always); moved || l.cursor != 2 || l.id != "b" {
		t.Fatalf("after a row above: cursor %d id %q moved %v, want b kept", l.cursor, l.id, moved)
	}
	// keep refuses b: the cursor stays at its place, on another row.
	l.setRows([]string{"x", "a", "c", "b"})
	if moved := l.reselect(func(s string) bool { return s != "b" }); !moved || l.cursor != 2 || l.id != "c" {
		t.Fatalf("refused b: cursor %d id %q moved %v, want c at the same place", l.cursor, l.id, moved)
	}
	// b is gone and the list shrank: the cursor is clamped to the last row.
	l.setRows([]string{"x"})
	if moved := l.reselect(always); !moved || l.cursor != 0 || l.id != "x" {
		t.Fatalf("after the rows shrank: cursor %d id %q moved %v", l.cursor, l.id, moved)
	}
	// No rows: no id, and nothing landed.
	l.setRows(nil)
	if moved := l.reselect(always); moved || l.id != "" {
		t.Fatalf("an empty list: id %q moved %v", l.id, moved)
	}
}

func TestDetailsScrollClamps(t *testing.T) {
	var d details
	d.scrollBy(-5)
	if d.scroll != 0 {
		t.Fatalf("scrolled above the top: %d", d.scroll)
	}
	lines := []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}
	for range 3 {
		d.scrollBy(5)
	}
	if got := d.view(lines, 4); !slices.Equal(got, lines[6:]) {
		t.Fatalf("scrolled past the bottom shows %v, want the last 4 lines", got)
	}
	if got := d.view(lines, 20); !slices.Equal(got, lines) {
		t.Fatalf("taller than the details shows %v, want them all", got)
	}
	d.scrollBy(-10)
	if got := d.view(lines, 4); !slices.Equal(got, lines[5:9]) {
		t.Fatalf("after scrolling back 10 of 15: %v", got)
	}
	d.toggle()
	if !d.open || d.scroll != 0 {
		t.Fatalf("open: %+v, want open at the top", d)
	}
	d.scrollBy(3)
	d.close()
	if d.open || d.scroll != 3 {
		t.Fatalf("close keeps the scroll: %+v", d)
	}
	d.reset()
	if d.open || d.scroll != 0 {
		t.Fatalf("reset: %+v", d)
	}
}

// The details on screen are the right column's: pgup and pgdn scroll them
// and a moved cursor puts them back at their top; from the roster they are
// its member's card, whose feed they scroll.
func TestDetailsKeysReachTheRightColumnFromTheRoster(t *testing.T) {
	m, _ := newTestModel(t, 80, 24)
	m.Update(SnapshotMsg(busySnapshot(t)))
	pgup, pgdn := tea.KeyPressMsg{Code: tea.KeyPgUp}, tea.KeyPressMsg{Code: tea.KeyPgDown}
	send(m, "enter")
	m.Update(pgdn)
	if m.requests.list.scroll != 5 {
		t.Fatalf("pgdn on the requests: their details scroll %d, want 5", m.requests.list.scroll)
	}
	send(m, "j")
	if m.requests.list.scroll != 0 {
		t.Fatalf("a move left the details scrolled at %d", m.requests.list.scroll)
	}
	send(m, "enter")
	m.Update(pgdn)
	send(m, "1")
	if d := m.requests.list.details; d.open || d.scroll != 0 {
		t.Fatalf("moving the focus kept the details %+v", d)
	}
	m.Update(pgup)
	if !m.member.open || m.member.up != 5 {
		t.Fatalf("pgup on the roster: the card open %v, its feed scrolled up %d, want 5", m.member.open, m.member.up)
	}
	send(m, "j")
	if m.member.up != 0 {
		t.Fatalf("a roster move left the next member's feed scrolled up %d", m.member.up)
	}
}
