// Package tui is huddle's Bubble Tea v2 program: one root model that owns
// focus, layout and the dialog stack; panes for the roster, the requests,
// the traces and the inbox traffic (one file each, each a component over the
// shared list type); a keymap the help is generated from, the global keys
// plus the focused pane's; and one Styles struct that every component reads.
//
// The model never does I/O in Update: snapshots of the team directory arrive
// as messages (view.Observe through program.Send), and every action runs in
// a tea.Cmd that calls the same functions as the CLI.
package tui
