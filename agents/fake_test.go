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

// runFake replays the script of this run as the real CLI printed it,
// reading the host's lines where the real one waited for them (a
// session's protocol: hostReader), every one logged to N.stdin.jsonl.
// A script's lines are printed, except the directives
//
//	#touch NAME      create NAME in the fake's directory
//	#wait-for NAME   wait (up to a minute) until NAME exists there
//	#stderr TEXT     print TEXT on stderr
//	#write NAME TEXT write TEXT to NAME in its working directory
//	#exit N          exit with status N
//
// A host line out of place ends it with status 96; stdin ending, with 0,
// as it ends the real CLI; once the script is over it idles until then.
func runFake() int {
	dir := os.Getenv(fakeDirEnv)
	n := countRuns(dir) + 1
	logRun(dir, fakeRun{N: n, Event: "start", CLI: filepath.Base(os.Args[0]), Args: os.Args[1:], PID: os.Getpid()})
	end := func(code int) int {
		logRun(dir, fakeRun{N: n, Event: "end"})
		return code
	}
	f, err := os.Open(filepath.Join(dir, strconv.Itoa(n)+".jsonl"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake:", err)
		return end(97)
	}
	defer f.Close()
	script := bufio.NewScanner(f)
	script.Buffer(make([]byte, 1<<20), 1<<20)
	hostLog, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(n)+".stdin.jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake:", err)
		return end(97)
	}
	defer hostLog.Close()
	h := &host{in: bufio.NewScanner(os.Stdin), log: hostLog}
	h.in.Buffer(make([]byte, 1<<20), 8<<20)
	var r hostReader
	switch {
	case slices.Contains(os.Args[1:], "--input-format"):
		r = claudeHost{h}
	case len(os.Args) > 1 && os.Args[1] == "app-server":
		r = rpcHost{h}
	default:
		fmt.Fprintf(os.Stderr, "fake: no protocol for %q\n", os.Args[1:])
		return end(97)
	}
	// wait turns the host's answer into how the fake goes on.
	wait := func(ok bool, err error) (code int, stop bool) {
		switch {
		case err != nil:
			fmt.Fprintln(os.Stderr, "fake:", err)
			return 96, true
		case !ok:
			return 0, true
		}
		return 0, false
	}
	if code, stop := wait(r.start()); stop {
		return end(code)
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
		case "#write":
			// What the real CLI's Write did where it runs.
			name, text, _ := strings.Cut(arg, " ")
			_ = os.WriteFile(name, []byte(text+"\n"), 0o600)
			continue
		case "#exit":
			code, _ := strconv.Atoi(arg)
			return end(code)
		}
		if code, stop := wait(r.before(line)); stop {
			return end(code)
		}
		fmt.Println(line)
		if code, stop := wait(r.after(line)); stop {
			return end(code)
		}
	}
	for h.in.Scan() {
		h.logLine()
	}
	return end(0)
}

// host is the host's side of a fake: its lines, each logged as read.
type host struct {
	in  *bufio.Scanner
	log *os.File
}

func (h *host) logLine() { _, _ = h.log.Write(append(append([]byte(nil), h.in.Bytes()...), '\n')) }

// hostReader reads the host's lines where the real CLI waits for them:
// before it starts, before printing a line and after; ok is false when
// stdin ended, err when the host sent something out of place.
type hostReader interface {
	start() (ok bool, err error)
	before(line string) (ok bool, err error)
	after(line string) (ok bool, err error)
}

// claudeHost is Claude Code's control protocol (claude -p --input-format
// stream-json …): a user message before it starts and after each result,
// the answer to each control_request it printed; the host's
// set_permission_mode it answers itself, as the real CLI does.
type claudeHost struct{ *host }

func (c claudeHost) start() (bool, error)        { return c.read("user", "") }
func (c claudeHost) before(string) (bool, error) { return true, nil }
func (c claudeHost) after(line string) (bool, error) {
	var ev struct {
		Type      string `json:"type"`
		RequestID string `json:"request_id"`
	}
	_ = json.Unmarshal([]byte(line), &ev)
	switch ev.Type {
	case "control_request":
		return c.read("control_response", ev.RequestID)
	case "result":
		return c.read("user", "")
	}
	return true, nil
}

// read reads host lines until one of type want (the answer to
// requestID, for a control_response).
func (c claudeHost) read(want, requestID string) (bool, error) {
	for c.in.Scan() {
		c.logLine()
		line := c.in.Bytes()
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

// rpcHost is `codex app-server`'s JSON-RPC: the client's request before
// the response that answers it (by id), the client's answer after each
// request of the server's.
type rpcHost struct{ *host }

type rpcID struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

func (c rpcHost) start() (bool, error) { return true, nil }

func (c rpcHost) before(line string) (bool, error) {
	var m rpcID
	if json.Unmarshal([]byte(line), &m) == nil && len(m.ID) > 0 && m.Method == "" {
		return c.read(string(m.ID), true)
	}
	return true, nil
}

func (c rpcHost) after(line string) (bool, error) {
	var m rpcID
	if json.Unmarshal([]byte(line), &m) == nil && len(m.ID) > 0 && m.Method != "" {
		return c.read(string(m.ID), false)
	}
	return true, nil
}

// read reads client lines until a request (request true) or a response
// with id, notifications skipped.
func (c rpcHost) read(id string, request bool) (bool, error) {
	for c.in.Scan() {
		c.logLine()
		line := c.in.Bytes()
		var m rpcID
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
