package tui

import (
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// list is what every pane keeps about its rows: the rows its filter lets
// through, the cursor, the id of the selected row (for a pane that keeps its
// selection by id), and the details of the row under the cursor.
type list[T any] struct {
	rows []T
	// src, when set, stands for rows: a pane whose rows are too many to
	// list again on every snapshot (the traces) reads them where they are.
	src    rowSource[T]
	cursor int
	filter string
	// id is the selected row's id when idOf is set; it survives a refresh
	// that moves the row.
	id   string
	idOf func(T) string
	// pinned is set while the person has chosen a row other than the
	// first: a newest-first list then keeps that row, else the newest
	// (followNewestFirst).
	pinned bool
	details
}

// details is how the details of the row under a list's cursor are shown.
type details struct {
	open   bool // the details fill the pane
	scroll int  // lines scrolled past: never negative, clamped when drawn
}

// rowSource is where a list reads its rows when it does not hold them: how
// many there are, the row at an index, and the index of the row with an id
// (in about the time of a lookup, not of a walk through every row).
type rowSource[T any] interface {
	count() int
	at(i int) T
	locate(id string) (int, bool)
}

// len is the number of rows.
func (l *list[T]) len() int {
	if l.src != nil {
		return l.src.count()
	}
	return len(l.rows)
}

// at is row i.
func (l *list[T]) at(i int) T {
	if l.src != nil {
		return l.src.at(i)
	}
	return l.rows[i]
}

// matches reports whether any field contains the list's filter
// (case-insensitive); with no filter everything matches.
func (l *list[T]) matches(fields ...string) bool { return match(l.filter, fields...) }

// setRows replaces the rows; the cursor and the id stay as they are.
func (l *list[T]) setRows(rows []T) { l.rows = rows }

// selected is the row under the cursor, if there is one.
func (l *list[T]) selected() (T, bool) {
	if l.cursor < 0 || l.cursor >= l.len() {
		var zero T
		return zero, false
	}
	return l.at(l.cursor), true
}

// move moves the cursor by d rows, stopping at the ends; the details go
// back to their top.
func (l *list[T]) move(d int) {
	l.scroll = 0
	l.cursor = clamp(l.cursor+d, 0, l.len()-1)
	l.pinned = l.cursor > 0
	l.remember()
}

// home puts the cursor on the first row.
func (l *list[T]) home() {
	l.cursor = 0
	l.pinned = false
	l.remember()
}

// followNewestFirst keeps a newest-first list's selection after its rows
// changed: the row the person chose while it is there, else the newest.
func (l *list[T]) followNewestFirst() {
	if !l.pinned {
		l.home()
		return
	}
	l.reselect(func(T) bool { return true })
}

// toEnd puts the cursor on the last row (-1 when there is none).
func (l *list[T]) toEnd() { l.cursor = l.len() - 1 }

// clampCursor keeps the cursor on a row after the rows changed.
func (l *list[T]) clampCursor() { l.cursor = clamp(l.cursor, 0, l.len()-1) }

// remember takes the id of the row under the cursor, if there is one.
func (l *list[T]) remember() {
	if row, ok := l.selected(); ok && l.idOf != nil {
		l.id = l.idOf(row)
	}
}

// find returns the index of the row with id.
func (l *list[T]) find(id string) (int, bool) {
	if id == "" || l.idOf == nil {
		return 0, false
	}
	if l.src != nil {
		return l.src.locate(id)
	}
	for i, row := range l.rows {
		if l.idOf(row) == id {
			return i, true
		}
	}
	return 0, false
}

// reselect follows the selected id after the rows changed: the cursor goes
// to the row with that id when there is one and keep allows it, else it
// stays at its place. It reports whether another row is now selected.
func (l *list[T]) reselect(keep func(T) bool) bool {
	prev := l.id
	if i, ok := l.find(prev); ok && keep(l.at(i)) {
		l.cursor = i
	} else {
		l.clampCursor()
	}
	l.id = ""
	l.remember()
	return l.id != prev && l.id != ""
}

// window returns the first row to show so that the cursor is visible in h
// rows.
func (l *list[T]) window(h int) int { return window(l.cursor, l.len(), h) }

// pick is the item under the cursor of a list of indices into items.
func pick[E any](l *list[int], items []E) *E {
	i, ok := l.selected()
	if !ok {
		return nil
	}
	return &items[i]
}

// handleKey takes the keys of a list with details: up and down move the
// cursor, enter opens and closes the details, esc closes them. It reports
// whether up or down was pressed.
func (l *list[T]) handleKey(km *KeyMap, k tea.KeyPressMsg) (moved bool) {
	switch {
	case key.Matches(k, km.Up):
		l.move(-1)
		return true
	case key.Matches(k, km.Down):
		l.move(1)
		return true
	case key.Matches(k, km.Open):
		l.toggle()
	case key.Matches(k, km.Back):
		l.close()
	}
	return false
}

// split draws the rows over the details of the row under the cursor: the
// rows get what they need, up to what the details leave and at least about
// 40% of h (and 3 lines); the details get the rest, or all of h when they
// are open.
func (l *list[T]) split(st *Styles, w, h int, rows func(w, h int) []string, detail func(w int) []string) string {
	d := detail(w)
	if l.open {
		return strings.Join(l.view(d, h), "\n")
	}
	lh := clamp(l.len(), 3, max(3, h*2/5, h-1-len(d)))
	out := rows(w, lh)
	for len(out) < lh {
		out = append(out, "")
	}
	out = append(out, st.Muted.Render(strings.Repeat("─", w)))
	out = append(out, l.view(d, h-lh-1)...)
	return strings.Join(out, "\n")
}

// toggle opens or closes the details, at their top.
func (d *details) toggle() {
	d.open = !d.open
	d.scroll = 0
}

// close closes the details and keeps their scroll.
func (d *details) close() { d.open = false }

// reset closes the details and puts them back at their top.
func (d *details) reset() { d.open, d.scroll = false, 0 }

// scrollBy scrolls the details by n lines, not above their top; the bottom
// is clamped when they are drawn.
func (d *details) scrollBy(n int) { d.scroll = max(d.scroll+n, 0) }

// view shows h lines of the details from the scroll (clamped).
func (d *details) view(lines []string, h int) []string { return scroll(lines, d.scroll, h) }
