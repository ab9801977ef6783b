package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"huddle/internal/testkit"
	"huddle/team"
)

// projectWithTeam is a directory whose .huddle holds the demo team.
func projectWithTeam(t *testing.T) (project, dir string) {
	t.Helper()
	project = t.TempDir()
	dir = filepath.Join(project, ".huddle")
	r := mustHuddle(t, "init", "--dir", dir)
	if !strings.HasSuffix(r.stdout, "next: huddle up --dir "+dir+"\n") {
		t.Fatalf("init does not say what to do next:\n%s", r.stdout)
	}
	return project, dir
}

func hasRun(t *testing.T, dir string) bool {
	t.Helper()
	st, err := team.ProbeRuntime(dir)
	if err != nil {
		t.Fatal(err)
	}
	return team.HasRun(st)
}

// TestNoCommandAsksBeforeRunningTheTeam: `huddle` in a project whose
// .huddle holds a team that no runtime runs asks first; "n" starts
// nothing, enter (yes) runs it with the UI.
func TestNoCommandAsksBeforeRunningTheTeam(t *testing.T) {
	project, dir := projectWithTeam(t)

	no := startOnPTY(t, project, nil, nil)
	no.waitFor(t, "run it? [Y/n]")
	no.typeKeys(t, "n\r")
	if code := no.exit(t); code != ExitOK {
		t.Fatalf("answered n: exit %d\n%s", code, no.output())
	}
	if !strings.Contains(no.output(), "not started ('huddle up --dir .huddle' runs it") {
		t.Fatalf("answered n:\n%s", no.output())
	}
	if hasRun(t, dir) {
		t.Fatal("answered n, and a runtime ran the team")
	}

	yes := startOnPTY(t, project, nil, nil)
	yes.waitFor(t, "run it? [Y/n]")
	yes.typeKeys(t, "\r")
	yes.waitFor(t, "Roster")
	testkit.WaitFor(t, 10e9, "a runtime to run the team", func() bool { return hasRun(t, dir) })
	yes.typeKeys(t, "\x03") // ctrl+c
	if code := yes.exit(t); code != ExitOK {
		t.Fatalf("answered yes, then ctrl+c: exit %d\n%s", code, yes.outputTail())
	}
	if st, _ := team.ProbeRuntime(dir); st.Running || st.Last.Stopped == nil {
		t.Fatalf("after ctrl+c the runtime is %+v, want stopped cleanly", st)
	}
}

// TestNoCommandWithoutATerminalToAskRefuses: stdin not a terminal (a
// script), the team not running: one line, exit 1, nothing started.
func TestNoCommandWithoutATerminalToAskRefuses(t *testing.T) {
	project, dir := projectWithTeam(t)
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	p := startOnPTY(t, project, nil, devNull)
	if code := p.exit(t); code != ExitFail {
		t.Fatalf("exit %d, want 1\n%s", code, p.output())
	}
	want := "huddle: .huddle holds a team that is not running, and stdin is not a terminal to ask whether to run it (run 'huddle up --dir .huddle')\r\n"
	if p.output() != want {
		t.Fatalf("terminal shows %q\nwant %q", p.output(), want)
	}
	if hasRun(t, dir) {
		t.Fatal("a runtime ran the team")
	}
}

// TestNoCommandAttachesToARunningTeam: with a runtime running the team,
// `huddle` attaches without asking, and quitting leaves the team running.
func TestNoCommandAttachesToARunningTeam(t *testing.T) {
	project, dir := projectWithTeam(t)
	up := startUp(t, dir)
	testkit.WaitFor(t, 10e9, "the team to start", func() bool { return up.saw(func(e map[string]any) bool { return e["event"] == "team_started" }) })

	p := startOnPTY(t, project, nil, nil)
	p.waitFor(t, "attached to .huddle")
	if strings.Contains(p.output(), "run it?") {
		t.Fatalf("asked to run a team that runs:\n%s", p.outputTail())
	}
	p.typeKeys(t, "\x03")
	if code := p.exit(t); code != ExitOK {
		t.Fatalf("exit %d\n%s", code, p.outputTail())
	}
	if st, _ := team.ProbeRuntime(dir); !st.Running {
		t.Fatal("quitting the attached UI stopped the team")
	}
}

// TestDemoDirectoryIsRemovedUnlessKept: the demo's directory is gone after
// the demo ends; with --keep it stays and its path is printed.
func TestDemoDirectoryIsRemovedUnlessKept(t *testing.T) {
	for _, keep := range []bool{false, true} {
		tmp := t.TempDir()
		var args []string
		if keep {
			args = []string{"--keep"}
		}
		p := startOnPTY(t, t.TempDir(), []string{"TMPDIR=" + tmp}, nil, args...)
		p.waitFor(t, "puruto-demo")
		testkit.WaitFor(t, 10e9, "the demo's directory", func() bool {
			m, _ := filepath.Glob(filepath.Join(tmp, "huddle-demo-*", "team.json"))
			return len(m) == 1
		})
		p.typeKeys(t, "\x03")
		if code := p.exit(t); code != ExitOK {
			t.Fatalf("--keep %v: exit %d\n%s", keep, code, p.outputTail())
		}
		left, _ := filepath.Glob(filepath.Join(tmp, "huddle-demo-*"))
		if !keep {
			if len(left) != 0 {
				t.Fatalf("the demo left %v", left)
			}
			continue
		}
		if len(left) != 1 || !strings.Contains(p.output(), "the demo team's directory is kept: "+left[0]) {
			t.Fatalf("--keep: left %v, printed %s", left, p.outputTail())
		}
	}
}
