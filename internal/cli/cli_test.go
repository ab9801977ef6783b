package cli

import (
	"bytes"
	"flag"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"huddle/protocol"
)

func TestNoArgumentsPrintsUsageAndExitsZero(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := Main(nil, &out, &errOut); code != exitOK {
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
	if code := Main([]string{"frobnicate"}, &out, &errOut); code != exitUsage {
		t.Fatalf("exit %d, want 2", code)
	}
	if got := errOut.String(); !strings.Contains(got, `unknown command "frobnicate"`) || strings.Count(got, "\n") != 1 {
		t.Fatalf("want one clear line, got %q", got)
	}
}

// TestHelpListsEveryCommandInOrder: 'huddle help' lists every command of
// the table, hidden ones too, in the order a person meets them.
func TestHelpListsEveryCommandInOrder(t *testing.T) {
	r := huddle(t, "help").wantOK(t, "help")
	var listed []string
	for _, m := range regexp.MustCompile(`(?m)^  ([a-z]+) +\S`).FindAllStringSubmatch(r.stdout, -1) {
		listed = append(listed, m[1])
	}
	want := []string{"init", "up", "attach", "status", "requests", "approve", "reject", "shutdown", "send", "broadcast",
		"call", "invoke", "serve", "traces", "validate", "agent", "help"}
	if !reflect.DeepEqual(listed, want) {
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
			if !regexp.MustCompile(`(?m)^  -` + f.Name + `( |$)`).MatchString(help.stdout) {
				t.Errorf("huddle help %s does not describe --%s:\n%s", c.name, f.Name, help.stdout)
			}
		})
		for _, h := range []string{"-h", "--help"} {
			if r := huddle(t, c.name, h).wantOK(t, c.name, h); r.stdout != help.stdout {
				t.Errorf("huddle %s %s differs from huddle help %s:\n%s", c.name, h, c.name, r.stdout)
			}
		}

		r := huddle(t, c.name, "--bogus")
		r.wantError(t, exitUsage, "flag provided but not defined: -bogus (run 'huddle help "+c.name+"')", c.name, "--bogus")
		if !strings.HasPrefix(r.stderr, "huddle: "+c.name+": ") {
			t.Errorf("huddle %s --bogus: %q does not name the command", c.name, r.stderr)
		}
	}
	r := huddle(t, "approve", "-x")
	if want := "huddle: approve: flag provided but not defined: -x (run 'huddle help approve')\n"; r.code != exitUsage || r.stderr != want {
		t.Errorf("approve -x: exit %d, stderr %q, want %q", r.code, r.stderr, want)
	}
	huddle(t, "help", "nosuch").wantError(t, exitUsage, `unknown command "nosuch"`, "help", "nosuch")
	huddle(t, "help", "up", "attach").wantError(t, exitUsage, `unexpected argument "attach"`, "help", "up", "attach")
}

// TestEveryFlagIsInTheSynopsis: the usage line of a command names every
// flag it takes.
func TestEveryFlagIsInTheSynopsis(t *testing.T) {
	for _, c := range commands {
		fs := c.flagSet()
		c.flags(fs)
		fs.VisitAll(func(f *flag.Flag) {
			if !regexp.MustCompile(`--` + f.Name + `\b`).MatchString(c.synopsis) {
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
	huddle(t, "status", "--dir", "").wantError(t, exitUsage, "--dir is empty", "status --dir ''")
}
