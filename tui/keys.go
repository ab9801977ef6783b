package tui

import "charm.land/bubbles/v2/key"

// KeyMap is every binding of the UI; the help is generated from it: the
// global keys here, each pane's from its ShortHelp and FullHelp.
type KeyMap struct {
	NextPane, PrevPane            key.Binding
	Roster, Requests, Traces      key.Binding
	Messages, DeadLetters         key.Binding
	Up, Down                      key.Binding
	Top, Bottom                   key.Binding
	PageUp, PageDown              key.Binding
	DetailsUp, DetailsDown        key.Binding
	Open, Back                    key.Binding
	FullLog                       key.Binding
	Approve, Reject, AllowSession key.Binding
	Shutdown, Message, Broadcast  key.Binding
	Restart                       key.Binding
	// Diff opens a review's change, or a plan's work so far, in the
	// diff view (its own keys: diffview.go).
	Diff                          key.Binding
	Filter, Help, Quit, ForceQuit key.Binding
}

// DefaultKeyMap returns every binding of the UI; the footer and the full
// help are generated from it.
func DefaultKeyMap() KeyMap {
	b := func(help, desc string, keys ...string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(help, desc))
	}
	return KeyMap{
		NextPane:     b("tab", "next pane", "tab"),
		PrevPane:     b("shift+tab", "previous pane", "shift+tab"),
		Roster:       b("1", "roster", "1"),
		Requests:     b("2", "requests", "2"),
		Traces:       b("3", "traces", "3"),
		Messages:     b("4", "messages", "4"),
		DeadLetters:  b("5", "dead letters", "5"),
		Up:           b("↑/k", "up", "up", "k"),
		Down:         b("↓/j", "down", "down", "j"),
		Top:          b("g/home", "first row", "g", "home"),
		Bottom:       b("G/end", "last row", "G", "end"),
		PageUp:       b("pgup", "a page up", "pgup"),
		PageDown:     b("pgdn", "a page down", "pgdown"),
		DetailsUp:    b("ctrl+u", "scroll details up", "ctrl+u"),
		DetailsDown:  b("ctrl+d", "scroll details down", "ctrl+d"),
		Open:         b("enter", "details", "enter"),
		Back:         b("esc", "back", "esc"),
		FullLog:      b("l", "full log", "l"),
		Approve:      b("a", "approve", "a"),
		Reject:       b("r", "reject", "r"),
		AllowSession: b("A", "allow for the session", "A"),
		Shutdown:     b("s", "shut down member", "s"),
		Message:      b("m", "message member", "m"),
		Broadcast:    b("b", "broadcast", "b"),
		Restart:      b("R", "restart member", "R"),
		Diff:         b("v", "diff of a review, a plan's work", "v"),
		Filter:       b("/", "filter", "/"),
		Help:         b("?", "help", "?"),
		Quit:         b("q", "quit", "q"),
		ForceQuit:    b("ctrl+c", "quit", "ctrl+c"),
	}
}

// navHelp is the ? column of the keys that move the focus; they work on
// every pane.
func (k KeyMap) navHelp() []key.Binding {
	return []key.Binding{k.NextPane, k.PrevPane, k.Roster, k.Requests, k.Traces, k.Messages, k.DeadLetters}
}

// listHelp is the ? column of a list with details under it.
func (k KeyMap) listHelp() []key.Binding {
	return []key.Binding{k.Up, k.Down, k.Top, k.Bottom, k.PageUp, k.PageDown, k.DetailsUp, k.DetailsDown, k.Open, k.Back}
}

// actionHelp is the keys that act on the team, the ? column of the
// actions: s, m and R act on the member the focused row names, a and r on
// the selected request (or a roster row's pending plan), A on a selected
// permission. A read-only UI
// (a replay) offers none of them.
func (k KeyMap) actionHelp() []key.Binding {
	return []key.Binding{k.Approve, k.Reject, k.AllowSession, k.Shutdown, k.Message, k.Broadcast, k.Restart}
}

// generalHelp is the last ? column: filter, help and quit, on every pane.
func (k KeyMap) generalHelp() []key.Binding {
	return []key.Binding{k.Filter, k.Help, k.Quit, k.ForceQuit}
}
