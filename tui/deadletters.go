package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"huddle/team"
)

// deadLettersPane lists the input the team refused, newest first, over the
// details of the one under the cursor: every row leads to why.
type deadLettersPane struct {
	*common
	list list[int] // indices into snap.DeadLetters, newest first
}

func newDeadLettersPane(c *common) *deadLettersPane {
	p := &deadLettersPane{common: c}
	p.list.idOf = func(i int) string {
		d := &p.snap.DeadLetters[i]
		return fmt.Sprintf("%s@%d@%s", d.Source, d.Offset, d.At)
	}
	return p
}

// refresh rebuilds the rows; the selected dead letter stays selected.
func (p *deadLettersPane) refresh() {
	p.refilter()
	p.list.followNewestFirst()
}

func (p *deadLettersPane) refilter() {
	rows := p.list.rows[:0]
	for i := len(p.snap.DeadLetters) - 1; i >= 0; i-- {
		d := &p.snap.DeadLetters[i]
		if p.list.matches(d.Member, d.By, d.Source, d.Reason, d.Type, d.MessageID) {
			rows = append(rows, i)
		}
	}
	p.list.setRows(rows)
}

func (p *deadLettersPane) filter() string { return p.list.filter }

func (p *deadLettersPane) setFilter(f string) {
	p.list.filter = f
	p.refilter()
}

func (p *deadLettersPane) home()             { p.list.home() }
func (p *deadLettersPane) details() *details { return &p.list.details }

// selectedLetter is the dead letter under the cursor, if any.
func (p *deadLettersPane) selectedLetter() *team.DeadLetter {
	return pick(&p.list, p.snap.DeadLetters)
}

func (p *deadLettersPane) HandleKey(k tea.KeyPressMsg) tea.Cmd {
	p.list.handleKey(&p.keys, k)
	return nil
}

func (p *deadLettersPane) ShortHelp() []key.Binding {
	k := p.keys
	return []key.Binding{k.Open, k.Filter}
}

func (p *deadLettersPane) FullHelp() [][]key.Binding {
	return [][]key.Binding{p.keys.listHelp(), p.keys.actionHelp()}
}

func (p *deadLettersPane) Render(w, h int) string {
	return p.list.split(&p.styles, w, h, p.rows, p.detail)
}

func (p *deadLettersPane) rows(w, h int) []string {
	st := p.styles
	if len(p.list.rows) == 0 {
		msg := "no dead letters: nothing the team refused"
		if p.list.filter != "" {
			msg = "no dead letter matches the filter"
		}
		return []string{st.Muted.Render(msg)}
	}
	top := p.list.window(h)
	var out []string
	for i := top; i < len(p.list.rows) && len(out) < h; i++ {
		d := &p.snap.DeadLetters[p.list.rows[i]]
		who := d.Member
		if d.By != "" && d.By != d.Member {
			who = d.By + st.Muted.Render(" → ") + d.Member
		}
		line := st.Muted.Render(d.At.Local().Format("15:04:05")) + " " + who + "  " + st.Danger.Render(team.Printable(d.Reason))
		line = fit(line, w)
		if i == p.list.cursor {
			line = p.highlight(line, paneDeadLetters)
		}
		out = append(out, line)
	}
	return out
}

func (p *deadLettersPane) detail(w int) []string {
	d := p.selectedLetter()
	if d == nil {
		return nil
	}
	st := p.styles
	kv := func(k, v string) string { return st.Muted.Render(fmt.Sprintf("%-12s ", k)) + team.Printable(v) }
	out := []string{
		st.Title.Render("refused at " + d.At.Local().Format("15:04:05.000")),
		kv("source", fmt.Sprintf("%s at offset %d", d.Source, d.Offset)),
		kv("member", d.Member),
	}
	if d.By != "" {
		out = append(out, kv("caused by", d.By))
	}
	if what := strings.TrimSpace(d.Type + " " + d.MessageID); what != "" {
		out = append(out, kv("input", what))
	}
	out = append(out, p.section("why", d.Reason, w)...)
	return append(out, p.section("what was refused", d.Raw, w)...)
}

func (p *deadLettersPane) counts() (int, int) { return len(p.list.rows), len(p.snap.DeadLetters) }

func (p *deadLettersPane) moveBy(n int) { p.list.move(n) }
