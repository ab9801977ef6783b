package cli

import (
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"
)

// readmeForeignFlags are the flags the README mentions that are not
// huddle's, each with where it comes from.
var readmeForeignFlags = map[string]string{
	"--verbose":       "the flag the llm template's example task asks the coder to add to work/main.go",
	"--reuid":         "setpriv's, in the untrusted-agent example",
	"--regid":         "setpriv's, in the untrusted-agent example",
	"--clear-groups":  "setpriv's, in the untrusted-agent example",
	"--merges":        "git log's, in how the history benchmark was measured",
	"--output-format": "Claude Code's (claude -p), in the Claude Code and Codex teammates section",
}

// huddleFlags is every flag of every command, by command, as the command
// table defines them.
func huddleFlags() map[string]map[string]bool {
	all := map[string]map[string]bool{}
	for _, c := range commands {
		fs := c.flagSet()
		c.flags(fs)
		names := map[string]bool{"h": true, "help": true}
		fs.VisitAll(func(f *flag.Flag) { names[f.Name] = true })
		all[c.name] = names
	}
	return all
}

func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReadmeListsEveryCommandAsTheHelpDoes: the README's list of commands
// is the command table's, usage line and summary, so every flag a command
// has (TestEveryFlagIsInTheSynopsis) is in the README and none it lacks.
func TestReadmeListsEveryCommandAsTheHelpDoes(t *testing.T) {
	text := readme(t)
	start := strings.Index(text, "## Commands\n")
	if start < 0 {
		t.Fatal("README has no ## Commands section")
	}
	block := text[start:]
	open := strings.Index(block, "```text\n")
	if open < 0 {
		t.Fatal("README's Commands section has no text block")
	}
	block = block[open+len("```text\n"):]
	block = block[:strings.Index(block, "```")]
	lines := strings.Split(strings.TrimSuffix(block, "\n"), "\n")
	listed := map[string]bool{}
	for i := 0; i+1 < len(lines); i += 2 {
		usage, summary := lines[i], strings.TrimPrefix(lines[i+1], "    ")
		name := strings.Fields(usage)[1]
		listed[name] = true
		c := lookup(name)
		if c == nil {
			if name != "help" {
				t.Errorf("README lists %q, which is not a command", usage)
			}
			continue
		}
		if want := strings.TrimSpace("huddle " + c.name + " " + c.synopsis); usage != want {
			t.Errorf("README:\n  %s\nhelp:\n  %s", usage, want)
		}
		if summary != c.summary {
			t.Errorf("README says huddle %s does\n  %s\nhelp:\n  %s", name, summary, c.summary)
		}
	}
	for _, c := range commands {
		if !listed[c.name] {
			t.Errorf("README's Commands section does not list huddle %s", c.name)
		}
	}
}

var (
	readmeFlag      = regexp.MustCompile(`(?:^|[\s\[|(])(--?[a-z][a-z0-9-]*)`)
	readmeQuoted    = regexp.MustCompile(`"[^"]*"`)
	readmeCodeSpan  = regexp.MustCompile("`[^`\n]+`")
	readmeCommandAt = regexp.MustCompile(`(?:huddle|go run \.) ([a-z]+)\b`)
)

// TestReadmeFlagsExist: every flag the README gives a huddle command is a
// flag of that command, and every --flag the README mentions anywhere is
// huddle's (or named in readmeForeignFlags with where it comes from).
func TestReadmeFlagsExist(t *testing.T) {
	text := readme(t)
	flags := huddleFlags()
	known := map[string]bool{"--version": true} // Main's, not a FlagSet's (TestVersionSaysWhatTheBuildRecorded)
	for _, names := range flags {
		for n := range names {
			known["--"+n] = true
		}
	}
	for _, m := range regexp.MustCompile(`(?:^|[\s\[|(`+"`"+`])(--[a-z][a-z0-9-]*)`).FindAllStringSubmatch(text, -1) {
		if !known[m[1]] && readmeForeignFlags[m[1]] == "" {
			t.Errorf("README mentions %s, which no huddle command has", m[1])
		}
	}

	// Where the README shows a command line, its flags are that command's.
	var snippets []string
	inBlock := false
	for _, line := range strings.Split(strings.ReplaceAll(text, "\\\n", " "), "\n") {
		if strings.HasPrefix(line, "```") {
			inBlock = !inBlock
			continue
		}
		if inBlock {
			snippets = append(snippets, line)
			continue
		}
		snippets = append(snippets, readmeCodeSpan.FindAllString(line, -1)...)
	}
	checked := 0
	for _, s := range snippets {
		s = readmeQuoted.ReplaceAllString(s, `""`)
		loc := readmeCommandAt.FindStringSubmatchIndex(s)
		if loc == nil {
			continue
		}
		name := s[loc[2]:loc[3]]
		names, ok := flags[name]
		if !ok {
			continue // "huddle COMMAND -h", "huddle is …"
		}
		rest := s[loc[1]:]
		if i := strings.IndexAny(rest, "`;&>"); i >= 0 {
			rest = rest[:i] // the end of the span, or of the shell command
		}
		for _, m := range readmeFlag.FindAllStringSubmatch(rest, -1) {
			checked++
			if !names[strings.TrimLeft(m[1], "-")] {
				t.Errorf("README: %q: huddle %s has no %s", strings.TrimSpace(s), name, m[1])
			}
		}
	}
	if checked < 50 {
		t.Errorf("checked only %d flags of README command lines: the parsing broke", checked)
	}
}
