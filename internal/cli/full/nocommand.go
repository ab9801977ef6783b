package full

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"huddle/internal/cli"
	"huddle/store/filestore"
	"huddle/team"
)

// withoutCommand is `huddle` alone on a terminal (off one, cli prints the
// usage). With $HUDDLE_STORE set, it attaches to the team kept in that store
// (huddle attach). Otherwise, in a directory whose team directory
// ($HUDDLE_DIR, else .huddle) holds a team.json, it opens that team:
// attached when a runtime runs it, otherwise run after asking on the
// terminal. Elsewhere, or with --keep, it runs the demo team.
func withoutCommand(keep bool, stdin io.Reader, stdout, stderr io.Writer) int {
	if os.Getenv(cli.EnvStore) != "" && !keep {
		return cli.Execute(runs{}, "attach", nil, stdout, stderr)
	}
	dir := cli.DefaultTeamDir()
	if _, err := os.Stat(team.ConfigPath(dir)); err == nil && !keep {
		return openTeam(dir, stdin, stdout, stderr)
	}
	return runDemo(keep, stdout, stderr)
}

// openTeam attaches to the team in dir when a runtime holds its lock, and
// otherwise asks whether to run it: `huddle up` on yes. Without a terminal
// to ask on it refuses rather than start a team nobody agreed to.
func openTeam(dir string, stdin io.Reader, stdout, stderr io.Writer) int {
	if st, err := team.ProbeRuntime(dir); err == nil && st.Running {
		return cli.Execute(runs{}, "attach", []string{"--dir", dir}, stdout, stderr)
	}
	if !cli.IsTerminalInput(stdin) {
		fmt.Fprintf(stderr, "huddle: %s holds a team that is not running, and stdin is not a terminal to ask whether to run it (run 'huddle up --dir %s')\n", dir, dir)
		return cli.ExitFail
	}
	name := dir
	if t, err := team.Load(dir); err == nil {
		name = t.Name + " (" + dir + ")"
	}
	fmt.Fprintf(stdout, "the team %s is not running. run it? [Y/n] ", name)
	answer, err := bufio.NewReader(stdin).ReadString('\n')
	switch {
	case errors.Is(err, io.EOF) && answer == "":
		fmt.Fprintln(stdout)
		fmt.Fprintln(stderr, "huddle: no answer: the team was not started")
		return cli.ExitFail
	case err != nil && !errors.Is(err, io.EOF):
		fmt.Fprintf(stderr, "huddle: reading the answer: %v\n", err)
		return cli.ExitFail
	}
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "", "y", "yes":
		return cli.Execute(runs{}, "up", []string{"--dir", dir}, stdout, stderr)
	case "n", "no":
		fmt.Fprintf(stdout, "not started ('huddle up --dir %s' runs it, 'huddle --keep' runs the demo)\n", dir)
		return cli.ExitOK
	}
	fmt.Fprintf(stderr, "huddle: %q is not an answer: the team was not started (answer y or n)\n", strings.TrimSpace(answer))
	return cli.ExitUsage
}

// runDemo runs the embedded demo team in a fresh directory and shows it in
// this process. The directory is removed on exit unless keep, when where it
// is and how to look at it again are printed.
func runDemo(keep bool, stdout, stderr io.Writer) int {
	dir, err := os.MkdirTemp("", "huddle-demo-")
	if err != nil {
		fmt.Fprintf(stderr, "huddle: %v\n", err)
		return cli.ExitFail
	}
	code := runDemoIn(dir, stderr)
	if keep {
		fmt.Fprintf(stdout, "the demo team's directory is kept: %s\n(huddle attach --dir %s looks at it again; huddle up --dir %s runs it again)\n", dir, dir, dir)
		return code
	}
	if err := os.RemoveAll(dir); err != nil {
		fmt.Fprintf(stderr, "huddle: removing the demo's directory: %v\n", err)
		return cli.ExitFail
	}
	return code
}

func runDemoIn(dir string, stderr io.Writer) int {
	if err := team.Init(dir); err != nil {
		fmt.Fprintf(stderr, "huddle: %v\n", err)
		return cli.ExitFail
	}
	ctx, stop := cli.SignalContext()
	defer stop()
	st, err := filestore.Open(dir)
	if err != nil {
		fmt.Fprintf(stderr, "huddle: %v\n", err)
		return cli.ExitFail
	}
	defer st.Close()
	ui, closeStore, err := dirUI(ctx, dir)
	if err != nil {
		fmt.Fprintf(stderr, "huddle: %v\n", err)
		return cli.ExitFail
	}
	defer closeStore()
	if err := runUnderUI(ctx, st, dir, runtimeOptions(false), ui); err != nil {
		fmt.Fprintf(stderr, "huddle: %v\n", err)
		return cli.ExitFail
	}
	return cli.ExitOK
}
