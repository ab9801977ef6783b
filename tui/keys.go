package tui

import "charm.land/bubbles/v2/key"

// KeyMap is every binding of the UI; the help is generated from it.
type KeyMap struct {
	NextPane, PrevPane            key.Binding
	Roster, Requests, Traces      key.Binding
	Messages                      key.Binding
	Up, Down                      key.Binding
	PageUp, PageDown              key.Binding
	Open, Back                    key.Binding
	Approve, Reject               key.Binding
	Shutdown, Message, Broadcast  key.Binding
	Filter, Help, Quit, ForceQuit key.Binding
}

// DefaultKeyMap returns the bindings of the keys section.
func DefaultKeyMap() KeyMap {
	b := func(help, desc string, keys ...string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(help, desc))
	}
	return KeyMap{
		NextPane:  b("tab", "next pane", "tab"),
		PrevPane:  b("shift+tab", "previous pane", "shift+tab"),
		Roster:    b("1", "roster", "1"),
		Requests:  b("2", "requests", "2"),
		Traces:    b("3", "traces", "3"),
		Messages:  b("4", "messages", "4"),
		Up:        b("↑/k", "up", "up", "k"),
		Down:      b("↓/j", "down", "down", "j"),
		PageUp:    b("pgup", "scroll details up", "pgup", "ctrl+u"),
		PageDown:  b("pgdn", "scroll details down", "pgdown", "ctrl+d"),
		Open:      b("enter", "details", "enter"),
		Back:      b("esc", "back", "esc"),
		Approve:   b("a", "approve", "a"),
		Reject:    b("r", "reject", "r"),
		Shutdown:  b("s", "shut down member", "s"),
		Message:   b("m", "message member", "m"),
		Broadcast: b("b", "broadcast", "b"),
		Filter:    b("/", "filter", "/"),
		Help:      b("?", "help", "?"),
		Quit:      b("q", "quit", "q"),
		ForceQuit: b("ctrl+c", "quit", "ctrl+c"),
	}
}

// shortHelp is the footer: what the focused pane offers, then the rest.
func (k KeyMap) shortHelp(p pane) []key.Binding {
	switch p {
	case paneRoster:
		return []key.Binding{k.NextPane, k.Shutdown, k.Message, k.Broadcast, k.Filter, k.Help, k.Quit}
	case paneRequests:
		return []key.Binding{k.NextPane, k.Approve, k.Reject, k.Open, k.Filter, k.Help, k.Quit}
	default:
		return []key.Binding{k.NextPane, k.Open, k.Filter, k.Broadcast, k.Help, k.Quit}
	}
}

// FullHelp groups every binding for the ? screen.
func (k KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.NextPane, k.PrevPane, k.Roster, k.Requests, k.Traces, k.Messages},
		{k.Up, k.Down, k.PageUp, k.PageDown, k.Open, k.Back},
		{k.Approve, k.Reject, k.Shutdown, k.Message, k.Broadcast},
		{k.Filter, k.Help, k.Quit, k.ForceQuit},
	}
}
