package tui

import (
	"fmt"
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/alecthomas/chroma/v2"
	"github.com/charmbracelet/x/ansi"

	"huddle/internal/highlight"
	"huddle/team"
	"huddle/worktree"
)

// sideBySideWidth is the width from which the diff view shows the old
// and the new side by side.
const sideBySideWidth = 160

// diffView is the screen of one change: a review's diff (a, r, c, d
// decide it) or a plan's work so far (read only). It draws only the rows
// on screen, highlighting each once (chroma), so a change of thousands of
// lines opens and scrolls at the cost of a screen.
type diffView struct {
	c      *common
	id     string // the review's id; "" for a plan's work
	member string
	title  string
	banner string // said in red above the diff (work before approval)
	files  []worktree.FileDiff
	file   int
	rows   []diffRow // the current file's
	pairs  []diffPair
	wide   bool // side by side: pairs are drawn, not rows
	cursor int  // in rows (or pairs when wide)
	top    int
	height int // the body's height at the last draw
	// comments are the lead's notes on lines, sent with the changes.
	comments []team.Comment
	hl       *highlighter
}

// diffRow is one line of the current file: a hunk's header or a line.
type diffRow struct {
	kind     byte // '@' a hunk's header, ' ', '+', '-'
	old, new int
	text     string
}

// diffPair is one row of the side-by-side view: the old line and the new
// one (nil: none on that side).
type diffPair struct {
	left, right *diffRow
}

func newDiffView(c *common, id, member, title, banner string, files []worktree.FileDiff) *diffView {
	v := &diffView{c: c, id: id, member: member, title: title, banner: banner, files: files, hl: newHighlighter(c.styles.color)}
	v.load()
	return v
}

// load builds the current file's rows.
func (v *diffView) load() {
	v.rows, v.pairs, v.cursor, v.top = v.rows[:0], nil, 0, 0
	if len(v.files) == 0 {
		return
	}
	f := &v.files[v.file]
	for _, h := range f.Hunks {
		v.rows = append(v.rows, diffRow{kind: '@', text: h.Header})
		for _, l := range h.Lines {
			v.rows = append(v.rows, diffRow{kind: l.Kind, old: l.Old, new: l.New, text: strings.ReplaceAll(l.Text, "\t", "    ")})
		}
	}
	// Pairs: context on both sides; a run of deletions beside the run of
	// additions that follows it.
	for i := 0; i < len(v.rows); {
		r := &v.rows[i]
		switch r.kind {
		case '@', ' ':
			v.pairs = append(v.pairs, diffPair{r, r})
			i++
		default:
			var dels, adds []*diffRow
			for i < len(v.rows) && v.rows[i].kind == '-' {
				dels = append(dels, &v.rows[i])
				i++
			}
			for i < len(v.rows) && v.rows[i].kind == '+' {
				adds = append(adds, &v.rows[i])
				i++
			}
			for j := range max(len(dels), len(adds)) {
				var p diffPair
				if j < len(dels) {
					p.left = dels[j]
				}
				if j < len(adds) {
					p.right = adds[j]
				}
				v.pairs = append(v.pairs, p)
			}
		}
	}
}

func (v *diffView) count() int {
	if v.wide {
		return len(v.pairs)
	}
	return len(v.rows)
}

// at is the row under line i of the view: the new side's when wide.
func (v *diffView) at(i int) *diffRow {
	if v.wide {
		if i < 0 || i >= len(v.pairs) {
			return nil
		}
		if p := v.pairs[i]; p.right != nil {
			return p.right
		}
		return v.pairs[i].left
	}
	if i < 0 || i >= len(v.rows) {
		return nil
	}
	return &v.rows[i]
}

// setWide switches between the unified and the side-by-side rows,
// keeping the cursor on its line.
func (v *diffView) setWide(wide bool) {
	if wide == v.wide {
		return
	}
	r := v.at(v.cursor)
	v.wide = wide
	for i := range v.count() {
		if v.wide && (v.pairs[i].left == r || v.pairs[i].right == r) || !v.wide && &v.rows[i] == r {
			v.cursor, v.top = i, i
			return
		}
	}
	v.cursor, v.top = 0, 0
}

// move puts the cursor at i and the screen around it.
func (v *diffView) move(i int) {
	v.cursor = clamp(i, 0, max(v.count()-1, 0))
	h := max(v.height, 1)
	if v.cursor < v.top {
		v.top = v.cursor
	}
	if v.cursor >= v.top+h {
		v.top = v.cursor - h + 1
	}
}

// nextFile moves to the file d away (]: 1, [: -1).
func (v *diffView) nextFile(d int) {
	if len(v.files) == 0 {
		return
	}
	v.file = (v.file + d + len(v.files)) % len(v.files)
	v.load()
}

// nextHunk moves the cursor to the next (d 1) or previous (d -1) hunk's
// header, going on to the next file past the last.
func (v *diffView) nextHunk(d int) {
	for i := v.cursor + d; i >= 0 && i < v.count(); i += d {
		if r := v.at(i); r != nil && r.kind == '@' {
			v.move(i)
			v.top = v.cursor
			return
		}
	}
	if len(v.files) > 1 {
		v.nextFile(d)
		if d < 0 {
			v.nextHunk(-1)
			v.move(max(v.cursor, 0))
		}
	}
}

// commentable is the line under the cursor a comment is about: its path
// and its line in the new file (the old file's for a deleted line).
func (v *diffView) commentable() (string, int, bool) {
	r := v.at(v.cursor)
	if r == nil || r.kind == '@' || len(v.files) == 0 {
		return "", 0, false
	}
	n := r.new
	if r.kind == '-' {
		n = r.old
	}
	return v.files[v.file].Path, n, true
}

// addComment notes text on the line under the cursor.
func (v *diffView) addComment(text string) bool {
	path, line, ok := v.commentable()
	if !ok {
		return false
	}
	v.comments = append(v.comments, team.Comment{Path: path, Line: line, Text: text})
	return true
}

// commentsOn are the notes on line n of path.
func (v *diffView) commentsOn(path string, r *diffRow) []string {
	if r == nil || r.kind == '@' {
		return nil
	}
	n := r.new
	if r.kind == '-' {
		n = r.old
	}
	var out []string
	for _, c := range v.comments {
		if c.Path == path && c.Line == n {
			out = append(out, c.Text)
		}
	}
	return out
}

// Render draws the view in w×h: its title, the file list (a column from
// 120 wide, else the current file's line), the rows, and its keys.
func (v *diffView) Render(w, h int) []string {
	st := v.c.styles
	v.setWide(w >= sideBySideWidth)
	out := make([]string, 0, h)
	add := 0
	for _, f := range v.files {
		add += f.Added
	}
	head := st.Title.Render(v.title)
	if len(v.files) > 0 {
		head += st.Muted.Render(fmt.Sprintf(" · file %d/%d", v.file+1, len(v.files)))
	}
	if n := len(v.comments); n > 0 {
		head += st.Warning.Render(fmt.Sprintf(" · %d comment(s)", n))
	}
	out = append(out, fit(head, w))
	if v.banner != "" {
		out = append(out, fit(st.Danger.Render(v.banner), w))
	}
	keys := "]/[ file · n/N hunk · ↑↓ line · pgup/pgdn · "
	if v.id != "" {
		keys += "c comment · a merge · r changes · d discard · "
	}
	keys += "esc back"
	bodyH := h - len(out) - 1
	if len(v.files) == 0 {
		out = append(out, fit(st.Muted.Render("no change: the branch holds nothing its base does not"), w))
		for len(out) < h-1 {
			out = append(out, strings.Repeat(" ", w))
		}
		return append(out, fit(st.Muted.Render(keys), w))
	}
	listW := 0
	if w >= 120 {
		listW = min(36, w/4)
	} else {
		f := v.files[v.file]
		out = append(out, fit(v.fileLine(f, true), w))
		bodyH--
	}
	v.height = max(bodyH, 1)
	v.move(v.cursor)
	body := v.body(w-listW-btoi(listW > 0), v.height)
	var list []string
	if listW > 0 {
		list = v.fileList(listW, v.height)
	}
	for i := range v.height {
		line := ""
		if i < len(body) {
			line = body[i]
		}
		if listW > 0 {
			l := ""
			if i < len(list) {
				l = list[i]
			}
			line = fit(l, listW) + st.Frame.Render("│") + fit(line, w-listW-1)
		}
		out = append(out, fit(line, w))
	}
	return append(out, fit(st.Muted.Render(keys), w))
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// fileLine draws one file: its status, path and +/- counts.
func (v *diffView) fileLine(f worktree.FileDiff, current bool) string {
	st := v.c.styles
	name := f.Path
	if f.OldPath != "" {
		name = f.OldPath + " → " + f.Path
	}
	counts := st.Success.Render(fmt.Sprintf("+%d", f.Added)) + " " + st.Danger.Render(fmt.Sprintf("-%d", f.Deleted))
	if f.Binary {
		counts = st.Muted.Render("binary")
	}
	mark := "  "
	if current {
		mark = st.Key.Render("▸ ")
	}
	return mark + name + " " + counts
}

// fileList is the file column, scrolled to show the current file.
func (v *diffView) fileList(w, h int) []string {
	top := 0
	if v.file >= h {
		top = v.file - h + 1
	}
	var out []string
	for i := top; i < len(v.files) && len(out) < h; i++ {
		l := v.fileLine(v.files[i], i == v.file)
		if i == v.file {
			l = v.c.styles.Cursor.Render(ansi.Strip(fit(l, w)))
		}
		out = append(out, l)
	}
	return out
}

// body draws the rows from the top of the screen, each with its numbers,
// and the notes under their lines.
func (v *diffView) body(w, h int) []string {
	st := v.c.styles
	path := v.files[v.file].Path
	var out []string
	for i := v.top; i < v.count() && len(out) < h; i++ {
		var line string
		var notes []string
		if v.wide {
			p := v.pairs[i]
			half := (w - 1) / 2
			line = fit(v.cell(p.left, half, false), half) + st.Frame.Render("│") + v.cell(p.right, w-half-1, true)
			notes = v.commentsOn(path, p.right)
			if p.left != p.right {
				notes = append(v.commentsOn(path, p.left), notes...)
			}
		} else {
			r := &v.rows[i]
			line = v.cell(r, w, true)
			notes = v.commentsOn(path, r)
		}
		if i == v.cursor {
			line = st.Cursor.Render(ansi.Strip(fit(line, w)))
		}
		out = append(out, line)
		for _, n := range notes {
			if len(out) < h {
				out = append(out, fit(st.Warning.Render("      ✎ "+n), w))
			}
		}
	}
	return out
}

// cell draws one row in w columns: the line numbers (the old one on the
// left side and in the unified view, the new one besides), the mark and
// the highlighted text.
func (v *diffView) cell(r *diffRow, w int, newSide bool) string {
	st := v.c.styles
	if r == nil {
		return strings.Repeat(" ", max(w, 0))
	}
	if r.kind == '@' {
		return fit(st.Info.Render(r.text), w)
	}
	num := func(n int) string {
		if n == 0 {
			return "    "
		}
		return fmt.Sprintf("%4d", n)
	}
	var gutter string
	switch {
	case v.wide && !newSide:
		gutter = num(r.old)
	case v.wide:
		gutter = num(r.new)
	default:
		gutter = num(r.old) + " " + num(r.new)
	}
	mark := string(r.kind)
	switch r.kind {
	case '+':
		mark = st.Success.Render("+")
	case '-':
		mark = st.Danger.Render("-")
	}
	room := w - ansi.StringWidth(gutter) - 3
	text := r.text
	if room <= 0 {
		return fit(st.Muted.Render(gutter)+" "+mark, w)
	}
	if ansi.StringWidth(text) > room {
		text = ansi.Truncate(text, room, "…")
	}
	return st.Muted.Render(gutter) + " " + mark + " " + v.hl.line(v.files[v.file].Path, text)
}

// highlighter colours a line of code as the lexer for its file
// reads it, one line at a time (a hunk is no whole file), with an Ink per
// token type worked out once.
type highlighter struct {
	on     bool
	style  *chroma.Style
	inks   map[chroma.TokenType]Ink
	lexers map[string]chroma.Lexer
	cache  map[string]string
}

func newHighlighter(color bool) *highlighter {
	return &highlighter{on: color, style: highlight.Monokai(), inks: map[chroma.TokenType]Ink{}, lexers: map[string]chroma.Lexer{}, cache: map[string]string{}}
}

// line is text highlighted as a line of path; as it is without colour.
func (h *highlighter) line(path, text string) string {
	if !h.on || text == "" {
		return text
	}
	key := path + "\x00" + text
	if s, ok := h.cache[key]; ok {
		return s
	}
	lx, ok := h.lexers[path]
	if !ok {
		if lx = highlight.Match(path); lx != nil {
			lx = chroma.Coalesce(lx)
		}
		h.lexers[path] = lx
	}
	if lx == nil {
		h.cache[key] = text
		return text
	}
	it, err := lx.Tokenise(nil, text)
	if err != nil {
		return text
	}
	var b strings.Builder
	for tok := it(); tok != chroma.EOF; tok = it() {
		v := strings.TrimRight(tok.Value, "\n")
		if v == "" {
			continue
		}
		b.WriteString(h.ink(tok.Type).Render(v))
	}
	s := b.String()
	if len(h.cache) > 20000 {
		clear(h.cache)
	}
	h.cache[key] = s
	return s
}

func (h *highlighter) ink(t chroma.TokenType) Ink {
	if k, ok := h.inks[t]; ok {
		return k
	}
	e := h.style.Get(t)
	s := lipgloss.NewStyle()
	if e.Colour.IsSet() {
		s = s.Foreground(lipgloss.Color(e.Colour.String()))
	}
	if e.Bold == chroma.Yes {
		s = s.Bold(true)
	}
	k := NewInk(s)
	h.inks[t] = k
	return k
}
