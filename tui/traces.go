package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"huddle/ipc/trace"
	"huddle/team"
)

// barWidth is the widest duration bar of a trace row.
const barWidth = 10

// tracesPane lists the correlation chains as trees of calls over the
// details of the call under the cursor. It is the one pane that reads the
// trace types. Its rows are not listed again on every snapshot: they are
// read where they stand in shown, a list of the chains the filter lets
// through that is updated with only the chains that changed
// (trace.ChainList.ChangedSince), so a snapshot costs the pane what
// changed, not the history.
type tracesPane struct {
	*common
	list list[traceRow]
	// shown are the chains the filter lets through, newest first: the
	// snapshot's own list while there is no filter.
	shown trace.ChainList
	// from is the snapshot's list shown was made from.
	from trace.ChainList
	// byID are the chains of shown by correlation id.
	byID map[string]*trace.Chain
	// folded are the chains whose calls are hidden under their header
	// (enter on it), by correlation id: the whole chain, which shown holds
	// as a header alone.
	folded map[string]*trace.Chain
}

// traceRow is one row of the traces pane: a chain's header (row < 0) or one
// of its calls.
type traceRow struct {
	chain *trace.Chain
	row   int
}

func newTracesPane(c *common) *tracesPane {
	p := &tracesPane{common: c, byID: map[string]*trace.Chain{}, folded: map[string]*trace.Chain{}}
	p.list.src = p
	p.list.idOf = func(r traceRow) string {
		if r.row < 0 {
			return r.chain.CorrelationID
		}
		return r.chain.CorrelationID + "/" + r.chain.Rows[r.row].Call.RequestID
	}
	return p
}

// count, at and locate are the rows of the list: each shown chain's header
// followed by its calls.
func (p *tracesPane) count() int { return p.shown.Len() + p.shown.Calls() }

func (p *tracesPane) at(i int) traceRow {
	c, _, row, _ := p.shown.Line(i)
	return traceRow{c, row}
}

func (p *tracesPane) locate(id string) (int, bool) {
	corr, req, call := strings.Cut(id, "/")
	c := p.byID[corr]
	if c == nil {
		return 0, false
	}
	i, before, ok := p.shown.Index(c)
	if !ok {
		return 0, false
	}
	line := i + before
	if !call {
		return line, true
	}
	for ri, r := range c.Rows {
		if r.Call.RequestID == req {
			return line + 1 + ri, true
		}
	}
	return 0, false
}

// refresh takes a new snapshot's chains; the selected chain or call stays
// selected while new ones arrive above it.
func (p *tracesPane) refresh() {
	if changed, ok := p.snap.Chains.ChangedSince(p.from); ok {
		p.update(changed)
	} else {
		p.refilter()
	}
	p.list.followNewestFirst()
}

// keeps reports whether the filter lets chain c through: its correlation
// id or one of its calls matches, and it is kept whole.
func (p *tracesPane) keeps(c *trace.Chain) bool {
	f := p.list.filter
	if f == "" || match(f, c.CorrelationID) {
		return true
	}
	for _, r := range c.Rows {
		if p.list.matches(r.Call.Caller, r.Call.Target, r.Call.Action, r.Call.ErrorCode, r.Call.RequestID, r.Call.Prompt, r.Call.Status, r.Call.ErrorMessage, r.Call.ErrorReason, r.Call.Result) {
			return true
		}
	}
	return false
}

// refilter builds shown again from every chain of the snapshot.
func (p *tracesPane) refilter() {
	p.from = p.snap.Chains
	clear(p.byID)
	var kept []*trace.Chain
	for _, c := range p.snap.Chains.All() {
		if p.keeps(c) {
			s := p.shownAs(c)
			p.byID[c.CorrelationID] = s
			kept = append(kept, s)
		}
	}
	if p.own() {
		p.shown = trace.ChainListFrom(kept)
	} else {
		p.shown = p.snap.Chains
	}
}

// own reports whether shown is the pane's own list (a filter, or a folded
// chain) rather than the snapshot's.
func (p *tracesPane) own() bool { return p.list.filter != "" || len(p.folded) > 0 }

// shownAs is how shown holds c: as it is, or, folded, as its header alone
// (the whole chain kept in folded for the header's counts).
func (p *tracesPane) shownAs(c *trace.Chain) *trace.Chain {
	if _, ok := p.folded[c.CorrelationID]; !ok {
		return c
	}
	p.folded[c.CorrelationID] = c
	return &trace.Chain{CorrelationID: c.CorrelationID, Start: c.Start}
}

// toggleFold folds the chain whose header is under the cursor, or unfolds
// it; the cursor stays on the header.
func (p *tracesPane) toggleFold(c *trace.Chain) {
	id := c.CorrelationID
	if _, ok := p.folded[id]; ok {
		delete(p.folded, id)
	} else if whole := p.byID[id]; whole != nil {
		p.folded[id] = whole
	}
	p.list.id = id
	p.refilter()
	p.list.reselect(func(traceRow) bool { return true })
}

// update puts the chains that changed since the list shown was made from
// into shown: each in place of the one with its correlation id, or out
// when the filter no longer lets it through.
func (p *tracesPane) update(changed []*trace.Chain) {
	p.from = p.snap.Chains
	if len(changed) == 0 {
		return
	}
	last := make(map[string]*trace.Chain, len(changed)) // a chain may come more than once
	for _, c := range changed {
		last[c.CorrelationID] = c
	}
	var del, put []*trace.Chain
	for id, c := range last {
		if old := p.byID[id]; old != nil {
			del = append(del, old)
			delete(p.byID, id)
		}
		if p.keeps(c) {
			s := p.shownAs(c)
			put = append(put, s)
			p.byID[id] = s
		}
	}
	if p.own() {
		p.shown = p.shown.Edit(del, put)
	} else {
		p.shown = p.snap.Chains
	}
}

func (p *tracesPane) filter() string { return p.list.filter }

func (p *tracesPane) setFilter(f string) {
	p.list.filter = f
	p.refilter()
}

func (p *tracesPane) home()             { p.list.home() }
func (p *tracesPane) details() *details { return &p.list.details }

// selectedCall is the call under the cursor; nil on a chain's header.
func (p *tracesPane) selectedCall() *trace.Call {
	tr, ok := p.list.selected()
	if !ok || tr.row < 0 {
		return nil
	}
	return tr.chain.Rows[tr.row].Call
}

// HandleKey moves the cursor; enter folds or unfolds the chain whose
// header is under it, and opens or closes a call's details.
func (p *tracesPane) HandleKey(k tea.KeyPressMsg) tea.Cmd {
	if tr, ok := p.list.selected(); ok && tr.row < 0 && key.Matches(k, p.keys.Open) && !p.list.open {
		p.toggleFold(tr.chain)
		return nil
	}
	p.list.handleKey(&p.keys, k)
	return nil
}

func (p *tracesPane) ShortHelp() []key.Binding {
	k := p.keys
	open := memberKey(k.Open, "details")
	if tr, ok := p.list.selected(); ok && tr.row < 0 {
		open = memberKey(k.Open, "fold")
		if _, folded := p.folded[tr.chain.CorrelationID]; folded {
			open = memberKey(k.Open, "unfold")
		}
	}
	return []key.Binding{open, k.Filter, k.Broadcast}
}

func (p *tracesPane) FullHelp() [][]key.Binding {
	return [][]key.Binding{p.keys.listHelp(), p.keys.actionHelp()}
}

func (p *tracesPane) Render(w, h int) string {
	return p.list.split(&p.styles, w, h, p.rows, p.detail)
}

func (p *tracesPane) rows(w, h int) []string {
	st := p.styles
	if p.list.len() == 0 {
		msg := "no calls yet: correlation chains from traces.jsonl show here"
		if p.list.filter != "" {
			msg = "no call matches the filter"
		}
		return []string{st.Muted.Render(msg)}
	}
	top := p.list.window(h)
	shown := p.window(top, h)
	// The status column is as wide as the widest status on screen, so
	// "INVALID_RESPONSE" and "DENIED (max_hops)" show whole.
	statusW := len("running")
	for _, tr := range shown {
		if tr.row >= 0 {
			call := tr.chain.Rows[tr.row].Call
			sw := ansi.StringWidth(callStatus(call))
			if call.Late {
				sw += len(" late")
			}
			statusW = max(statusW, sw)
		}
	}
	whatW := 0
	for _, tr := range shown {
		if tr.row >= 0 {
			whatW = max(whatW, ansi.StringWidth(callWhat(tr.chain.Rows[tr.row], "")))
		}
	}
	cols := traceLayout(w, whatW, statusW)
	var out []string
	for i, tr := range shown {
		c := tr.chain
		var line string
		if tr.row < 0 {
			line = p.chainHeader(c)
		} else {
			line = p.callRow(c, c.Rows[tr.row], cols)
		}
		line = fit(line, w)
		if top+i == p.list.cursor {
			line = p.highlight(line, paneTraces)
		}
		out = append(out, line)
	}
	return out
}

// window is the h rows from row top on (fewer at the end), read from shown
// in one walk.
func (p *tracesPane) window(top, h int) []traceRow {
	_, ci, row, ok := p.shown.Line(top)
	if !ok {
		return nil
	}
	out := make([]traceRow, 0, h)
	for _, c := range p.shown.From(ci) {
		for ; row < len(c.Rows) && len(out) < h; row++ {
			out = append(out, traceRow{c, row})
		}
		if len(out) == h {
			break
		}
		row = -1
	}
	return out
}

// runningNear reports whether a call still running stands within h rows
// of the cursor, where the pane's window of at most h rows lies: its time
// on screen counts the seconds. It reads at most 2h rows, however many
// chains the list holds.
func (p *tracesPane) runningNear(h int) bool {
	top := max(p.list.cursor-h, 0)
	for _, r := range p.window(top, 2*h) {
		if r.row < 0 {
			continue
		}
		if c := r.chain.Rows[r.row].Call; c.Status != trace.CallOK && c.Status != trace.CallError && !c.Start.IsZero() {
			return true
		}
	}
	return false
}

func (p *tracesPane) chainHeader(c *trace.Chain) string {
	mark := "▾ "
	if whole, ok := p.folded[c.CorrelationID]; ok {
		c, mark = whole, "▸ "
	}
	errs := 0
	for _, r := range c.Rows {
		if r.Call.Status == trace.CallError {
			errs++
		}
	}
	s := fmt.Sprintf("%s · %s · %s", c.CorrelationID, c.Start.Local().Format("15:04:05"), plural(len(c.Rows), "call"))
	out := p.styles.Title.Render(mark) + s
	if errs > 0 {
		out += p.styles.Danger.Render(fmt.Sprintf(" · %d failed", errs))
	}
	return out
}

// callStatus is a call's status as the list shows it: ok, running, or its
// error code, with the reason of a denial: "DENIED (max_hops)".
func callStatus(call *trace.Call) string {
	switch call.Status {
	case trace.CallOK:
		return "ok"
	case trace.CallError:
		if call.ErrorCode == "DENIED" && call.ErrorReason != "" {
			return call.ErrorCode + " (" + call.ErrorReason + ")"
		}
		return call.ErrorCode
	}
	return "running"
}

// traceCols are the widths of a call row's columns (0: not shown): who
// calls what, the hop and status, the duration, the bar.
type traceCols struct{ what, status, dur, bar int }

// traceLayout fits a call row's columns in w, giving up the least
// important first: the bar, then the duration, then the status's width;
// who calls what keeps its room to the last, and then loses the caller
// before the target (callWhat). A wide pane gives the bar what the rows
// leave, up to a third of it, so no gap opens between the columns.
func traceLayout(w, whatW, statusW int) traceCols {
	const durW = 6
	status := len("h9 ") + statusW
	c := traceCols{what: whatW, status: status, dur: durW}
	rest := w - whatW - 1 - status - 1 - durW - 1
	switch {
	case rest >= 3:
		c.bar = min(rest, max(barWidth, w/3))
		return c
	case w-whatW-1-status-1 >= durW:
		return c // no bar
	}
	c.dur = 0
	if room := w - whatW - 1; room >= status {
		return c
	}
	// Who calls what keeps at least the target's room, then the status
	// what is left.
	c.status = clamp(w-whatW-1, min(status, 8), status)
	c.what = max(w-c.status-1, 8)
	return c
}

// callWhat is "caller → target.action" under its indent and branch; with
// remote the ⇄ mark (already inked) before it.
func callWhat(r trace.Row, remote string) string {
	indent := strings.Repeat("  ", r.Depth)
	branch := "  "
	if r.Depth > 0 {
		branch = "└ "
	}
	mark := ""
	if r.Call.Remote != "" {
		mark = "⇄ "
		if remote != "" {
			mark = remote
		}
	}
	return fmt.Sprintf("%s%s%s%s → %s.%s", indent, branch, mark, r.Call.Caller, r.Call.Target, r.Call.Action)
}

// fitWhat is what in w columns: cut from the caller's side, so the target
// and action stay on screen ("  …vas → finanzas.consultar").
func fitWhat(what string, w int) string {
	if ansi.StringWidth(what) <= w {
		return fit(what, w)
	}
	i := strings.LastIndex(what, " → ")
	if i < 0 {
		return fit(what, w)
	}
	target := what[i:]
	if tw := ansi.StringWidth(target); tw+1 < w {
		return fit(ansi.Truncate(what[:i], w-tw, "…")+target, w)
	}
	return fit("…"+ansi.TruncateLeft(target, ansi.StringWidth(target)-(w-1), ""), w)
}

// callRow is caller → target.action, hop and status, duration and a bar
// whose length follows the call's share of the chain's longest call, in
// the columns cols.
func (p *tracesPane) callRow(c *trace.Chain, r trace.Row, cols traceCols) string {
	st := p.styles
	call := r.Call
	what := callWhat(r, st.Warning.Render("⇄ "))
	dur := call.DurationMS
	status := callStatus(call)
	switch call.Status {
	case trace.CallOK:
		status = st.Success.Render(status)
	case trace.CallError:
		status = st.Danger.Render(status)
	default:
		status = st.Info.Render(status)
		if !call.Start.IsZero() {
			dur = p.clock.Sub(call.Start).Milliseconds()
		}
	}
	if call.Late {
		status += st.Warning.Render(" late")
	}
	line := fitWhat(what, cols.what) + " " + fit(fmt.Sprintf("h%d %s", call.Hop, status), cols.status)
	if cols.dur > 0 {
		line += fmt.Sprintf(" %6s", fmtMS(dur))
	}
	if cols.bar > 0 {
		line += " " + p.bar(c, call, dur, cols.bar)
	}
	return line
}

func fmtMS(ms int64) string {
	if ms < 1000 {
		return fmt.Sprintf("%dms", ms)
	}
	return fmt.Sprintf("%.1fs", float64(ms)/1000)
}

func (p *tracesPane) bar(c *trace.Chain, call *trace.Call, dur int64, width int) string {
	var longest int64
	for _, r := range c.Rows {
		longest = max(longest, r.Call.DurationMS)
	}
	longest = max(longest, dur, 1)
	n := int((dur*int64(width) + longest - 1) / longest)
	n = clamp(n, 1, width)
	style := p.styles.Bar
	if call.Remote != "" {
		style = p.styles.BarRemote
	}
	return style.Render(strings.Repeat("█", n)) + strings.Repeat(" ", width-n)
}

func (p *tracesPane) detail(w int) []string {
	tr, ok := p.list.selected()
	if !ok {
		return nil
	}
	st := p.styles
	c := tr.chain
	if whole, ok := p.folded[c.CorrelationID]; ok && tr.row < 0 {
		return []string{st.Title.Render("chain " + c.CorrelationID),
			fmt.Sprintf("  %s since %s, folded: enter shows them", plural(len(whole.Rows), "call"), c.Start.Local().Format("15:04:05"))}
	}
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
		// The code once, then the whole message, wrapped.
		code := call.ErrorCode
		if call.ErrorReason != "" && !strings.Contains(call.ErrorMessage, call.ErrorReason) {
			code += " (" + team.Printable(call.ErrorReason) + ")"
		}
		out = append(out, kv("error", st.Danger.Render(code)))
		out = append(out, wrapText(strings.TrimPrefix(call.ErrorMessage, call.ErrorCode+": "), w)...)
	}
	out = append(out, p.jsonSection("refused answer", call.Refused, w)...)
	out = append(out, p.section("prompt", call.Prompt, w)...)
	return append(out, p.jsonSection("result", call.Result, w)...)
}

// counts are chains, not calls: the rows a chain folds into are its.
func (p *tracesPane) counts() (int, int) { return p.shown.Len(), p.snap.Chains.Len() }

func (p *tracesPane) moveBy(n int) { p.list.move(n) }
