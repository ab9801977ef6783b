package cli

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"huddle/internal/testkit/natsteam"
	"huddle/protocol"
	"huddle/store/filestore"
	"huddle/team"
)

// TestCompletionNamesEveryCommandAndFlag: each shell's script names every
// command of the table and every flag of each, and the shell (when it is
// installed) reads it without a syntax error.
func TestCompletionNamesEveryCommandAndFlag(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		script := mustHuddle(t, "completion", shell).stdout
		for _, c := range commands {
			if !regexp.MustCompile(`\b` + c.name + `\b`).MatchString(script) {
				t.Errorf("%s completion does not name %s", shell, c.name)
			}
			fs := c.flagSet()
			c.flags(fs)
			fs.VisitAll(func(f *flag.Flag) {
				var want string
				switch {
				case shell == "fish" && len(f.Name) == 1:
					want = "'__fish_seen_subcommand_from " + c.name + "' -s " + f.Name + " "
				case shell == "fish":
					want = "'__fish_seen_subcommand_from " + c.name + "' -l " + f.Name + " "
				case shell == "zsh":
					want = "-" + f.Name + "["
				default:
					want = "-" + f.Name
				}
				if shell == "bash" {
					// The flags of the command's own line.
					line := regexp.MustCompile(`(?m)^\t` + c.name + `\) flags='([^']*)'`).FindStringSubmatch(script)
					if line == nil || !regexp.MustCompile(`(^| )--?`+f.Name+`( |$)`).MatchString(line[1]) {
						t.Errorf("bash completion of %s lacks --%s: %v", c.name, f.Name, line)
					}
					return
				}
				if !strings.Contains(script, want) {
					t.Errorf("%s completion of %s lacks %q", shell, c.name, want)
				}
			})
		}
		path, err := exec.LookPath(shell)
		if err != nil {
			t.Logf("%s is not installed: its script's syntax is not checked", shell)
			continue
		}
		file := filepath.Join(t.TempDir(), "huddle."+shell)
		if err := os.WriteFile(file, []byte(script), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(path, "-n", file).CombinedOutput(); err != nil {
			t.Errorf("%s -n: %v\n%s", shell, err, out)
		}
	}
	huddle(t, "completion", "powershell").wantError(t, ExitUsage, `no completion for "powershell": want bash, zsh or fish`, "completion powershell")
	huddle(t, "completion").wantError(t, ExitUsage, "a shell (bash, zsh or fish) is required", "completion")
}

// TestBashCompletionCompletes: sourced in bash, the script completes
// command names, a command's flags, and directories after --dir.
func TestBashCompletionCompletes(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "huddle.bash")
	if err := os.WriteFile(script, []byte(mustHuddle(t, "completion", "bash").stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "teamdir"), 0o700); err != nil {
		t.Fatal(err)
	}
	complete := func(words ...string) string {
		t.Helper()
		cmd := exec.Command(bash, "--norc", "--noprofile", "-c",
			`source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _huddle; printf '%s\n' "${COMPREPLY[@]}"`,
			"complete", script)
		cmd.Args = append(cmd.Args, words...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("complete %q: %v\n%s", words, err, out)
		}
		got := strings.Fields(string(out))
		slices.Sort(got) // bash lists them in the table's order; the test does not care
		return strings.Join(got, "\n")
	}
	if got := complete("huddle", "sh"); got != "show\nshutdown" {
		t.Errorf("huddle sh<tab>: %q", got)
	}
	if got := complete("huddle", "shutdown", "data", "--w"); got != "--wait" {
		t.Errorf("huddle shutdown data --w<tab>: %q", got)
	}
	if got := complete("huddle", "deadletters", "--dir", "team"); got != "teamdir" {
		t.Errorf("huddle deadletters --dir team<tab>: %q", got)
	}
	if got := complete("huddle", "help", "dead"); got != "deadletters" {
		t.Errorf("huddle help dead<tab>: %q", got)
	}
}

// TestBashCompletesTheTeamsWords: the bash script, run by bash as it runs
// on a tab, offers the team's members where a MEMBER goes, its pending
// request ids to approve (every live id to show), in the --dir the line
// names, and nothing where no team is.
func TestBashCompletesTheTeamsWords(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	script := filepath.Join(t.TempDir(), "huddle.bash")
	if err := os.WriteFile(script, []byte(mustHuddle(t, "completion", "bash").stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := demoTeam(t)
	st, err := filestore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	natsteam.Plan(t, st, "pl-aaaaaaaaaaaa", "reservas")
	natsteam.Plan(t, st, "pl-bbbbbbbbbbbb", "finanzas")
	if _, err := team.Decide(context.Background(), st, "pl-bbbbbbbbbbbb", protocol.EventApprove, "", protocol.Lead); err != nil {
		t.Fatal(err)
	}
	complete := func(line ...string) []string {
		t.Helper()
		cmd := exec.Command(bash, "-c", `source "$0"; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _huddle; printf '%s\n' "${COMPREPLY[@]}"`, script)
		cmd.Args = append(cmd.Args, line...)
		cmd.Dir = filepath.Dir(dir) // .huddle is the default --dir there
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(huddleBinary(t))+string(os.PathListSeparator)+os.Getenv("PATH"), "HUDDLE_DIR=")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("bash completion of %q: %v", line, err)
		}
		got := strings.Fields(string(out))
		slices.Sort(got)
		return got
	}
	for _, c := range []struct {
		line []string
		want []string
	}{
		{[]string{"huddle", "send", ""}, []string{"auditor", "data", "finanzas", "reservas"}},
		{[]string{"huddle", "logs", "fi"}, []string{"finanzas"}},
		{[]string{"huddle", "send", "data", ""}, []string{".huddle"}}, // TEXT: files, not members
		{[]string{"huddle", "approve", ""}, []string{"pl-aaaaaaaaaaaa"}},
		{[]string{"huddle", "approve", "pl-aaaaaaaaaaaa", "--feedback", "ok", ""}, []string{"pl-aaaaaaaaaaaa"}},
		{[]string{"huddle", "show", ""}, []string{"pl-aaaaaaaaaaaa", "pl-bbbbbbbbbbbb"}},
		{[]string{"huddle", "shutdown", "--dir", dir, ""}, []string{"auditor", "data", "finanzas", "reservas"}},
		{[]string{"huddle", "send", "--dir", t.TempDir(), ""}, nil},
		{[]string{"huddle", "claude", "st"}, []string{"status"}},
	} {
		if got := complete(c.line...); !slices.Equal(got, c.want) {
			t.Errorf("%q: got %q, want %q", c.line, got, c.want)
		}
	}
}
