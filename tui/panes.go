package tui

import (
	"fmt"
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"huddle/ipc/trace"
	"huddle/protocol"
)

// barWidth is the widest duration bar of a trace row.
const barWidth = 10

func (m *Model) traceLines(w, h int) []string {
	return m.split(w, h, len(m.traces), m.traceList, m.traceDetail)
}

func (m *Model) traceList(w, h int) []string {
	st := m.styles
	if len(m.traces) == 0 {
		msg := "no calls yet: correlation chains from traces.jsonl show here"
		if m.filters[paneTraces] != "" {
			msg = "no call matches the filter"
		}
		return []string{st.Muted.Render(msg)}
	}
	top := window(m.traceSel, len(m.traces), h)
	var out []string
	for i := top; i < len(m.traces) && len(out) < h; i++ {
		tr := m.traces[i]
		c := &m.snap.Chains[tr.chain]
		var line string
		if tr.row < 0 {
			line = m.chainHeader(c)
		} else {
			line = m.callRow(c, c.Rows[tr.row], w)
		}
		line = fit(line, w)
		if i == m.traceSel {
			line = m.highlight(line, paneTraces)
		}
		out = append(out, line)
	}
	return out
}

func (m *Model) chainHeader(c *trace.Chain) string {
	errs := 0
	for _, r := range c.Rows {
		if r.Call.Status == trace.CallError {
			errs++
		}
	}
	s := fmt.Sprintf("%s · %s · %s", c.CorrelationID, c.Start.Local().Format("15:04:05"), plural(len(c.Rows), "call"))
	out := m.styles.Title.Render("▾ ") + s
	if errs > 0 {
		out += m.styles.Danger.Render(fmt.Sprintf(" · %d failed", errs))
	}
	return out
}

// callRow is caller → target.action, hop, status, duration, error code and
// a bar whose length follows the call's share of the chain's longest call.
func (m *Model) callRow(c *trace.Chain, r trace.Row, w int) string {
	st := m.styles
	call := r.Call
	indent := strings.Repeat("  ", r.Depth)
	branch := "  "
	if r.Depth > 0 {
		branch = "└ "
	}
	remote := ""
	if call.Remote != "" {
		remote = st.Warning.Render("⇄ ")
	}
	what := fmt.Sprintf("%s%s%s%s → %s.%s", indent, branch, remote, call.Caller, call.Target, call.Action)
	dur := call.DurationMS
	var status string
	switch call.Status {
	case trace.CallOK:
		status = st.Success.Render("ok")
	case trace.CallError:
		status = st.Danger.Render(call.ErrorCode)
	default:
		status = st.Info.Render("running")
		if !call.Start.IsZero() {
			dur = m.clock.Sub(call.Start).Milliseconds()
		}
	}
	if call.Late {
		status += st.Warning.Render(" late")
	}
	bw := clamp(w/8, 3, barWidth)
	tail := fmt.Sprintf("h%d %s %6s %s", call.Hop, fit(status, 12), fmtMS(dur), m.bar(c, call, dur, bw))
	room := w - ansi.StringWidth(tail) - 1
	return fit(what, max(room, 8)) + " " + tail
}

func fmtMS(ms int64) string {
	if ms < 1000 {
		return fmt.Sprintf("%dms", ms)
	}
	return fmt.Sprintf("%.1fs", float64(ms)/1000)
}

func (m *Model) bar(c *trace.Chain, call *trace.Call, dur int64, width int) string {
	var longest int64
	for _, r := range c.Rows {
		longest = max(longest, r.Call.DurationMS)
	}
	longest = max(longest, dur, 1)
	n := int((dur*int64(width) + longest - 1) / longest)
	n = clamp(n, 1, width)
	style := m.styles.Bar
	if call.Remote != "" {
		style = m.styles.BarRemote
	}
	return style.Render(strings.Repeat("█", n)) + strings.Repeat(" ", width-n)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func (m *Model) traceDetail(w int) []string {
	if m.traceSel < 0 || m.traceSel >= len(m.traces) {
		return nil
	}
	st := m.styles
	tr := m.traces[m.traceSel]
	c := &m.snap.Chains[tr.chain]
	if tr.row < 0 {
		return []string{st.Title.Render("chain " + c.CorrelationID),
			fmt.Sprintf("  %s since %s; select a call for its request and result", plural(len(c.Rows), "call"), c.Start.Local().Format("15:04:05"))}
	}
	call := c.Rows[tr.row].Call
	kv := func(k, v string) string { return st.Muted.Render(fmt.Sprintf("%-12s ", k)) + v }
	out := []string{
		st.Title.Render(fmt.Sprintf("%s → %s.%s", call.Caller, call.Target, call.Action)),
		kv("request", call.RequestID),
		kv("correlation", call.CorrelationID),
	}
	if call.ParentRequestID != "" {
		out = append(out, kv("parent", call.ParentRequestID))
	}
	out = append(out, kv("hop", fmt.Sprint(call.Hop)))
	if call.Remote != "" {
		out = append(out, kv("remote", call.Remote))
	}
	if !call.Start.IsZero() {
		out = append(out, kv("started", call.Start.Local().Format("15:04:05.000")))
	}
	status := call.Status
	if call.Status != trace.CallRunning {
		status += fmt.Sprintf(" in %s", fmtMS(call.DurationMS))
	}
	out = append(out, kv("status", status))
	if call.Late {
		out = append(out, kv("late", st.Warning.Render("an answer came after the deadline; it was recorded, not delivered")))
	}
	if call.ErrorCode != "" {
		out = append(out, kv("error", st.Danger.Render(call.ErrorCode)+" "+call.ErrorMessage))
	}
	if call.Prompt != "" {
		out = append(out, st.Muted.Render("prompt"))
		out = append(out, wrapText(call.Prompt, w)...)
	}
	if call.Result != "" {
		out = append(out, st.Muted.Render("result"))
		out = append(out, wrapText(call.Result, w)...)
	}
	return out
}

func (m *Model) messageLines(w, h int) []string {
	if m.detailOpen {
		return scroll(m.messageDetail(w), m.detailScroll, h)
	}
	st := m.styles
	if len(m.messages) == 0 {
		msg := "no messages yet: inbox traffic shows here"
		if m.filters[paneMessages] != "" {
			msg = "no message matches the filter"
		}
		return []string{st.Muted.Render(msg)}
	}
	top := window(m.msgSel, len(m.messages), h)
	var out []string
	for i := top; i < len(m.messages) && len(out) < h; i++ {
		mv := &m.snap.Messages[m.messages[i]]
		msg := &mv.Msg
		line := st.Muted.Render(msg.TS.Local().Format("15:04:05")) + " " + msg.From + st.Muted.Render(" → ") + msg.To + "  " + m.messageText(msg)
		line = fit(line, w)
		if i == m.msgSel && (!m.msgFollow || m.focus == paneMessages) {
			line = m.highlight(line, paneMessages)
		}
		out = append(out, line)
	}
	return out
}

// messageText is what a message says, in one line.
func (m *Model) messageText(msg *protocol.Message) string {
	st := m.styles
	oneLine := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	switch msg.Type {
	case protocol.TypeMessage:
		return oneLine(msg.Content)
	case protocol.TypeBroadcast:
		return st.Info.Render("broadcast ") + oneLine(msg.Content)
	case protocol.TypePlanApprovalRequest:
		return st.Warning.Render("plan "+msg.RequestID+" ") + oneLine(msg.Plan)
	case protocol.TypePlanApprovalResponse, protocol.TypeShutdownResponse:
		verdict := st.Danger.Render("rejects ")
		if msg.Approved() {
			verdict = st.Success.Render("approves ")
		}
		return verdict + msg.RequestID + " " + oneLine(msg.Feedback+msg.Reason)
	case protocol.TypeShutdownRequest:
		return st.Warning.Render("shutdown? "+msg.RequestID+" ") + oneLine(msg.Reason)
	case protocol.TypeInvocationRequest:
		if inv := msg.Invocation; inv != nil {
			return st.Info.Render("call ") + fmt.Sprintf("%s.%s %s", inv.Target, inv.Action, oneLine(inv.Prompt))
		}
	case protocol.TypeInvocationResult:
		if res := msg.Result; res != nil {
			return st.Info.Render("result ") + res.RequestID + " " + res.Status
		}
	case protocol.TypeStatus:
		return st.Muted.Render("status ") + string(msg.Status) + " " + oneLine(msg.Content)
	case protocol.TypeInvocationCancel:
		return st.Warning.Render("cancel ") + msg.RequestID
	}
	return string(msg.Type)
}

func (m *Model) messageDetail(w int) []string {
	if m.msgSel < 0 || m.msgSel >= len(m.messages) {
		return nil
	}
	mv := &m.snap.Messages[m.messages[m.msgSel]]
	b, _ := mv.Msg.MarshalJSON()
	out := []string{m.styles.Title.Render(fmt.Sprintf("%s in the inbox of %s at offset %d", mv.Msg.ID, mv.Inbox, mv.Offset))}
	return append(out, wrapText(string(b), w)...)
}

// dialogBox renders the open dialog.
func (m *Model) dialogBox(w int) string {
	d := m.dialog
	st := m.styles
	bw := min(64, w-4)
	var body []string
	switch d.kind {
	case dialogHelp:
		return st.Dialog.Render(m.fullHelp(w - 6))
	case dialogShutdown:
		body = []string{
			st.Title.Render("Shut down " + d.target + "?"),
			"It answers: it may refuse while in the middle of work.",
			"",
			st.Key.Render("y") + " ask  " + st.Key.Render("n/esc") + " cancel",
		}
	default:
		d.input.SetWidth(bw - 10)
		body = []string{st.Title.Render(d.title), d.input.View()}
		if d.err != "" {
			body = append(body, st.Danger.Render(d.err))
		}
		hint := "enter send · esc cancel"
		if d.kind == dialogFilter {
			hint = "enter apply · esc clear"
		}
		body = append(body, st.Muted.Render(hint))
	}
	for i := range body {
		body[i] = fit(body[i], bw-4)
	}
	return st.Dialog.Render(strings.Join(body, "\n"))
}

// fullHelp lays the keymap's groups out in as many columns as fit in w.
func (m *Model) fullHelp(w int) string {
	st := m.styles
	var cols []string
	for _, group := range m.keys.FullHelp() {
		var lines []string
		for _, b := range group {
			h := b.Help()
			lines = append(lines, st.Key.Render(fmt.Sprintf("%-9s", h.Key))+" "+h.Desc)
		}
		cols = append(cols, strings.Join(lines, "\n"))
	}
	perRow := len(cols)
	for perRow > 1 && lipgloss.Width(lipgloss.JoinHorizontal(lipgloss.Top, spaced(cols[:perRow])...)) > w {
		perRow--
	}
	var rows []string
	for i := 0; i < len(cols); i += perRow {
		rows = append(rows, lipgloss.JoinHorizontal(lipgloss.Top, spaced(cols[i:min(i+perRow, len(cols))])...))
	}
	title := st.Title.Render("huddle keys") + st.Muted.Render("  (esc or ? closes)")
	notes := ansi.Wrap(st.Muted.Render("a and r wait "+grace.String()+" after a new request lands under the cursor; esc never approves."), w, "")
	return title + "\n\n" + strings.Join(rows, "\n\n") + "\n\n" + notes
}

func spaced(cols []string) []string {
	out := make([]string, 0, 2*len(cols))
	for i, c := range cols {
		if i > 0 {
			out = append(out, "   ")
		}
		out = append(out, c)
	}
	return out
}

// overlay draws box centred over screen.
func (m *Model) overlay(screen, box string, w, h int) string {
	bw, bh := lipgloss.Width(box), lipgloss.Height(box)
	return lipgloss.NewCompositor(
		lipgloss.NewLayer(screen),
		lipgloss.NewLayer(box).X(max((w-bw)/2, 0)).Y(max((h-bh)/2, 0)).Z(1),
	).Render()
}
