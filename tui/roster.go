package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"huddle/protocol"
	"huddle/team"
	"huddle/team/view"
)

// rosterPane lists the members, two lines each: name and unread mail, then
// status and activity.
type rosterPane struct {
	*common
	list list[int] // indices into snap.Members
}

func newRosterPane(c *common) *rosterPane { return &rosterPane{common: c} }

// refresh rebuilds the rows from a new snapshot.
func (p *rosterPane) refresh() {
	p.refilter()
	p.list.clampCursor()
}

func (p *rosterPane) refilter() {
	rows := p.list.rows[:0]
	for i, mv := range p.snap.Members {
		if p.list.matches(mv.Record.Name, mv.Spec.Name, mv.Spec.Role, string(mv.Record.Status), mv.Record.Activity, mv.Record.Error, mv.Record.LastLog) {
			rows = append(rows, i)
		}
	}
	p.list.setRows(rows)
}

func (p *rosterPane) filter() string { return p.list.filter }

func (p *rosterPane) setFilter(f string) {
	p.list.filter = f
	p.refilter()
}

func (p *rosterPane) home()             { p.list.home() }
func (p *rosterPane) details() *details { return &p.list.details }

// selected is the member under the cursor, if any.
func (p *rosterPane) selected() *view.MemberView {
	return pick(&p.list, p.snap.Members)
}

func (p *rosterPane) HandleKey(k tea.KeyPressMsg) tea.Cmd {
	switch {
	case key.Matches(k, p.keys.Up):
		p.list.move(-1)
	case key.Matches(k, p.keys.Down):
		p.list.move(1)
	}
	return nil
}

func (p *rosterPane) ShortHelp() []key.Binding {
	k := p.keys
	return []key.Binding{k.FullLog, k.Broadcast, k.Filter}
}

func (p *rosterPane) FullHelp() [][]key.Binding {
	k := p.keys
	return [][]key.Binding{k.listHelp(), {memberKey(k.Open, "full log"), k.FullLog}, k.actionHelp()}
}

func (p *rosterPane) Render(w, h int) string { return strings.Join(p.lines(w, h), "\n") }

func (p *rosterPane) lines(w, h int) []string {
	if len(p.list.rows) == 0 {
		if !p.haveSnap {
			return []string{p.styles.Muted.Render("reading the team…")}
		}
		if p.snap.TeamErr != "" {
			return []string{p.styles.Danger.Render("team.json: ") + p.snap.TeamErr}
		}
		return []string{p.styles.Muted.Render("no members")}
	}
	per := 2
	n := len(p.list.rows)
	top := p.list.window(h / per)
	var out []string
	for i := top; i < n && len(out)+per <= h; i++ {
		mv := &p.snap.Members[p.list.rows[i]]
		rec := mv.Record
		g, gs := p.glyph(rec.Status)
		if spins(rec.Status) {
			g = p.spin.View()
		}
		name := memberName(mv)
		unread := ""
		if mv.Unread > 0 {
			unread = fmt.Sprintf("✉%d", mv.Unread)
		}
		// An llm member's tokens (and cost) sit before its unread mail.
		right := ""
		if unread != "" {
			right = " " + p.styles.Info.Render(unread)
		}
		if t := tokens(rec.Counters); t != "" && w >= 30 {
			right = p.styles.Muted.Render(t) + right
		} else {
			right = strings.TrimPrefix(right, " ")
		}
		unread = right
		l1 := fit(gs.Render(g)+" "+name, w-ansi.StringWidth(unread)) + unread
		word := string(rec.Status)
		if word == "" {
			word = "not started"
		}
		what := team.Printable(rec.Activity)
		if rec.Status == protocol.MemberCrashed && rec.Error != "" {
			what = team.Printable(rec.Error)
			if rec.LastLog != "" {
				// Its last words say more than an exit status.
				what = team.Printable(rec.LastLog)
			}
		}
		l2 := "  " + gs.Render(strings.ReplaceAll(word, "_", " "))
		if what != "" {
			l2 += p.styles.Muted.Render(" · ") + what
		}
		if rec.Status == protocol.MemberCrashed {
			l2 = "  " + p.styles.Danger.Render(ansi.Strip(l2[2:]))
		}
		l1, l2 = fit(l1, w), fit(l2, w)
		if i == p.list.cursor {
			l1, l2 = p.highlight(l1, paneRoster), p.highlight(l2, paneRoster)
		}
		out = append(out, l1, l2)
	}
	return out
}

// tokens is a member's model tokens in and out, and their cost when
// team.json gives a price: "↑12.3k ↓4.1k $0.10"; "" for a member with none.
func tokens(c protocol.Counters) string {
	if c.TokensIn+c.TokensOut == 0 {
		return ""
	}
	s := "↑" + team.Count(c.TokensIn) + " ↓" + team.Count(c.TokensOut)
	if c.CostUSD > 0 {
		s += fmt.Sprintf(" $%.2f", c.CostUSD)
	}
	return s
}

func (p *rosterPane) counts() (int, int) { return len(p.list.rows), len(p.snap.Members) }

func (p *rosterPane) moveBy(n int) { p.list.move(n) }
