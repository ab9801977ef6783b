package cli

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"huddle/store"
)

// fullBinary is the binary that has every command (cmd/huddle-full).
const fullBinary = "huddle-full"

// handOver is Full in huddle: each of its commands runs in huddle-full,
// which replaces this process (syscall.Exec) given the same command line,
// so the terminal, the signals and the exit code are huddle-full's.
// huddle-full is found beside this executable, from the same build; from
// huddle's source (go run .) it is built there first (fullFromSource).
type handOver struct {
	args   []string // the command line, without the program's name
	stderr io.Writer
}

// run executes huddle-full with h's command line; it returns only when
// that fails, said in one line that names the command.
func (h handOver) run() int {
	err := h.exec()
	if len(h.args) > 0 {
		err = fmt.Errorf("%s: %w", h.args[0], err)
	}
	fmt.Fprintf(h.stderr, "huddle: %v\n", err)
	return ExitFail
}

// exec replaces this process with huddle-full given h's command line, and
// returns why when it cannot.
func (h handOver) exec() error {
	bin, err := findFull(h.stderr)
	if err != nil {
		return err
	}
	err = syscall.Exec(bin, append([]string{bin}, h.args...), os.Environ())
	return fmt.Errorf("running %s: %w", bin, err)
}

func (h handOver) Up(*Cmdline, *UpFlags) int            { return h.run() }
func (h handOver) Attach(*Cmdline, *NotifyFlags) int    { return h.run() }
func (h handOver) Call(*Cmdline, *CallFlags) int        { return h.run() }
func (h handOver) Claude(*Cmdline, *ClaudeFlags) int    { return h.run() }
func (h handOver) Serve(*Cmdline, *ServeFlags) int      { return h.run() }
func (h handOver) MCP(*Cmdline, *MCPFlags) int          { return h.run() }
func (h handOver) SSH(*Cmdline, *SSHFlags) int          { return h.run() }
func (h handOver) Replay(*Cmdline, float64) int         { return h.run() }
func (h handOver) ExportTraces(io.Writer) (stop func()) { return func() {} }

func (h handOver) OpenStore(context.Context, string, string) (store.Store, error) {
	return nil, h.exec()
}

func (h handOver) NoCommand(bool, io.Reader, io.Writer, io.Writer) int { return h.run() }

// findFull is huddle-full beside this executable when it is of the same
// build, else built from huddle's source when this process runs in it.
// A huddle-full elsewhere on PATH is not looked for: it may be of another
// version, and huddle would then run commands that are not its own.
func findFull(progress io.Writer) (string, error) {
	beside, dir := besideExecutable(fullBinary)
	if beside != "" {
		if err := sameBuild(beside); err != nil {
			return "", err
		}
		return beside, nil
	}
	bin, err := fullFromSource(progress)
	if err == nil {
		return bin, nil
	}
	if !errors.Is(err, errNoSource) {
		return "", err
	}
	return "", fmt.Errorf("this command runs in %s, the binary that holds the runtime, the screen and the servers, and it is not beside huddle (%s): install both from huddle's source with 'CGO_ENABLED=0 go install . ./cmd/...'", fullBinary, dir)
}

// besideExecutable is the executable file name in this executable's
// directory ("" when there is none), and that directory ("" when it is
// not known).
func besideExecutable(name string) (path, dir string) {
	exe, err := os.Executable()
	if err != nil {
		return "", ""
	}
	dir = filepath.Dir(exe)
	path = filepath.Join(dir, name)
	if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		return "", dir
	}
	return path, dir
}

// sameBuild checks that the binary at path was built as this one was
// (buildStamp).
func sameBuild(path string) error {
	own, ok := debug.ReadBuildInfo()
	if !ok {
		return nil // no build information to compare (a test binary)
	}
	other, err := buildinfo.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if a, b := buildStamp(own), buildStamp(other); a != b {
		return fmt.Errorf("%s is of another build (%s) than this huddle (%s): install both again from huddle's source with 'CGO_ENABLED=0 go install . ./cmd/...'", path, b, a)
	}
	return nil
}

// buildStamp is what tells two builds of huddle apart as far as go
// stamped them: the module, the Go release, the module's version and,
// when go stamped them (-buildvcs), the commit and whether the tree was
// modified.
func buildStamp(bi *debug.BuildInfo) string {
	s := bi.Main.Path + " " + bi.GoVersion + " " + bi.Main.Version
	for _, kv := range bi.Settings {
		switch kv.Key {
		case "vcs.revision":
			s += " " + kv.Value
		case "vcs.modified":
			if kv.Value == "true" {
				s += "+modified"
			}
		}
	}
	return s
}

// errNoSource: this process does not run in huddle's source.
var errNoSource = errors.New("not in huddle's source")

// fullFromSource builds huddle-full with the go command when the working
// directory is in huddle's module (go list -m says so; go run . from a
// clone), into huddle's cache directory, and returns its path. go
// rebuilds only what changed; when that takes more than a second a line
// says what is going on.
func fullFromSource(progress io.Writer) (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", errNoSource
	}
	out, err := exec.Command(goBin, "list", "-m", "-f", "{{.Path}}\t{{.Dir}}").Output()
	if err != nil {
		return "", errNoSource
	}
	source := ""
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if path, dir, _ := strings.Cut(line, "\t"); path == "huddle" {
			source = dir
		}
	}
	if source == "" {
		return "", errNoSource
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("building %s: %w", fullBinary, err)
	}
	bin := filepath.Join(cache, "huddle", "bin", fullBinary)
	build := exec.Command(goBin, "build", "-o", bin, "huddle/cmd/"+fullBinary)
	build.Dir = source
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // as the README installs it
	var errOut bytes.Buffer
	build.Stdout, build.Stderr = &errOut, &errOut
	if err := build.Start(); err != nil {
		return "", fmt.Errorf("building %s: %w", fullBinary, err)
	}
	done := make(chan error, 1)
	go func() { done <- build.Wait() }() // owner: fullFromSource, which waits for it below
	select {
	case err = <-done:
	case <-time.After(time.Second):
		fmt.Fprintf(progress, "huddle: building %s from the source in %s (the first time takes a minute)…\n", fullBinary, build.Dir)
		err = <-done
	}
	if err != nil {
		first, _, _ := strings.Cut(strings.TrimSpace(errOut.String()), "\n")
		return "", fmt.Errorf("building %s from the source in %s: %v: %s", fullBinary, build.Dir, err, first)
	}
	return bin, nil
}
