// Package tui is huddle's Bubble Tea v2 program: one root model that owns
// focus, layout and the dialog stack; panes for the roster, the requests,
// the traces and the inbox traffic; a keymap the help is generated from; and
// one Styles struct that every component reads.
//
// The model never does I/O in Update: snapshots of the team directory arrive
// as messages (team.Observe through program.Send), and every action runs in
// a tea.Cmd that calls the same functions as the CLI.
package tui
