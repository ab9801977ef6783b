package agents_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
	if slices.Contains(os.Args[1:], "--input-format") {
		return runSessionFake(dir, n, sc)
	}
	if len(os.Args) > 1 && os.Args[1] == "app-server" {
		return runRPCFake(dir, n, sc)
	}
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

// runSessionFake is a fake Claude Code session on the control protocol
// (claude -p --input-format stream-json …): it replays its script as the
// real CLI printed it, reading the host's lines where the real one waited
// for them: a user message before it starts and after each result, the
// answer to each control_request it printed. It answers the host's
// set_permission_mode itself, as the real CLI does, and logs every host
// line to N.stdin.jsonl. A host line out of place is an error (status 96);
// stdin ending ends it with status 0, as it ends the real CLI.
func runSessionFake(dir string, n int, script *bufio.Scanner) int {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 8<<20)
	host, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(n)+".stdin.jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake:", err)
		return 97
	}
	defer host.Close()
	end := func(code int) int {
		logRun(dir, fakeRun{N: n, Event: "end"})
		return code
	}
	// read reads host lines until one of type want (answering the
	// host's own control requests meanwhile); false when stdin ended.
	read := func(want, requestID string) (bool, error) {
		for in.Scan() {
			line := in.Bytes()
			_, _ = host.Write(append(append([]byte(nil), line...), '\n'))
			var l struct {
				Type      string `json:"type"`
				RequestID string `json:"request_id"`
				Request   struct {
					Subtype string `json:"subtype"`
					Mode    string `json:"mode"`
				} `json:"request"`
				Response struct {
					RequestID string `json:"request_id"`
				} `json:"response"`
			}
			if err := json.Unmarshal(line, &l); err != nil {
				return false, fmt.Errorf("a host line that is not JSON: %q", line)
			}
			switch {
			case l.Type == "control_request" && l.Request.Subtype == "set_permission_mode":
				fmt.Printf(`{"type":"control_response","response":{"subtype":"success","request_id":%q,"response":{"mode":%q}}}`+"\n", l.RequestID, l.Request.Mode)
				fmt.Printf(`{"type":"system","subtype":"status","status":null,"permissionMode":%q,"session_id":"fake"}`+"\n", l.Request.Mode)
			case l.Type != want:
				return false, fmt.Errorf("the host sent a %s where a %s was due: %s", l.Type, want, line)
			case want == "control_response" && l.Response.RequestID != requestID:
				return false, fmt.Errorf("the host answered %s, not the pending %s", l.Response.RequestID, requestID)
			default:
				return true, nil
			}
		}
		return false, nil
	}
	wait := func(want, id string) (ok bool, code int) {
		ok, err := read(want, id)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fake:", err)
			return false, end(96)
		}
		if !ok {
			return false, end(0)
		}
		return true, 0
	}
	if ok, code := wait("user", ""); !ok {
		return code
	}
	for script.Scan() {
		line := script.Text()
		verb, arg, _ := strings.Cut(line, " ")
		switch verb {
		case "#touch":
			_ = os.WriteFile(filepath.Join(dir, arg), nil, 0o600)
			continue
		case "#wait-for":
			if !waitForFile(filepath.Join(dir, arg), time.Minute) {
				fmt.Fprintln(os.Stderr, "fake: gave up waiting for", arg)
				return end(98)
			}
			continue
		case "#stderr":
			fmt.Fprintln(os.Stderr, arg)
			continue
		case "#exit":
			code, _ := strconv.Atoi(arg)
			return end(code)
		}
		fmt.Println(line)
		var ev struct {
			Type      string `json:"type"`
			RequestID string `json:"request_id"`
		}
		_ = json.Unmarshal([]byte(line), &ev)
		switch ev.Type {
		case "control_request":
			if ok, code := wait("control_response", ev.RequestID); !ok {
				return code
			}
		case "result":
			if ok, code := wait("user", ""); !ok {
				return code
			}
		}
	}
	for in.Scan() { // the script is over: the session idles until stdin ends
		_, _ = host.Write(append(append([]byte(nil), in.Bytes()...), '\n'))
	}
	return end(0)
}

// runRPCFake is a fake `codex app-server`: it replays its script as the
// real server printed it, reading the client's lines where the real one
// waited for them: the request a response answers (by id) before the
// response, the client's answer to each request of the server's after it.
// Every client line is logged to N.stdin.jsonl; a response the client
// sends to an id the server did not ask is an error (status 96).
func runRPCFake(dir string, n int, script *bufio.Scanner) int {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 8<<20)
	host, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(n)+".stdin.jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake:", err)
		return 97
	}
	defer host.Close()
	end := func(code int) int {
		logRun(dir, fakeRun{N: n, Event: "end"})
		return code
	}
	type rpc struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	// waitFor reads client lines until a request (request true) or a
	// response with id; false when stdin ended.
	waitFor := func(id string, request bool) (bool, error) {
		for in.Scan() {
			line := in.Bytes()
			_, _ = host.Write(append(append([]byte(nil), line...), '\n'))
			var m rpc
			if err := json.Unmarshal(line, &m); err != nil {
				return false, fmt.Errorf("a client line that is not JSON: %q", line)
			}
			if len(m.ID) == 0 {
				continue // a notification
			}
			isRequest := m.Method != ""
			if isRequest == request && string(m.ID) == id {
				return true, nil
			}
			if !isRequest {
				return false, fmt.Errorf("the client answered %s where %s was due", m.ID, id)
			}
			return false, fmt.Errorf("the client asked %s (%s) where %s was due", m.Method, m.ID, id)
		}
		return false, nil
	}
	for script.Scan() {
		line := script.Text()
		verb, arg, _ := strings.Cut(line, " ")
		switch verb {
		case "#touch":
			_ = os.WriteFile(filepath.Join(dir, arg), nil, 0o600)
			continue
		case "#wait-for":
			if !waitForFile(filepath.Join(dir, arg), time.Minute) {
				fmt.Fprintln(os.Stderr, "fake: gave up waiting for", arg)
				return end(98)
			}
			continue
		case "#stderr":
			fmt.Fprintln(os.Stderr, arg)
			continue
		case "#exit":
			code, _ := strconv.Atoi(arg)
			return end(code)
		}
		var m rpc
		_ = json.Unmarshal([]byte(line), &m)
		response := len(m.ID) > 0 && m.Method == ""
		if response {
			ok, err := waitFor(string(m.ID), true)
			if err != nil {
				fmt.Fprintln(os.Stderr, "fake:", err)
				return end(96)
			}
			if !ok {
				return end(0)
			}
		}
		fmt.Println(line)
		if len(m.ID) > 0 && m.Method != "" {
			ok, err := waitFor(string(m.ID), false)
			if err != nil {
				fmt.Fprintln(os.Stderr, "fake:", err)
				return end(96)
			}
			if !ok {
				return end(0)
			}
		}
	}
	for in.Scan() {
		_, _ = host.Write(append(append([]byte(nil), in.Bytes()...), '\n'))
	}
	return end(0)
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
	var texts []string
	for _, s := range scripts {
		b, err := os.ReadFile(filepath.Join("testdata", s))
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, string(b))
	}
	return newFakeOf(t, cliName, texts...)
}

// newFakeOf makes a fake of cli that replays the scripts given whole.
func newFakeOf(t *testing.T, cliName string, scripts ...string) *fake {
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
		if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(i+1)+".jsonl"), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(fakeDirEnv, dir)
	return &fake{bin: bin, dir: dir}
}

// hostLines are the lines the host wrote to run n of a session fake.
func (f *fake) hostLines(t *testing.T, n int) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.dir, strconv.Itoa(n)+".stdin.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for l := range strings.Lines(string(b)) {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("host line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
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
