// Package cli is huddle's command line: the table of commands (commands.go),
// how a command line is parsed and reported (cmdline.go), and one file per
// group of commands. Every command is made from the table: 'huddle help',
// 'huddle help CMD', 'huddle CMD -h' and the dispatch in Main. Commands hold
// no domain logic; they parse, call the packages below (team, tui, ipc,
// ipc/blueprint, ipc/trace, inbox, teamdir), and print.
package cli
