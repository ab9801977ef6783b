package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"huddle/protocol"
	"huddle/team"
)

type dialogKind int

const (
	dialogReject dialogKind = iota + 1
	dialogShutdown
	dialogMessage
	dialogBroadcast
	dialogFilter
	dialogHelp
	dialogQuit
	dialogComment // a note on the diff view's line
	dialogChanges // a review sent back with feedback
	dialogDiscard // a review's change thrown away, what it loses named
)

// dialog is the one open dialog: it takes every key until it closes.
type dialog struct {
	kind   dialogKind
	target string // the request (reject) or the member (shutdown, message)
	title  string
	input  textinput.Model
	err    string
}

func newInputDialog(kind dialogKind, target, title string, st Styles) *dialog {
	in := textinput.New()
	in.Prompt = "› "
	in.CharLimit = 4000
	in.SetVirtualCursor(true)
	return &dialog{kind: kind, target: target, title: title, input: in}
}

// dialogKey handles a key while a dialog is open. esc always cancels and
// never approves anything.
func (m *Model) dialogKey(k tea.KeyPressMsg) tea.Cmd {
	d := m.dialog
	switch d.kind {
	case dialogHelp:
		if k.String() == "esc" || k.String() == "?" || k.String() == "q" {
			m.dialog = nil
		}
		return nil
	case dialogQuit:
		switch k.String() {
		case "y", "enter", "q":
			m.dialog = nil
			return tea.Quit
		case "n", "esc":
			m.dialog = nil
		}
		return nil
	case dialogShutdown:
		switch k.String() {
		case "y", "enter":
			m.dialog = nil
			m.flash, m.flashBad = "asking "+d.target+" to shut down…", false
			return m.shutdown(d.target)
		case "n", "esc":
			m.dialog = nil
		}
		return nil
	case dialogDiscard:
		switch k.String() {
		case "y":
			m.dialog = nil
			m.flash, m.flashBad = "discarding "+d.target+"…", false
			return m.discard(d.target)
		case "n", "esc":
			m.dialog = nil
		}
		return nil
	}
	switch k.String() {
	case "esc":
		if d.kind == dialogFilter {
			m.focused().setFilter("")
		}
		m.dialog = nil
		return nil
	case "enter":
		text := strings.TrimSpace(d.input.Value())
		switch d.kind {
		case dialogFilter:
			m.focused().setFilter(text)
			// A new filter puts every list back where a fresh list starts.
			for _, p := range m.panes {
				p.home()
			}
			m.dialog = nil
			return nil
		case dialogReject:
			if text == "" {
				d.err = "feedback is required: say what to change"
				return nil
			}
			m.dialog = nil
			m.flash, m.flashBad = "rejecting "+d.target+"…", false
			return m.reject(d.target, text)
		case dialogComment:
			if text == "" {
				d.err = "type a comment first"
				return nil
			}
			m.dialog = nil
			if m.diff != nil && m.diff.addComment(text) {
				m.flash, m.flashBad = fmt.Sprintf("%d comment(s): r sends them with your changes", len(m.diff.comments)), false
			}
			return nil
		case dialogChanges:
			var comments []team.Comment
			if m.diff != nil && m.diff.id == d.target {
				comments = m.diff.comments
			}
			if text == "" && len(comments) == 0 {
				d.err = "say what to change, or comment on a line first (c)"
				return nil
			}
			m.dialog = nil
			m.flash, m.flashBad = "sending "+d.target+" back…", false
			return m.requestChanges(d.target, text, comments)
		case dialogMessage, dialogBroadcast:
			if text == "" {
				d.err = "type a message first"
				return nil
			}
			m.dialog = nil
			if d.kind == dialogMessage {
				return m.send(d.target, text)
			}
			return m.broadcast(text)
		}
	}
	var cmd tea.Cmd
	d.input, cmd = d.input.Update(k)
	d.err = ""
	if d.kind == dialogFilter {
		// Live: the rows follow every key; enter keeps the filter, esc
		// clears it.
		if f := strings.TrimSpace(d.input.Value()); f != m.focused().filter() {
			m.focused().setFilter(f)
			m.focused().home()
		}
	}
	return cmd
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
	case dialogQuit:
		body = []string{
			st.Title.Render("Stop the team?"),
			d.target + ".",
			"Quitting stops every member this huddle runs;",
		}
		if cancelled := m.cancelledByQuit(); len(cancelled) > 0 {
			body = append(body, st.Warning.Render("these pending requests are cancelled:"))
			body = append(body, cancelled...)
		}
		body = append(body,
			"huddle attach watches a team without running it.",
			"",
			st.Key.Render("y/q")+" stop and quit  "+st.Key.Render("n/esc")+" stay",
		)
	case dialogDiscard:
		body = []string{st.Title.Render("Discard " + d.target + "?")}
		if d.title == "" {
			body = append(body, "Its branch holds no commit its base does not.")
		} else {
			body = append(body, st.Danger.Render("It takes these commits off the branch:"))
			body = append(body, strings.Split(d.title, "\n")...)
			body = append(body, st.Muted.Render("(the old tip stays under refs/huddle/discarded/)"))
		}
		body = append(body, "", st.Key.Render("y")+" discard  "+st.Key.Render("n/esc")+" keep it")
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

// fullHelp lays the keys out in as many columns as fit in w: the focus
// keys, the focused pane's columns, then filter, help and quit.
func (m *Model) fullHelp(w int) string {
	st := m.styles
	groups := append([][]key.Binding{m.keys.navHelp()}, m.focused().FullHelp()...)
	groups = append(groups, m.keys.generalHelp())
	// Every key the footer offers here is listed, those of the screen on
	// show (the member's view) first.
	listed := map[string]bool{}
	for _, g := range groups {
		for _, b := range g {
			listed[b.Help().Key] = true
		}
	}
	var here []key.Binding
	for _, b := range m.footerKeys() {
		if !listed[b.Help().Key] {
			listed[b.Help().Key] = true
			here = append(here, b)
		}
	}
	if len(here) > 0 {
		groups = append([][]key.Binding{here}, groups...)
	}
	var cols []string
	for _, group := range groups {
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
	notes := ansi.Wrap(st.Muted.Render("a and r decide the request the footer names, never in the "+grace.String()+" after it arrived or changed; esc never approves."), w, "")
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

// cancelledByQuit names the pending requests a stop cancels (a member
// that stops has what it asked for, and what it was asked, cancelled):
// a line each, the last saying how many more there are.
func (m *Model) cancelledByQuit() []string {
	const most = 4
	var out []string
	for i, r := range m.snap.Requests[:m.snap.Pending] {
		if i == most-1 && m.snap.Pending > most {
			out = append(out, fmt.Sprintf("  and %d more", m.snap.Pending-i))
			break
		}
		what := r.From + "'s " + string(r.Kind)
		if r.Kind == protocol.KindShutdown {
			what = "the shutdown of " + r.To
		}
		out = append(out, "  "+r.ID+" "+what)
	}
	return out
}
