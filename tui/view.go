package tui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"huddle/protocol"
	"huddle/team"
)

// View renders the screen. Its cost follows the rows on screen, not the
// size of the team: every list renders only its visible window.
func (m *Model) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	v.MouseMode = tea.MouseModeNone // so text can be selected and copied
	v.WindowTitle = "huddle"
	if m.snap.Pending > 0 {
		v.WindowTitle = fmt.Sprintf("huddle (%d pending)", m.snap.Pending)
	}
	return v
}

// render lays the screen out: the header, the roster on the left, the pane
// shown on the right, the help line and the status line, and the dialog
// over them.
func (m *Model) render() string {
	w, h := m.width, m.height
	if w == 0 || h == 0 {
		return "huddle: starting…"
	}
	if w < 40 || h < 12 {
		return fit(fmt.Sprintf("huddle needs at least 40×12 (this is %d×%d)", w, h), w)
	}
	if m.diff != nil {
		return m.renderDiff(w, h)
	}
	bodyH := h - 3
	leftW := clamp(w/3, 26, 44)
	rightW := w - leftW
	left := m.frame(m.paneTitle(paneRoster), markedLines(m.roster.Render(leftW-2, bodyH-2), m.roster.filter()), leftW, bodyH, m.focus == paneRoster)
	var right []string
	switch {
	case m.member.open:
		title := m.styles.Title.Render("Member "+m.member.name) + m.styles.Muted.Render(" · esc back")
		right = m.frame(title, m.member.Render(rightW-2, bodyH-2), rightW, bodyH, false)
	case m.focus == paneRoster:
		// The roster's details are its member's card: with no member,
		// nothing else takes their place.
		right = m.frame(m.styles.Title.Render("Member"), m.styles.Muted.Render("no member selected"), rightW, bodyH, false)
	default:
		right = m.frame(m.tabs(rightW-6), markedLines(m.shown().Render(rightW-2, bodyH-2), m.shown().filter()), rightW, bodyH, m.focus != paneRoster)
	}
	var b strings.Builder
	b.Grow(w * h * 2)
	b.WriteString(m.header(w))
	b.WriteByte('\n')
	for i := range bodyH {
		b.WriteString(left[i])
		b.WriteString(right[i])
		b.WriteByte('\n')
	}
	b.WriteString(m.helpLine(w))
	b.WriteByte('\n')
	b.WriteString(m.statusLine(w))
	screen := b.String()
	if m.dialog != nil {
		screen = m.overlay(screen, m.dialogBox(w), w, h)
	}
	return screen
}

// renderDiff lays out the diff view: the header, the view, the status
// line, and the dialog over them.
func (m *Model) renderDiff(w, h int) string {
	var b strings.Builder
	b.Grow(w * h * 2)
	b.WriteString(m.header(w))
	b.WriteByte('\n')
	for _, l := range m.diff.Render(w, h-2) {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	b.WriteString(m.statusLine(w))
	screen := b.String()
	if m.dialog != nil {
		screen = m.overlay(screen, m.dialogBox(w), w, h)
	}
	return screen
}

// fit cuts s to width w (with an ellipsis) and pads it with spaces to w.
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	// The width is measured once for a line that fits (most do): measuring
	// is a walk over grapheme clusters, most of what a frame costs.
	n := ansi.StringWidth(s)
	if n > w {
		s = ansi.Truncate(s, w, "…")
		n = ansi.StringWidth(s)
	}
	if pad := w - n; pad > 0 {
		s += strings.Repeat(" ", pad)
	}
	return s
}

// frame draws a pane's inside in a box of w×h with title in its top edge.
func (m *Model) frame(title, inside string, w, h int, focused bool) []string {
	st, bc := m.styles.Frame, m.styles.FrameChars
	if focused {
		st, bc = m.styles.FrameFocused, m.styles.FocusedChars
	}
	lines := strings.Split(inside, "\n")
	inner := w - 2
	out := make([]string, 0, h)
	t := ansi.Truncate(" "+title+" ", max(inner-2, 0), "…")
	top := bc.TopLeft + bc.Top + t + strings.Repeat(bc.Top, max(inner-1-ansi.StringWidth(t), 0)) + bc.TopRight
	out = append(out, st.Render(top))
	left, right := st.Render(bc.Left), st.Render(bc.Right)
	blank := left + strings.Repeat(" ", max(inner, 0)) + right
	for i := range h - 2 {
		if i >= len(lines) {
			out = append(out, blank)
			continue
		}
		out = append(out, left+fit(lines[i], inner)+right)
	}
	out = append(out, st.Render(bc.BottomLeft+strings.Repeat(bc.Bottom, max(inner, 0))+bc.BottomRight))
	return out
}

// paneTitle is a pane's number, name and how many rows it has ("5 Dead
// letters (2)"), or with a filter how many of them it shows ("4 Messages
// /ledger 3 of 12").
func (m *Model) paneTitle(p pane) string { return m.paneTitleNamed(p, paneNames[p]) }

func (m *Model) paneTitleNamed(p pane, name string) string {
	t := fmt.Sprintf("%d %s", p+1, name)
	shown, all := m.panes[p].counts()
	switch f := m.panes[p].filter(); {
	case f != "":
		t += fmt.Sprintf(" /%s %d of %d", f, shown, all)
	case all > 0:
		t += fmt.Sprintf(" (%d)", all)
	}
	return t
}

// tabs is the title of the right column: its panes, the shown one lit,
// in w columns: the other panes' names shortened, then their counts left
// out, where the whole names do not fit.
func (m *Model) tabs(w int) string {
	for _, short := range []bool{false, true} {
		for _, counts := range []bool{true, false} {
			var parts []string
			for p := paneRequests; p < paneCount; p++ {
				name := paneNames[p]
				if short && p != m.right {
					name = paneShortNames[p]
				}
				t := m.paneTitleNamed(p, name)
				if !counts && p != m.right {
					t = fmt.Sprintf("%d %s", p+1, name)
				}
				if p == m.right {
					t = m.styles.Title.Render("[" + t + "]")
				} else {
					t = m.styles.Muted.Render(t)
				}
				parts = append(parts, t)
			}
			if line := strings.Join(parts, " "); ansi.StringWidth(line) <= w || (short && !counts) {
				return line
			}
		}
	}
	return ""
}

// highlight draws the cursor row of pane p: selected when p has focus,
// marked more quietly when it has not.
func (c *common) highlight(line string, p pane) string {
	sel := c.styles.Cursor
	if c.focus == p {
		sel = c.styles.Selected
	}
	return sel.Render(ansi.Strip(line))
}

// window returns the first row to show so that sel is visible in h rows.
func window(sel, n, h int) int {
	if n <= h || sel < h/2 {
		return 0
	}
	return min(sel-h/2, n-h)
}

func (m *Model) header(w int) string {
	st := m.styles
	name := "(no team)"
	if m.snap.Team != nil {
		name = m.snap.Team.Name
	}
	narrow := w < 100
	left := st.Title.Render("huddle") + st.Muted.Render(" · ") + name
	if narrow {
		left = st.Title.Render(name)
	}
	counts := map[protocol.MemberStatus]int{}
	var total protocol.Counters
	for _, mv := range m.snap.Members {
		counts[mv.Record.Status]++
		c := mv.Record.Counters
		total.TokensIn, total.TokensOut, total.CostUSD = total.TokensIn+c.TokensIn, total.TokensOut+c.TokensOut, total.CostUSD+c.CostUSD
	}
	pend := st.Muted.Render("no pending requests")
	if m.snap.Pending > 0 {
		pend = st.Warning.Render(fmt.Sprintf("⚑ %d pending", m.snap.Pending))
	}
	parts := []string{left, pend}
	if m.snap.Down {
		// Nothing moves while no runtime runs the team: say so first.
		parts = []string{left, st.Danger.Render(team.NotRunning(m.snap.Runtime)), pend}
	}
	var marks []string
	// What needs a person comes first.
	for _, s := range []protocol.MemberStatus{
		protocol.MemberCrashed, team.StatusLost, protocol.MemberAwaitingApproval, protocol.MemberRevising, protocol.MemberStarting,
		protocol.MemberWorking, protocol.MemberIdle, protocol.MemberStopping, protocol.MemberStopped,
	} {
		n := counts[s]
		if n == 0 {
			continue
		}
		g, gs := m.glyph(s)
		word := " " + string(s)
		if s == protocol.MemberAwaitingApproval {
			word = " awaiting"
		}
		if narrow {
			marks = append(marks, gs.Render(fmt.Sprintf("%s%d", g, n)))
		} else {
			marks = append(marks, gs.Render(fmt.Sprintf("%s %d%s", g, n, word)))
		}
	}
	sep := "  "
	if narrow {
		sep = " "
	}
	parts = append(parts, strings.Join(marks, sep))
	if t := tokens(total); t != "" && !narrow {
		// The team's model tokens and cost: what the llm members spent.
		parts = append(parts, st.Muted.Render(t))
	}
	// To the minute, so that an idle screen draws once a minute (tick);
	// a replay's clock, the replayed time, to the second.
	layout := "15:04"
	if m.controls != nil {
		layout = "15:04:05"
	}
	clock := st.Muted.Render(m.clock.Format(layout))
	room := w - ansi.StringWidth(clock) - 1
	return fit(strings.Join(parts, "   "), room) + " " + clock
}

// tone names one of the Styles, so that a table of marks can say which.
type tone int

const (
	toneText tone = iota
	toneMuted
	toneInfo
	toneSuccess
	toneWarning
	toneDanger
)

func (c *common) tone(t tone) Ink {
	st := &c.styles
	switch t {
	case toneMuted:
		return st.Muted
	case toneInfo:
		return st.Info
	case toneSuccess:
		return st.Success
	case toneWarning:
		return st.Warning
	case toneDanger:
		return st.Danger
	}
	return st.Text
}

// mark is how a status shows: a glyph in a tone.
type mark struct {
	glyph string
	tone  tone
}

var memberMarks = map[protocol.MemberStatus]mark{
	protocol.MemberStarting:         {"◌", toneInfo},
	protocol.MemberWorking:          {"●", toneSuccess},
	protocol.MemberIdle:             {"○", toneText},
	protocol.MemberAwaitingApproval: {"◐", toneWarning},
	protocol.MemberRevising:         {"↻", toneWarning},
	protocol.MemberStopping:         {"◍", toneMuted},
	protocol.MemberStopped:          {"■", toneMuted},
	protocol.MemberCrashed:          {"✗", toneDanger},
	team.StatusCorrupt:              {"⚠", toneDanger},
	team.StatusLost:                 {"?", toneDanger},
}

var requestMarks = map[protocol.RequestStatus]mark{
	protocol.RequestPending:  {"◐", toneWarning},
	protocol.RequestApproved: {"✓", toneSuccess},
	protocol.RequestRejected: {"✗", toneDanger},
	protocol.RequestAllowed:  {"✓", toneSuccess},
	protocol.RequestDenied:   {"✗", toneDanger},
	protocol.RequestExpired:  {"⌛", toneMuted},
	team.StatusCorrupt:       {"⚠", toneDanger},
	// A review's ends.
	protocol.RequestMerged:           {"✓", toneSuccess},
	protocol.RequestChangesRequested: {"↺", toneWarning},
	protocol.RequestDiscarded:        {"✗", toneDanger},
}

// statusMark is the glyph and style of s in marks, or of other when marks
// does not list s.
func statusMark[S comparable](c *common, marks map[S]mark, s S, other mark) (string, Ink) {
	mk, ok := marks[s]
	if !ok {
		mk = other
	}
	return mk.glyph, c.tone(mk.tone)
}

// glyph is a member status's mark and style.
func (c *common) glyph(s protocol.MemberStatus) (string, Ink) {
	return statusMark(c, memberMarks, s, mark{"·", toneMuted})
}

// requestMark is a request status's mark and style.
func (c *common) requestMark(s protocol.RequestStatus) (string, Ink) {
	return statusMark(c, requestMarks, s, mark{"⊘", toneMuted})
}

// scroll shows h lines of d from off (clamped).
func scroll(d []string, off, h int) []string {
	off = clamp(off, 0, max(len(d)-h, 0))
	end := min(off+h, len(d))
	return d[off:end]
}

func age(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// wrapText wraps plain text to w columns, each line indented by two; its
// control characters show as '?' (it is text an agent wrote).
func wrapText(s string, w int) []string {
	if s == "" {
		return nil
	}
	var out []string
	for _, l := range strings.Split(ansi.Wrap(team.PrintableText(s), max(w-2, 10), ""), "\n") {
		out = append(out, "  "+l)
	}
	return out
}

// jsonSection is section with its text drawn by jsonLines: pretty and
// coloured when it is JSON.
func (c *common) jsonSection(title, text string, w int) []string {
	if text == "" {
		return nil
	}
	return append([]string{c.styles.Muted.Render(title)}, c.jsonLines(text, w)...)
}

// section is a titled block of details: the title, then text wrapped to w;
// nothing when text is empty.
func (c *common) section(title, text string, w int) []string {
	if text == "" {
		return nil
	}
	return append([]string{c.styles.Muted.Render(title)}, wrapText(text, w)...)
}

// helpLine is the footer: the focused pane's keys between the global ones.
func (m *Model) helpLine(w int) string {
	keys := m.footerKeys()
	head := m.bindingHelp(m.keys.NextPane)
	tail := m.bindingHelp(m.keys.Help) + "  " + m.bindingHelp(m.keys.Quit)
	parts := make([]string, 0, len(keys))
	for _, b := range keys {
		parts = append(parts, m.bindingHelp(b))
	}
	for {
		line := strings.Join(append(append([]string{head}, parts...), tail), "  ")
		if ansi.StringWidth(line) <= w || len(parts) == 0 {
			return fit(line, w)
		}
		parts = parts[:len(parts)-1]
	}
}

// footerKeys are the footer's keys between tab and ? q: the keys that
// decide come first, then those that name the member they touch, then the
// pane's own; the least important go first when the line is too narrow.
func (m *Model) footerKeys() []key.Binding {
	keys := m.decideKeys()
	pane := m.focused().ShortHelp()
	if m.member.open {
		k := m.keys
		pane = []key.Binding{k.Back, memberKey(k.Down, "next member"), k.FullLog, memberKey(k.PageUp, "scroll"), k.Broadcast, k.Filter}
	}
	keys = append(keys, m.memberKeys()...)
	if m.memberRefusal(m.keys.Broadcast) != "" {
		pane = slices.DeleteFunc(slices.Clone(pane), func(b key.Binding) bool { return b.Help().Key == m.keys.Broadcast.Help().Key })
	}
	keys = append(keys, pane...)
	if m.controls != nil {
		// Read-only: no key that would act on the team is offered.
		keys = append(append([]key.Binding(nil), m.controls...), withoutActions(pane, m.keys)...)
	}
	return keys
}

func (m *Model) bindingHelp(b key.Binding) string {
	h := b.Help()
	return m.styles.Key.Render(h.Key) + " " + m.styles.Muted.Render(h.Desc)
}

func (m *Model) statusLine(w int) string {
	switch {
	case m.flash != "" && m.flashBad:
		return fit(m.styles.Danger.Render("✗ ")+m.flash, w)
	case m.flash != "":
		return fit(m.styles.Success.Render("✓ ")+m.flash, w)
	}
	return fit(m.styles.Muted.Render(m.footer), w)
}

// overlay draws box centred over screen.
func (m *Model) overlay(screen, box string, w, h int) string {
	bw, bh := lipgloss.Width(box), lipgloss.Height(box)
	return lipgloss.NewCompositor(
		lipgloss.NewLayer(screen),
		lipgloss.NewLayer(box).X(max((w-bw)/2, 0)).Y(max((h-bh)/2, 0)).Z(1),
	).Render()
}

// withoutActions is keys without those that act on the team.
func withoutActions(keys []key.Binding, km KeyMap) []key.Binding {
	acts := map[string]bool{}
	for _, b := range km.actionHelp() {
		acts[b.Help().Key] = true
	}
	var out []key.Binding
	for _, b := range keys {
		if !acts[b.Help().Key] {
			out = append(out, b)
		}
	}
	return out
}
