package tui

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"huddle/protocol"
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

func (m *Model) render() string {
	w, h := m.width, m.height
	if w == 0 || h == 0 {
		return "huddle: starting…"
	}
	if w < 40 || h < 12 {
		return fit(fmt.Sprintf("huddle needs at least 40×12 (this is %d×%d)", w, h), w)
	}
	bodyH := h - 3
	leftW := clamp(w/3, 26, 44)
	rightW := w - leftW
	left := m.frame(m.paneTitle(paneRoster), m.rosterLines(leftW-2, bodyH-2), leftW, bodyH, m.focus == paneRoster)
	right := m.frame(m.tabs(), m.rightLines(rightW-2, bodyH-2), rightW, bodyH, m.focus != paneRoster)
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

// fit cuts s to width w (with an ellipsis) and pads it with spaces to w.
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if ansi.StringWidth(s) > w {
		s = ansi.Truncate(s, w, "…")
	}
	if pad := w - ansi.StringWidth(s); pad > 0 {
		s += strings.Repeat(" ", pad)
	}
	return s
}

// frame draws lines in a box of w×h with title in its top edge.
func (m *Model) frame(title string, lines []string, w, h int, focused bool) []string {
	st, bc := m.styles.Frame, m.styles.FrameChars
	if focused {
		st, bc = m.styles.FrameFocused, m.styles.FocusedChars
	}
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

func (m *Model) paneTitle(p pane) string {
	t := fmt.Sprintf("%d %s", p+1, paneNames[p])
	if f := m.filters[p]; f != "" {
		t += " /" + f
	}
	return t
}

// tabs is the title of the right column: its three panes, the shown one lit.
func (m *Model) tabs() string {
	var parts []string
	for p := paneRequests; p < paneCount; p++ {
		t := m.paneTitle(p)
		if p == m.right {
			t = m.styles.Title.Render("[" + t + "]")
		} else {
			t = m.styles.Muted.Render(t)
		}
		parts = append(parts, t)
	}
	return strings.Join(parts, " ")
}

// highlight draws the cursor row of pane p: selected when p has focus,
// marked more quietly when it has not.
func (m *Model) highlight(line string, p pane) string {
	sel := m.styles.Cursor
	if m.focus == p {
		sel = m.styles.Selected
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
	for _, mv := range m.snap.Members {
		counts[mv.Record.Status]++
	}
	pend := st.Muted.Render("no pending requests")
	if m.snap.Pending > 0 {
		pend = st.Warning.Render(fmt.Sprintf("⚑ %d pending", m.snap.Pending))
	}
	parts := []string{left, pend}
	var marks []string
	// What needs a person comes first.
	for _, s := range []protocol.MemberStatus{
		protocol.MemberCrashed, protocol.MemberAwaitingApproval, protocol.MemberRevising, protocol.MemberStarting,
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
	clock := st.Muted.Render(m.clock.Format("15:04:05"))
	room := w - ansi.StringWidth(clock) - 1
	return fit(strings.Join(parts, "   "), room) + " " + clock
}

// glyph is a member status's mark and style.
func (m *Model) glyph(s protocol.MemberStatus) (string, lipgloss.Style) {
	st := m.styles
	switch s {
	case protocol.MemberStarting:
		return "◌", st.Info
	case protocol.MemberWorking:
		return "●", st.Success
	case protocol.MemberIdle:
		return "○", st.Text
	case protocol.MemberAwaitingApproval:
		return "◐", st.Warning
	case protocol.MemberRevising:
		return "↻", st.Warning
	case protocol.MemberStopping:
		return "◍", st.Muted
	case protocol.MemberStopped:
		return "■", st.Muted
	case protocol.MemberCrashed:
		return "✗", st.Danger
	}
	return "·", st.Muted
}

func (m *Model) rosterLines(w, h int) []string {
	if len(m.members) == 0 {
		if !m.haveSnap {
			return []string{m.styles.Muted.Render("reading the team…")}
		}
		if m.snap.TeamErr != "" {
			return []string{m.styles.Danger.Render("team.json: ") + m.snap.TeamErr}
		}
		return []string{m.styles.Muted.Render("no members")}
	}
	per := 2
	n := len(m.members)
	top := window(m.rosterSel, n, h/per)
	var out []string
	for i := top; i < n && len(out)+per <= h; i++ {
		mv := &m.snap.Members[m.members[i]]
		rec := mv.Record
		g, gs := m.glyph(rec.Status)
		name := memberName(mv)
		unread := ""
		if mv.Unread > 0 {
			unread = fmt.Sprintf("✉%d", mv.Unread)
		}
		l1 := fit(gs.Render(g)+" "+name, w-ansi.StringWidth(unread)) + m.styles.Info.Render(unread)
		word := string(rec.Status)
		if word == "" {
			word = "not started"
		}
		what := rec.Activity
		if rec.Status == protocol.MemberCrashed && rec.Error != "" {
			what = rec.Error
		}
		l2 := "  " + gs.Render(strings.ReplaceAll(word, "_", " "))
		if what != "" {
			l2 += m.styles.Muted.Render(" · ") + what
		}
		if rec.Status == protocol.MemberCrashed {
			l2 = "  " + m.styles.Danger.Render(ansi.Strip(l2[2:]))
		}
		l1, l2 = fit(l1, w), fit(l2, w)
		if i == m.rosterSel {
			l1, l2 = m.highlight(l1, paneRoster), m.highlight(l2, paneRoster)
		}
		out = append(out, l1, l2)
	}
	return out
}

func (m *Model) rightLines(w, h int) []string {
	switch m.right {
	case paneTraces:
		return m.traceLines(w, h)
	case paneMessages:
		return m.messageLines(w, h)
	}
	return m.requestLines(w, h)
}

// split lays out a list of n rows over its details: the list gets what it
// needs up to about 40% of h (at least 3 rows), the details the rest, or all
// of h when details are open.
func (m *Model) split(w, h, n int, list func(w, h int) []string, detail func(w int) []string) []string {
	if m.detailOpen {
		d := detail(w)
		return scroll(d, m.detailScroll, h)
	}
	lh := clamp(n, 3, max(3, h*2/5))
	out := list(w, lh)
	for len(out) < lh {
		out = append(out, "")
	}
	out = append(out, m.styles.Muted.Render(strings.Repeat("─", w)))
	return append(out, scroll(detail(w), m.detailScroll, h-lh-1)...)
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

// requestMark is a request status's mark and style.
func (m *Model) requestMark(s protocol.RequestStatus) (string, lipgloss.Style) {
	st := m.styles
	switch s {
	case protocol.RequestPending:
		return "◐", st.Warning
	case protocol.RequestApproved:
		return "✓", st.Success
	case protocol.RequestRejected:
		return "✗", st.Danger
	case protocol.RequestExpired:
		return "⌛", st.Muted
	}
	return "⊘", st.Muted
}

func (m *Model) requestLines(w, h int) []string {
	return m.split(w, h, len(m.requests), m.requestList, m.requestDetail)
}

func (m *Model) requestList(w, h int) []string {
	if len(m.requests) == 0 {
		msg := "no requests yet: plans and shutdowns show here"
		if m.filters[paneRequests] != "" {
			msg = "no request matches the filter"
		}
		return []string{m.styles.Muted.Render(msg)}
	}
	now := m.clock
	top := window(m.reqIdx, len(m.requests), h)
	var out []string
	for i := top; i < len(m.requests) && len(out) < h; i++ {
		r := &m.snap.Requests[m.requests[i]]
		mark, ms := m.requestMark(r.Status)
		head := fmt.Sprintf("%s %-15s %s → %s", ms.Render(mark), r.ID, r.From, r.To)
		if w >= 70 {
			head = fmt.Sprintf("%s %-15s %-8s %s → %s", ms.Render(mark), r.ID, r.Kind, r.From, r.To)
		}
		var tail string
		if r.Status == protocol.RequestPending {
			left := r.Deadline.Sub(now)
			tail = age(left) + " left"
			if w >= 70 {
				tail = m.styles.Muted.Render(age(now.Sub(r.Created))+" ago · ") + tail
			}
			if left < time.Minute {
				tail = m.styles.Warning.Render(ansi.Strip(tail))
			}
		} else {
			at := r.Created
			if r.ResolvedAt != nil {
				at = *r.ResolvedAt
			}
			tail = ms.Render(string(r.Status)) + m.styles.Muted.Render(fmt.Sprintf(" %s ago", age(now.Sub(at))))
		}
		room := w - ansi.StringWidth(tail) - 1
		line := fit(head, max(room, w/2)) + " " + tail
		line = fit(line, w)
		if i == m.reqIdx {
			line = m.highlight(line, paneRequests)
		}
		out = append(out, line)
	}
	return out
}

// wrapText wraps plain text to w columns, each line indented by two.
func wrapText(s string, w int) []string {
	if s == "" {
		return nil
	}
	var out []string
	for _, l := range strings.Split(ansi.Wrap(s, max(w-2, 10), ""), "\n") {
		out = append(out, "  "+l)
	}
	return out
}

func (m *Model) requestDetail(w int) []string {
	r := m.selectedRequest()
	st := m.styles
	if r == nil {
		return nil
	}
	when := fmt.Sprintf("created %s (%s ago)", r.Created.Local().Format("15:04:05"), age(m.clock.Sub(r.Created)))
	if r.Status == protocol.RequestPending {
		when += fmt.Sprintf(" · deadline %s", r.Deadline.Local().Format("15:04:05"))
	} else if r.ResolvedBy != "" {
		when += " · " + string(r.Status) + " by " + r.ResolvedBy
	}
	out := []string{
		st.Title.Render(fmt.Sprintf("%s %s", r.Kind, r.ID)) + st.Muted.Render(fmt.Sprintf(" · %s → %s", r.From, r.To)),
		st.Muted.Render(when),
		m.diagram(r.Status),
	}
	if m.inGrace() {
		out = append(out, st.Muted.Render("  (just arrived: a and r wait a moment)"))
	}
	out = append(out, st.Muted.Render("history"))
	for _, t := range r.History {
		from := string(t.From)
		if from == "" {
			from = "·"
		}
		l := fmt.Sprintf("  %s  %s → %s  by %s", t.At.Local().Format("15:04:05"), from, t.To, t.By)
		if t.Note != "" {
			l += fmt.Sprintf(": %q", t.Note)
		}
		out = append(out, l)
	}
	if r.Plan != "" {
		out = append(out, st.Muted.Render("plan"))
		out = append(out, wrapText(r.Plan, w)...)
	}
	if r.Reason != "" {
		out = append(out, st.Muted.Render("reason"))
		out = append(out, wrapText(r.Reason, w)...)
	}
	if r.Feedback != "" {
		out = append(out, st.Muted.Render("feedback"))
		out = append(out, wrapText(r.Feedback, w)...)
	}
	if r.ResponseReason != "" {
		out = append(out, st.Muted.Render("answer"))
		out = append(out, wrapText(r.ResponseReason, w)...)
	}
	return out
}

// diagram draws the request state machine with the current state lit.
func (m *Model) diagram(cur protocol.RequestStatus) string {
	lit := func(s protocol.RequestStatus) string {
		if s == cur {
			return m.styles.Lit.Render("[" + string(s) + "]")
		}
		return m.styles.Muted.Render(string(s))
	}
	finals := []string{}
	for _, s := range protocol.RequestStatuses[1:] {
		finals = append(finals, lit(s))
	}
	return lit(protocol.RequestPending) + " ──▶ " + strings.Join(finals, "│")
}

func (m *Model) helpLine(w int) string {
	var parts []string
	for _, b := range m.keys.shortHelp(m.focus) {
		parts = append(parts, m.bindingHelp(b))
	}
	return fit(strings.Join(parts, "  "), w)
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
