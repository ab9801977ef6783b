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

// messagesPane lists the inbox traffic, newest last; the details of a
// message are its JSON line.
type messagesPane struct {
	*common
	list   list[int] // indices into snap.Messages
	follow bool      // keep the newest message selected
	texts  map[messageKey]string
}

func newMessagesPane(c *common) *messagesPane {
	p := &messagesPane{common: c, follow: true}
	p.list.idOf = func(i int) string {
		mv := &p.snap.Messages[i]
		if mv.Msg.ID == "" { // a foreign agent's line may have none
			return fmt.Sprintf("%s@%d", mv.Inbox, mv.Offset)
		}
		return mv.Inbox + "/" + mv.Msg.ID
	}
	return p
}

// refresh rebuilds the rows from a new snapshot; when following, the cursor
// moves to the newest message, else it stays on the message it was on.
func (p *messagesPane) refresh() {
	p.refilter()
	if p.follow {
		p.list.toEnd()
		p.list.remember()
		return
	}
	p.list.reselect(func(int) bool { return true })
}

func (p *messagesPane) refilter() {
	rows := p.list.rows[:0]
	for i := range p.snap.Messages {
		// Without a filter every message is a row: no text is made.
		if mv := &p.snap.Messages[i]; p.list.filter == "" || p.list.matches(mv.Msg.From, mv.Msg.To, mv.Inbox, p.plainText(mv)) {
			rows = append(rows, i)
		}
	}
	p.list.setRows(rows)
}

// plainText is a message's text as the filter matches it, made once per
// message: a snapshot comes many times a second under load, each holding
// up to view.MaxMessages messages.
func (p *messagesPane) plainText(mv *view.MessageView) string {
	k := messageKey{mv.Inbox, mv.Offset, mv.Msg.ID}
	if s, ok := p.texts[k]; ok {
		return s
	}
	if p.texts == nil || len(p.texts) > 2*view.MaxMessages {
		p.texts = map[messageKey]string{}
	}
	s := ansi.Strip(p.messageText(&mv.Msg))
	p.texts[k] = s
	return s
}

// messageKey names one message of the Messages pane.
type messageKey struct {
	inbox  string
	offset int64
	id     string
}

func (p *messagesPane) filter() string { return p.list.filter }

func (p *messagesPane) setFilter(f string) {
	p.list.filter = f
	p.refilter()
}

// home selects the newest message and follows the new ones.
func (p *messagesPane) home() {
	p.list.toEnd()
	p.follow = true
}

func (p *messagesPane) details() *details { return &p.list.details }

// selectedMessage is the message under the cursor, if any.
func (p *messagesPane) selectedMessage() *view.MessageView { return pick(&p.list, p.snap.Messages) }

// HandleKey moves the cursor (on the newest message it follows the new
// ones) and opens and closes the details.
func (p *messagesPane) HandleKey(k tea.KeyPressMsg) tea.Cmd {
	if p.list.handleKey(&p.keys, k) {
		p.follow = p.list.cursor == len(p.list.rows)-1
	}
	return nil
}

func (p *messagesPane) ShortHelp() []key.Binding {
	k := p.keys
	return []key.Binding{k.Open, k.Filter, k.Broadcast}
}

func (p *messagesPane) FullHelp() [][]key.Binding {
	return [][]key.Binding{p.keys.listHelp(), p.keys.actionHelp()}
}

func (p *messagesPane) Render(w, h int) string { return strings.Join(p.lines(w, h), "\n") }

func (p *messagesPane) lines(w, h int) []string {
	if p.list.open {
		return p.list.view(p.detail(w), h)
	}
	st := p.styles
	if len(p.list.rows) == 0 {
		msg := "no messages yet: inbox traffic shows here"
		if p.list.filter != "" {
			msg = "no message matches the filter"
		}
		return []string{st.Muted.Render(msg)}
	}
	top := p.list.window(h)
	var out []string
	for i := top; i < len(p.list.rows) && len(out) < h; i++ {
		mv := &p.snap.Messages[p.list.rows[i]]
		msg := &mv.Msg
		line := st.Muted.Render(msg.TS.Local().Format("15:04:05")) + " " + msg.From + st.Muted.Render(" → ") + msg.To + "  " + p.messageText(msg)
		line = fit(line, w)
		// Following the newest, the cursor shows only when the pane has
		// focus.
		if i == p.list.cursor && (!p.follow || p.focus == paneMessages) {
			line = p.highlight(line, paneMessages)
		}
		out = append(out, line)
	}
	return out
}

// messageText is what a message says, in one line.
func (c *common) messageText(msg *protocol.Message) string {
	st := c.styles
	oneLine := team.Printable // what an agent wrote never reaches the terminal as a control sequence
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

func (p *messagesPane) detail(w int) []string {
	mv := pick(&p.list, p.snap.Messages)
	if mv == nil {
		return nil
	}
	b, _ := mv.Msg.MarshalJSON()
	out := []string{p.styles.Title.Render(fmt.Sprintf("%s in the inbox of %s at offset %d", mv.Msg.ID, mv.Inbox, mv.Offset))}
	return append(out, p.jsonLines(string(b), w)...)
}

func (p *messagesPane) counts() (int, int) { return len(p.list.rows), len(p.snap.Messages) }

func (p *messagesPane) moveBy(n int) {
	p.list.move(n)
	p.follow = p.list.cursor == len(p.list.rows)-1
}
