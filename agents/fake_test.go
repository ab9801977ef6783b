package agents_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"huddle/internal/cli"
)

// The test binary is three programs. Run under the name claude or codex (a
// symlink fakeCLI makes) it is a fake of that CLI; with huddleEnv set it is
// huddle itself (the runtime's exec members run `huddle agent …` through
// it); otherwise it runs the tests.
const huddleEnv = "HUDDLE_AGENTS_TEST_HUDDLE"

// fakeDirEnv names the fake's directory: its scripts (1.jsonl for its first
// run, 2.jsonl for the second, …), the log of its runs (runs.jsonl) and
// the files its directives touch and wait for.
const fakeDirEnv = "HUDDLE_AGENTS_FAKE_DIR"

func TestMain(m *testing.M) {
	switch filepath.Base(os.Args[0]) {
	case "claude", "codex":
		os.Exit(runFake())
	}
	if os.Getenv(huddleEnv) == "1" {
		os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// fakeRun is one line of runs.jsonl: a run of the fake started (with its
// arguments) or ended.
type fakeRun struct {
	N     int      `json:"n"`
	Event string   `json:"event"` // start | end
	CLI   string   `json:"cli,omitempty"`
	Args  []string `json:"args,omitempty"`
	PID   int      `json:"pid,omitempty"`
}

// runFake replays the script of this run: each line is printed as the
// CLI's output, except the directives
//
//	#touch NAME      create NAME in the fake's directory
//	#wait-for NAME   wait (up to a minute) until NAME exists there
//	#stderr TEXT     print TEXT on stderr
//	#exit N          exit with status N
func runFake() int {
	dir := os.Getenv(fakeDirEnv)
	n := countRuns(dir) + 1
	logRun(dir, fakeRun{N: n, Event: "start", CLI: filepath.Base(os.Args[0]), Args: os.Args[1:], PID: os.Getpid()})
	f, err := os.Open(filepath.Join(dir, strconv.Itoa(n)+".jsonl"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake:", err)
		return 97
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		verb, arg, _ := strings.Cut(line, " ")
		switch verb {
		case "#touch":
			_ = os.WriteFile(filepath.Join(dir, arg), nil, 0o600)
		case "#wait-for":
			if !waitForFile(filepath.Join(dir, arg), time.Minute) {
				fmt.Fprintln(os.Stderr, "fake: gave up waiting for", arg)
				return 98
			}
		case "#stderr":
			fmt.Fprintln(os.Stderr, arg)
		case "#exit":
			code, _ := strconv.Atoi(arg)
			logRun(dir, fakeRun{N: n, Event: "end"})
			return code
		default:
			fmt.Println(line)
		}
	}
	logRun(dir, fakeRun{N: n, Event: "end"})
	return 0
}

// waitForFile polls for path: the fake is a helper process with a deadline,
// not a test asserting a time.
func waitForFile(path string, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return false
}

func countRuns(dir string) int {
	n := 0
	for _, r := range readRuns(dir) {
		if r.Event == "start" {
			n++
		}
	}
	return n
}

func logRun(dir string, r fakeRun) {
	b, _ := json.Marshal(r)
	f, err := os.OpenFile(filepath.Join(dir, "runs.jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake:", err)
		return
	}
	defer f.Close()
	_, _ = f.Write(append(b, '\n')) // one write: the log's lines never interleave
}

func readRuns(dir string) []fakeRun {
	b, _ := os.ReadFile(filepath.Join(dir, "runs.jsonl"))
	var runs []fakeRun
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r fakeRun
		if json.Unmarshal([]byte(l), &r) == nil {
			runs = append(runs, r)
		}
	}
	return runs
}

// fake is a fake CLI set up for one test: its binary (a symlink to the
// test binary named like the CLI) and its directory.
type fake struct {
	bin, dir string
}

// newFake makes a fake of cli (claude or codex) that replays scripts, the
// recorded streams of testdata, one per run in order.
func newFake(t *testing.T, cliName string, scripts ...string) *fake {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(t.TempDir(), cliName)
	if err := os.Symlink(exe, bin); err != nil {
		t.Fatal(err)
	}
	for i, s := range scripts {
		b, err := os.ReadFile(filepath.Join("testdata", s))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(i+1)+".jsonl"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(fakeDirEnv, dir)
	return &fake{bin: bin, dir: dir}
}

// starts is the arguments of each run started so far.
func (f *fake) starts() [][]string {
	var out [][]string
	for _, r := range readRuns(f.dir) {
		if r.Event == "start" {
			out = append(out, r.Args)
		}
	}
	return out
}

// touch creates a file a script waits for.
func (f *fake) touch(t *testing.T, name string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(f.dir, name), nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

func (f *fake) exists(name string) bool {
	_, err := os.Stat(filepath.Join(f.dir, name))
	return err == nil
}
