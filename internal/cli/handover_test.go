package cli

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// aloneHuddle copies the built huddle into a directory of its own, with
// huddle-full beside it when withFull, and returns its path.
func aloneHuddle(t *testing.T, withFull bool) string {
	t.Helper()
	built := filepath.Dir(huddleBinary(t))
	dir := t.TempDir()
	names := []string{"huddle"}
	if withFull {
		names = append(names, fullBinary)
	}
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(built, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "huddle")
}

// runBinary runs bin in cwd with env added and returns its stdout, its
// stderr and its exit code.
func runBinary(t *testing.T, bin, cwd string, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = cwd
	cmd.Env = append(append(os.Environ(), "HUDDLE_DIR=", "HUDDLE_STORE=", "OTEL_EXPORTER_OTLP_ENDPOINT=", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="), env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), code
}

// TestHandOverRunsHuddleFull: a command of huddle-full's run through
// huddle is huddle-full's to the end, its error line and exit code
// included; huddle alone still parses its flags and prints its help, and
// says in one line what to install when huddle-full is not beside it;
// with the OpenTelemetry variables set, even version is handed over (the
// export is huddle-full's); a huddle-full of another build is refused.
func TestHandOverRunsHuddleFull(t *testing.T) {
	outside := t.TempDir() // not in huddle's source: nothing is built
	team := filepath.Join(t.TempDir(), ".huddle")

	// Through the pair: attach's own refusal of a stdout that is no
	// terminal, from huddle-full, exit 2.
	pair := aloneHuddle(t, true)
	_, stderr, code := runBinary(t, pair, outside, nil, "attach", "--dir", team)
	if code != ExitUsage || stderr != "huddle: attach: stdout is not a terminal, and the UI needs one ('huddle up --headless' prints events instead)\n" {
		t.Fatalf("attach through huddle-full: exit %d, stderr %q", code, stderr)
	}

	alone := aloneHuddle(t, false)
	_, stderr, code = runBinary(t, alone, outside, nil, "attach", "--dir", team)
	if code != ExitFail || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "huddle-full") || !strings.Contains(stderr, "go install . ./cmd/...") {
		t.Fatalf("attach without huddle-full: exit %d, stderr %q", code, stderr)
	}
	if stdout, _, code := runBinary(t, alone, outside, nil, "help", "attach"); code != ExitOK || !strings.HasPrefix(stdout, "usage: huddle attach ") {
		t.Fatalf("help attach without huddle-full: exit %d\n%s", code, stdout)
	}
	if _, stderr, code := runBinary(t, alone, outside, nil, "up", "--bogus"); code != ExitUsage || !strings.Contains(stderr, "unknown flag --bogus") {
		t.Fatalf("up --bogus without huddle-full: exit %d, stderr %q", code, stderr)
	}

	otel := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:1"}
	if stdout, _, code := runBinary(t, alone, outside, nil, "version"); code != ExitOK || !strings.HasPrefix(stdout, "huddle ") {
		t.Fatalf("version alone: exit %d, stdout %q", code, stdout)
	}
	if _, stderr, code := runBinary(t, alone, outside, otel, "version"); code != ExitFail || !strings.Contains(stderr, "huddle-full") {
		t.Fatalf("version alone with OTEL_EXPORTER_OTLP_ENDPOINT: exit %d, stderr %q (want it handed over)", code, stderr)
	}
	if stdout, _, code := runBinary(t, pair, outside, otel, "version"); code != ExitOK || !strings.HasPrefix(stdout, "huddle ") {
		t.Fatalf("version through huddle-full with OTEL_EXPORTER_OTLP_ENDPOINT: exit %d, stdout %q", code, stdout)
	}

	// A program of another module where huddle-full should be.
	other := buildProgram(t, "other", map[string]string{
		"go.mod":  "module other\n\ngo 1.26\n",
		"main.go": "package main\n\nfunc main() { println(\"not huddle\") }\n",
	})
	b, err := os.ReadFile(other)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(alone), fullBinary), b, 0o755); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = runBinary(t, alone, outside, nil, "attach", "--dir", team)
	if code != ExitFail || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "another build") || strings.Contains(stderr, "not huddle") {
		t.Fatalf("attach beside a huddle-full of another build: exit %d, stderr %q", code, stderr)
	}
}

// TestHandOverBuildsFromTheSource: huddle without huddle-full beside it,
// run in huddle's source (as go run . runs it), builds huddle-full into
// the user's cache directory and hands the command to it.
func TestHandOverBuildsFromTheSource(t *testing.T) {
	if testing.Short() {
		t.Skip("links huddle-full")
	}
	source, err := filepath.Abs("../..") // the module's root
	if err != nil {
		t.Fatal(err)
	}
	// The user's cache directory is the test's; go's build cache stays
	// where it is (else under the new XDG_CACHE_HOME, empty).
	gocache, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	env := []string{"XDG_CACHE_HOME=" + cache, "GOCACHE=" + strings.TrimSpace(string(gocache))}
	alone := aloneHuddle(t, false)
	team := filepath.Join(t.TempDir(), ".huddle")
	_, stderr, code := runBinary(t, alone, source, env, "attach", "--dir", team)
	// The build may say it is under way; the last line is huddle-full's.
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	if code != ExitUsage || lines[len(lines)-1] != "huddle: attach: stdout is not a terminal, and the UI needs one ('huddle up --headless' prints events instead)" {
		t.Fatalf("attach from the source: exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(cache, "huddle", "bin", fullBinary)); err != nil {
		t.Fatalf("huddle-full was not built in the cache: %v", err)
	}
}
