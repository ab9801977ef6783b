package tui

import (
	"strings"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
)

type dialogKind int

const (
	dialogReject dialogKind = iota + 1
	dialogShutdown
	dialogMessage
	dialogBroadcast
	dialogFilter
	dialogHelp
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
	}
	switch k.String() {
	case "esc":
		if d.kind == dialogFilter {
			m.filters[m.focus] = ""
			m.refilter()
		}
		m.dialog = nil
		return nil
	case "enter":
		text := strings.TrimSpace(d.input.Value())
		switch d.kind {
		case dialogFilter:
			m.filters[m.focus] = text
			m.refilter()
			m.rosterSel, m.reqIdx, m.traceSel = 0, 0, 0
			if r := m.selectedRequest(); r != nil {
				m.reqSel = r.ID
			}
			m.msgSel, m.msgFollow = len(m.messages)-1, true
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
	return cmd
}
