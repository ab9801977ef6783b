package cli

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"huddle/protocol"
)

// The commands are tested through the real binary, built once from the
// root package (module huddle), as go install builds it.
var huddleBin struct {
	once     sync.Once
	dir, bin string
	err      error
}

func TestMain(m *testing.M) {
	if fps := os.Getenv(tickerFloorEnv); fps != "" {
		os.Exit(tickerFloor(fps)) // the floor of BenchmarkAttachIdle, not the tests
	}
	if fps := os.Getenv(teaFloorEnv); fps != "" {
		os.Exit(teaFloor(fps)) // its second floor
	}
	// The desk and the journal of Claude Code teams live in the user's
	// configuration directory: the tests keep theirs apart.
	cfg, err := os.MkdirTemp("", "huddle-cli-test-config-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CONFIG_HOME", cfg)
	code := m.Run()
	os.RemoveAll(cfg)
	if huddleBin.dir != "" {
		os.RemoveAll(huddleBin.dir)
	}
	os.Exit(code)
}

func huddleBinary(t testing.TB) string {
	t.Helper()
	huddleBin.once.Do(func() {
		huddleBin.dir, huddleBin.err = os.MkdirTemp("", "huddle-cli-test-")
		if huddleBin.err != nil {
			return
		}
		huddleBin.bin = filepath.Join(huddleBin.dir, "huddle")
		// huddle-full beside it, where huddle runs the commands it hands over,
		// and huddle-broker, where huddle broker looks first.
		// Built as the README installs them: without cgo.
		build := exec.Command("go", "build", "-o", huddleBin.dir+string(filepath.Separator), "huddle", "huddle/cmd/huddle-full", "huddle/cmd/huddle-broker")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err := build.CombinedOutput()
		if err != nil {
			huddleBin.err = errors.New(err.Error() + ": " + string(out))
		}
	})
	if huddleBin.err != nil {
		t.Fatalf("build huddle: %v", huddleBin.err)
	}
	return huddleBin.bin
}

type cliResult struct {
	stdout, stderr string
	code           int
}

// huddleIn runs the binary in cwd with extra environment; HUDDLE_DIR,
// HUDDLE_STORE and HUDDLE_NATS_CREDS are unset unless env sets them.
func huddleIn(t *testing.T, cwd string, env []string, args ...string) cliResult {
	t.Helper()
	return huddleWith(t, cwd, env, nil, args...)
}

// huddleWith is huddleIn with stdin (nil: none).
func huddleWith(t *testing.T, cwd string, env []string, stdin io.Reader, args ...string) cliResult {
	t.Helper()
	cmd := exec.Command(huddleBinary(t), args...)
	cmd.Dir = cwd
	cmd.Env = append(append(os.Environ(), "HUDDLE_DIR=", "HUDDLE_STORE=", "HUDDLE_NATS_CREDS="), env...)
	cmd.Stdin = stdin
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("huddle %v: %v", args, err)
	}
	return cliResult{out.String(), errOut.String(), cmd.ProcessState.ExitCode()}
}

func huddle(t *testing.T, args ...string) cliResult {
	t.Helper()
	return huddleIn(t, t.TempDir(), nil, args...)
}

// wantOK fails unless the command exited 0 with nothing on stderr.
func (r cliResult) wantOK(t *testing.T, args ...string) cliResult {
	t.Helper()
	if r.code != ExitOK || r.stderr != "" {
		t.Fatalf("huddle %v: exit %d, stderr %q, stdout %q", args, r.code, r.stderr, r.stdout)
	}
	return r
}

// wantError fails unless the command exited with code, printing one line
// "huddle: …" that contains want, and nothing on stdout.
func (r cliResult) wantError(t *testing.T, code int, want string, args ...string) {
	t.Helper()
	if r.code != code {
		t.Errorf("huddle %v: exit %d, want %d (stderr %q)", args, r.code, code, r.stderr)
	}
	if !strings.HasPrefix(r.stderr, "huddle: ") || strings.Count(r.stderr, "\n") != 1 || !strings.HasSuffix(r.stderr, "\n") {
		t.Errorf("huddle %v: want one line \"huddle: …\" on stderr, got %q", args, r.stderr)
	}
	if !strings.Contains(r.stderr, want) {
		t.Errorf("huddle %v: stderr %q does not say %q", args, r.stderr, want)
	}
	if r.stdout != "" {
		t.Errorf("huddle %v: stdout %q, want nothing", args, r.stdout)
	}
}

// mustHuddle runs a command that must succeed.
func mustHuddle(t *testing.T, args ...string) cliResult {
	t.Helper()
	return huddle(t, args...).wantOK(t, args...)
}

func TestNoArgumentsPrintsUsageAndExitsZero(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := Main(nil, &out, &errOut); code != ExitOK {
		t.Fatalf("exit %d, want 0", code)
	}
	if !strings.Contains(out.String(), "usage: huddle <command>") {
		t.Fatalf("usage missing: %q", out.String())
	}
	for _, c := range commands {
		if !strings.Contains(out.String(), c.name) {
			t.Errorf("usage does not list %q", c.name)
		}
	}
}

func TestUnknownCommandIsAUsageError(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := Main([]string{"frobnicate"}, &out, &errOut); code != ExitUsage {
		t.Fatalf("exit %d, want 2", code)
	}
	if got := errOut.String(); !strings.Contains(got, `unknown command "frobnicate"`) || strings.Count(got, "\n") != 1 || strings.Contains(got, "did you mean") {
		t.Fatalf("want one clear line, got %q", got)
	}
}

// TestMistypedNamesAreSuggested: a command or a flag one typo away from a
// real one names it.
func TestMistypedNamesAreSuggested(t *testing.T) {
	huddle(t, "statsu").wantError(t, ExitUsage, `unknown command "statsu" (did you mean "status"?) (run 'huddle help')`, "statsu")
	huddle(t, "help", "aprove").wantError(t, ExitUsage, `unknown command "aprove" (did you mean "approve"?)`, "help", "aprove")
	huddle(t, "approve", "x", "--sesion").wantError(t, ExitUsage, "unknown flag --sesion (did you mean --session?) (run 'huddle help approve')", "approve", "--sesion")
	huddle(t, "logs", "a", "-g").wantError(t, ExitUsage, "unknown flag -g (did you mean -f?)", "logs", "-g")
	huddle(t, "approve", "x", "--dir").wantError(t, ExitUsage, "flag needs an argument: --dir", "approve", "--dir")
	huddle(t, "status", "--lost-after", "soon").wantError(t, ExitUsage, `invalid value "soon" for flag --lost-after: `, "status", "--lost-after")
}

// TestHelpFitsEightyColumns: huddle help and every command's flags are
// readable in an 80-column terminal.
func TestHelpFitsEightyColumns(t *testing.T) {
	check := func(what, text string) {
		for line := range strings.SplitSeq(text, "\n") {
			if n := utf8.RuneCountInString(line); n > helpWidth {
				t.Errorf("%s: a line of %d columns:\n%s", what, n, line)
			}
		}
	}
	check("huddle help", huddle(t, "help").wantOK(t, "help").stdout)
	for _, c := range commands {
		var b strings.Builder
		fs := c.flagSet()
		c.flags(fs)
		printFlags(&b, fs)
		check("huddle help "+c.name+"'s flags", b.String())
	}
}

// TestHelpListsEveryCommandInOrder: 'huddle help' lists every command of
// the table, agent too (hidden before), in the table's order: the order a
// person meets them, init, up and attach first.
func TestHelpListsEveryCommandInOrder(t *testing.T) {
	r := huddle(t, "help").wantOK(t, "help")
	var listed []string
	for _, m := range regexp.MustCompile(`(?m)^  ([a-z]+) +\S`).FindAllStringSubmatch(r.stdout, -1) {
		listed = append(listed, m[1])
	}
	var want []string
	for _, c := range commands {
		want = append(want, c.name)
	}
	want = append(want, "help")
	if !reflect.DeepEqual(listed[:3], []string{"init", "up", "attach"}) || !reflect.DeepEqual(listed, want) {
		t.Fatalf("help lists %q\nwant       %q\n%s", listed, want, r.stdout)
	}
}

// TestEveryCommandHasHelp: for every command of the table, 'huddle help
// CMD' and 'huddle CMD -h' print the same help on stdout and exit 0, the
// help describes every flag, and a bad flag is one line on stderr, exit 2.
func TestEveryCommandHasHelp(t *testing.T) {
	for _, c := range commands {
		help := huddle(t, "help", c.name).wantOK(t, "help", c.name)
		if !strings.HasPrefix(help.stdout, "usage: huddle "+c.name+" "+c.synopsis+"\n\n"+c.about+"\n") {
			t.Errorf("huddle help %s:\n%s", c.name, help.stdout)
		}
		fs := c.flagSet()
		c.flags(fs)
		fs.VisitAll(func(f *flag.Flag) {
			// A one-letter flag (logs -f) has one dash.
			if !regexp.MustCompile(`(?m)^  ` + dashed(f.Name) + `( [A-Z][A-Z,=:.]*)?\n      \S`).MatchString(help.stdout) {
				t.Errorf("huddle help %s does not describe --%s:\n%s", c.name, f.Name, help.stdout)
			}
		})
		for _, h := range []string{"-h", "--help"} {
			if r := huddle(t, c.name, h).wantOK(t, c.name, h); r.stdout != help.stdout {
				t.Errorf("huddle %s %s differs from huddle help %s:\n%s", c.name, h, c.name, r.stdout)
			}
		}

		r := huddle(t, c.name, "--bogus")
		r.wantError(t, ExitUsage, "unknown flag --bogus (run 'huddle help "+c.name+"')", c.name, "--bogus")
		if !strings.HasPrefix(r.stderr, "huddle: "+c.name+": ") {
			t.Errorf("huddle %s --bogus: %q does not name the command", c.name, r.stderr)
		}
	}
	r := huddle(t, "approve", "-x")
	if want := "huddle: approve: unknown flag -x (run 'huddle help approve')\n"; r.code != ExitUsage || r.stderr != want {
		t.Errorf("approve -x: exit %d, stderr %q, want %q", r.code, r.stderr, want)
	}
	huddle(t, "help", "nosuch").wantError(t, ExitUsage, `unknown command "nosuch"`, "help", "nosuch")
	huddle(t, "help", "up", "attach").wantError(t, ExitUsage, `unexpected argument "attach"`, "help", "up", "attach")
}

// TestEveryFlagIsInTheSynopsis: the usage line of a command names every
// flag it takes.
func TestEveryFlagIsInTheSynopsis(t *testing.T) {
	for _, c := range commands {
		fs := c.flagSet()
		c.flags(fs)
		fs.VisitAll(func(f *flag.Flag) {
			// -f for a one-letter flag (logs -f), --name for the others.
			if !regexp.MustCompile(`-` + f.Name + `\b`).MatchString(c.synopsis) {
				t.Errorf("huddle %s %s: no --%s", c.name, c.synopsis, f.Name)
			}
		})
		if f := fs.Lookup("dir"); (f != nil) != c.teamDir {
			t.Errorf("huddle %s: --dir is %v, teamDir %v", c.name, f, c.teamDir)
		}
	}
}

// TestFlagsAfterArgumentsAndHuddleDir: flags may follow the positional
// arguments, and $HUDDLE_DIR is the team directory without --dir.
func TestFlagsAfterArgumentsAndHuddleDir(t *testing.T) {
	dir := demoTeam(t)
	createPlan(t, dir, "pl-aaaaaaaaaaaa", "reservas")
	createPlan(t, dir, "pl-bbbbbbbbbbbb", "finanzas")
	createPlan(t, dir, "pl-cccccccccccc", "data")

	mustHuddle(t, "approve", "pl-aaaaaaaaaaaa", "--dir", dir, "--feedback", "after the ID")
	if r := loadRequest(t, dir, "pl-aaaaaaaaaaaa"); r.Status != protocol.RequestApproved || r.Feedback != "after the ID" {
		t.Fatalf("approve ID --dir D: %+v", r)
	}

	env := []string{"HUDDLE_DIR=" + dir}
	huddleIn(t, t.TempDir(), env, "approve", "pl-bbbbbbbbbbbb").wantOK(t, "approve with $HUDDLE_DIR")
	if r := loadRequest(t, dir, "pl-bbbbbbbbbbbb"); r.Status != protocol.RequestApproved {
		t.Fatalf("approve with $HUDDLE_DIR: %+v", r)
	}
	r := huddleIn(t, t.TempDir(), env, "requests", "--json").wantOK(t, "requests with $HUDDLE_DIR")
	if !strings.Contains(r.stdout, "pl-cccccccccccc") || strings.Contains(r.stdout, "pl-bbbbbbbbbbbb") {
		t.Fatalf("requests with $HUDDLE_DIR:\n%s", r.stdout)
	}

	// --dir wins over $HUDDLE_DIR, after the ID too.
	other := demoTeam(t)
	huddleIn(t, t.TempDir(), []string{"HUDDLE_DIR=" + other}, "reject", "pl-cccccccccccc", "--feedback", "no", "--dir", dir).
		wantOK(t, "reject ID --dir D with another $HUDDLE_DIR")
	if r := loadRequest(t, dir, "pl-cccccccccccc"); r.Status != protocol.RequestRejected {
		t.Fatalf("reject ID --dir D: %+v", r)
	}
	huddle(t, "status", "--dir", "").wantError(t, ExitUsage, "--dir is empty", "status --dir ''")
}
