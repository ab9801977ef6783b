package cli

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"huddle/team"
)

// completionAbout is the help of huddle completion.
const completionAbout = "Print a completion script for bash, zsh or fish, made from the command table that\n" +
	"'huddle help' is made from: the commands, each command's flags (--dir completes\n" +
	"directories), and from the team in --dir (or the default) the members where a MEMBER\n" +
	"goes, the pending request ids to approve or reject, every live id to show, and huddle\n" +
	"claude's subcommands and Claude Code teams. Load it in the shell's start-up file:\n" +
	"  bash  source <(huddle completion bash)                 (in ~/.bashrc)\n" +
	"  zsh   source <(huddle completion zsh)                  (in ~/.zshrc, after compinit)\n" +
	"  fish  huddle completion fish > ~/.config/fish/completions/huddle.fish"

func completionFlags(fs *flag.FlagSet) runFunc {
	return runCompletion // no flags of its own
}

func runCompletion(cl *Cmdline) int {
	if code, ok := cl.WantArgs(1, 1, "a shell (bash, zsh or fish)"); !ok {
		return code
	}
	write, ok := map[string]func(io.Writer, []completed){
		"bash": bashCompletion, "zsh": zshCompletion, "fish": fishCompletion,
	}[cl.Args[0]]
	if !ok {
		return cl.UsageError("no completion for %q: want bash, zsh or fish", cl.Args[0])
	}
	write(cl.Stdout, completionTable())
	return ExitOK
}

// completed is a command as a completion script needs it.
type completed struct {
	name, summary string
	flags         []completedFlag
	// words is what its arguments complete to (argWords): the kind
	// huddle __complete is asked for, "" for files.
	words string
}

type completedFlag struct {
	name  string // without dashes
	usage string // its description, one line
	takes string // the name of its value ("" for a bool flag)
}

// dashed is the flag as typed: -f for a one-letter flag, --name otherwise
// (as 'huddle help' and the README write them).
func (f completedFlag) dashed() string {
	if len(f.name) == 1 {
		return "-" + f.name
	}
	return "--" + f.name
}

// completionCommands is the command table, set once the table is: the
// table holds completion, so completion cannot name it directly (an
// initialization cycle).
var completionCommands []command

func init() { completionCommands = commands }

// completionTable is every command with its flags, from the command table,
// then help.
func completionTable() []completed {
	var out []completed
	for _, c := range completionCommands {
		fs := c.flagSet()
		c.flags(fs)
		cc := completed{name: c.name, summary: c.summary, words: argWords(c)}
		fs.VisitAll(func(f *flag.Flag) {
			takes, usage := flag.UnquoteUsage(f)
			if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
				takes = ""
			} else if takes == "" {
				takes = "value"
			}
			cc.flags = append(cc.flags, completedFlag{name: f.Name, usage: team.Printable(usage), takes: takes})
		})
		sort.Slice(cc.flags, func(i, j int) bool { return cc.flags[i].name < cc.flags[j].name })
		out = append(out, cc)
	}
	return append(out, completed{name: "help", summary: "show this help, or a command's: huddle help <command>"})
}

func commandNames(cs []completed) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.name
	}
	return strings.Join(names, " ")
}

func bashCompletion(w io.Writer, cs []completed) {
	fmt.Fprintln(w, "# bash completion for huddle; load it with: source <(huddle completion bash)")
	fmt.Fprintln(w, "_huddle() {")
	fmt.Fprintln(w, `	local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}" flags="" valued="" words=""`)
	fmt.Fprintln(w, `	if [[ $COMP_CWORD -eq 1 ]]; then`)
	fmt.Fprintf(w, "\t\tCOMPREPLY=($(compgen -W '%s --version --keep' -- \"$cur\"))\n", commandNames(cs))
	fmt.Fprintln(w, "\t\treturn")
	fmt.Fprintln(w, "\tfi")
	fmt.Fprintln(w, `	case "${COMP_WORDS[1]}" in`)
	for _, c := range cs {
		if c.name == "help" {
			fmt.Fprintf(w, "\thelp)\n\t\tCOMPREPLY=($(compgen -W '%s' -- \"$cur\"))\n\t\treturn\n\t\t;;\n", commandNames(cs[:len(cs)-1]))
			continue
		}
		var dashed, valued []string
		for _, f := range c.flags {
			dashed = append(dashed, f.dashed())
			if f.takes != "" {
				valued = append(valued, f.dashed())
			}
		}
		fmt.Fprintf(w, "\t%s) flags='%s' valued='%s' words='%s' ;;\n", c.name, strings.Join(append(dashed, "-h"), " "), strings.Join(valued, " "), c.words)
	}
	fmt.Fprintln(w, "\tesac")
	fmt.Fprintln(w, `	case "$prev" in`)
	fmt.Fprintln(w, "\t--dir | -dir | --root | -root)")
	fmt.Fprintln(w, `		COMPREPLY=($(compgen -d -- "$cur"))`)
	fmt.Fprintln(w, "\t\treturn")
	fmt.Fprintln(w, "\t\t;;")
	fmt.Fprintln(w, "\tesac")
	fmt.Fprintln(w, `	if [[ " $valued " == *" $prev "* ]]; then`)
	fmt.Fprintln(w, `		COMPREPLY=($(compgen -f -- "$cur"))`)
	fmt.Fprintln(w, "\t\treturn")
	fmt.Fprintln(w, "\tfi")
	fmt.Fprintln(w, `	if [[ $cur == -* ]]; then`)
	fmt.Fprintln(w, `		COMPREPLY=($(compgen -W "$flags" -- "$cur"))`)
	fmt.Fprintln(w, "\t\treturn")
	fmt.Fprintln(w, "\tfi")
	// The arguments before this one (flags and their values left out), and
	// the directory a --dir or --root names.
	fmt.Fprintln(w, `	local i n=0 where="" word first=""`)
	fmt.Fprintln(w, `	for ((i = 2; i < COMP_CWORD; i++)); do`)
	fmt.Fprintln(w, `		word="${COMP_WORDS[i]}"`)
	fmt.Fprintln(w, `		case "$word" in`)
	fmt.Fprintln(w, `		--dir | -dir | --root | -root) where="${COMP_WORDS[i+1]}" ;;`)
	fmt.Fprintln(w, `		esac`)
	fmt.Fprintln(w, `		if [[ $word == -* ]]; then`)
	fmt.Fprintln(w, `			[[ " $valued " == *" $word "* ]] && ((i++))`)
	fmt.Fprintln(w, `		else`)
	fmt.Fprintln(w, `			[[ $n -eq 0 ]] && first="$word"`)
	fmt.Fprintln(w, `			((n++))`)
	fmt.Fprintln(w, `		fi`)
	fmt.Fprintln(w, `	done`)
	fmt.Fprintln(w, `	case "$words:$n" in`)
	fmt.Fprintf(w, "\t%s:0 | %s:* | %s:* | %s:0) ;;\n", wordsMembers, wordsPending, wordsRequests, wordsClaude)
	fmt.Fprintf(w, "\t%s:1) [[ $first == @(status|requests|attach) ]] && words=%s || words=\"\" ;;\n", wordsClaude, wordsClaudeTeams)
	fmt.Fprintln(w, "\t*) words=\"\" ;;")
	fmt.Fprintln(w, "\tesac")
	fmt.Fprintln(w, `	if [[ -n $words ]]; then`)
	fmt.Fprintf(w, "\t\tCOMPREPLY=($(compgen -W \"$(huddle %s \"$words\" \"$where\" 2>/dev/null)\" -- \"$cur\"))\n", completeCommand)
	fmt.Fprintln(w, "\telse")
	fmt.Fprintln(w, `		COMPREPLY=($(compgen -f -- "$cur"))`)
	fmt.Fprintln(w, "\tfi")
	fmt.Fprintln(w, "}")
	fmt.Fprintln(w, "complete -F _huddle huddle")
}

// zshQuote is s inside single quotes for zsh.
func zshQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// zshDescription is s escaped for the [description] of an _arguments spec,
// where brackets and colons are syntax.
func zshDescription(s string) string {
	return strings.NewReplacer(`\`, `\\`, "[", `\[`, "]", `\]`, ":", `\:`).Replace(s)
}

func zshCompletion(w io.Writer, cs []completed) {
	fmt.Fprintln(w, "#compdef huddle")
	fmt.Fprintln(w, "# zsh completion for huddle; load it with: source <(huddle completion zsh)")
	// _huddle_words offers what huddle __complete prints for $1, in the
	// directory a --dir or --root on the line names.
	fmt.Fprintln(w, "_huddle_words() {")
	fmt.Fprintln(w, `	local -a vals; local where="" i`)
	fmt.Fprintln(w, `	for i in {3..$((CURRENT - 1))}; do`)
	fmt.Fprintln(w, `		[[ $words[i-1] == (--dir|-dir|--root|-root) ]] && where=$words[i]`)
	fmt.Fprintln(w, `	done`)
	fmt.Fprintf(w, "\tvals=(${(f)\"$(huddle %s $1 \"$where\" 2>/dev/null)\"})\n", completeCommand)
	fmt.Fprintln(w, `	compadd -a vals`)
	fmt.Fprintln(w, "}")
	fmt.Fprintln(w, "_huddle() {")
	fmt.Fprintln(w, "\tlocal -a commands")
	fmt.Fprintln(w, "\tcommands=(")
	for _, c := range cs {
		fmt.Fprintf(w, "\t\t%s\n", zshQuote(c.name+":"+c.summary))
	}
	fmt.Fprintln(w, "\t)")
	fmt.Fprintln(w, "\tif (( CURRENT == 2 )); then")
	fmt.Fprintln(w, "\t\t_describe -t commands 'huddle command' commands")
	fmt.Fprintln(w, "\t\treturn")
	fmt.Fprintln(w, "\tfi")
	fmt.Fprintln(w, "\tcase $words[2] in")
	for _, c := range cs {
		if c.name == "help" {
			fmt.Fprintln(w, "\thelp)\n\t\t_describe -t commands 'huddle command' commands\n\t\t;;")
			continue
		}
		fmt.Fprintf(w, "\t%s)\n\t\t_arguments", c.name)
		for _, f := range c.flags {
			spec := f.dashed() + "[" + zshDescription(f.usage) + "]"
			switch {
			case f.name == "dir":
				spec += ":" + f.takes + ":_files -/"
			case f.takes != "":
				spec += ":" + f.takes + ":"
			}
			fmt.Fprintf(w, " \\\n\t\t\t%s", zshQuote(spec))
		}
		switch c.words {
		case wordsMembers:
			fmt.Fprintf(w, " \\\n\t\t\t'1:member:_huddle_words %s' \\\n\t\t\t'*:argument:_files'\n\t\t;;\n", c.words)
		case wordsPending, wordsRequests:
			fmt.Fprintf(w, " \\\n\t\t\t'*:request id:_huddle_words %s'\n\t\t;;\n", c.words)
		case wordsClaude:
			fmt.Fprintf(w, " \\\n\t\t\t'1:subcommand:_huddle_words %s' \\\n\t\t\t'2:team:_huddle_words %s'\n\t\t;;\n", wordsClaude, wordsClaudeTeams)
		default:
			fmt.Fprint(w, " \\\n\t\t\t'*:argument:_files'\n\t\t;;\n")
		}
	}
	fmt.Fprintln(w, "\tesac")
	fmt.Fprintln(w, "}")
	fmt.Fprintln(w, `if [[ $zsh_eval_context[-1] == loadautofunc ]]; then`)
	fmt.Fprintln(w, `	_huddle "$@"`)
	fmt.Fprintln(w, "else")
	fmt.Fprintln(w, "\tcompdef _huddle huddle")
	fmt.Fprintln(w, "fi")
}

// fishQuote is s inside single quotes for fish.
func fishQuote(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	return "'" + strings.ReplaceAll(s, "'", `\'`) + "'"
}

func fishCompletion(w io.Writer, cs []completed) {
	fmt.Fprintln(w, "# fish completion for huddle; save it as ~/.config/fish/completions/huddle.fish")
	fmt.Fprintln(w, "complete -c huddle -e")
	// __huddle_words prints what huddle __complete prints for $argv[1], in
	// the directory a --dir or --root on the line names.
	fmt.Fprintln(w, "function __huddle_words")
	fmt.Fprintln(w, "\tset -l toks (commandline -opc)")
	fmt.Fprintln(w, "\tset -l where ''")
	fmt.Fprintln(w, "\tfor i in (seq 2 (count $toks))")
	fmt.Fprintln(w, "\t\tif contains -- $toks[(math $i - 1)] --dir -dir --root -root")
	fmt.Fprintln(w, "\t\t\tset where $toks[$i]")
	fmt.Fprintln(w, "\t\tend")
	fmt.Fprintln(w, "\tend")
	fmt.Fprintf(w, "\thuddle %s $argv[1] $where 2>/dev/null\n", completeCommand)
	fmt.Fprintln(w, "end")
	fmt.Fprintf(w, "complete -c huddle -n __fish_use_subcommand -l version -d %s\n", fishQuote("print huddle's version"))
	fmt.Fprintf(w, "complete -c huddle -n __fish_use_subcommand -l keep -d %s\n", fishQuote("run the demo team and keep its directory"))
	for _, c := range cs {
		fmt.Fprintf(w, "complete -c huddle -f -n __fish_use_subcommand -a %s -d %s\n", c.name, fishQuote(c.summary))
	}
	fmt.Fprintf(w, "complete -c huddle -f -n '__fish_seen_subcommand_from help' -a %s\n", fishQuote(commandNames(cs[:len(cs)-1])))
	for _, c := range cs {
		switch c.words {
		case wordsMembers, wordsPending, wordsRequests:
			fmt.Fprintf(w, "complete -c huddle -f -n '__fish_seen_subcommand_from %s' -a '(__huddle_words %s)'\n", c.name, c.words)
		case wordsClaude:
			fmt.Fprintf(w, "complete -c huddle -f -n '__fish_seen_subcommand_from claude; and not __fish_seen_subcommand_from teams status requests attach watch' -a '(__huddle_words %s)'\n", wordsClaude)
			fmt.Fprintf(w, "complete -c huddle -f -n '__fish_seen_subcommand_from claude; and __fish_seen_subcommand_from status requests attach' -a '(__huddle_words %s)'\n", wordsClaudeTeams)
		}
	}
	for _, c := range cs {
		for _, f := range c.flags {
			opt := "-l " + f.name
			if len(f.name) == 1 {
				opt = "-s " + f.name
			}
			value := ""
			switch {
			case f.name == "dir":
				value = " -r -f -a '(__fish_complete_directories)'"
			case f.takes != "":
				value = " -r"
			}
			fmt.Fprintf(w, "complete -c huddle -n '__fish_seen_subcommand_from %s' %s%s -d %s\n", c.name, opt, value, fishQuote(f.usage))
		}
	}
}
