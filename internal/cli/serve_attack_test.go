package cli

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/ipc/blueprint"
	"huddle/protocol"
	"huddle/team"
)

// serveProcess is a running `huddle serve` a test may kill -9.
type serveProcess struct {
	cmd    *exec.Cmd
	stderr *testkit.Buffer
}

// startServeProcess runs `huddle serve` and waits for its address line; the
// cleanup interrupts it unless the test killed it already.
func startServeProcess(t *testing.T, dir, addr string, extra ...string) *serveProcess {
	t.Helper()
	cmd := exec.Command(huddleBinary(t), append([]string{"serve", "--dir", dir, "--addr", addr}, extra...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &serveProcess{cmd: cmd, stderr: &testkit.Buffer{}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.Contains(line, "on http://"+addr) {
		t.Fatalf("huddle serve: %q %v (stderr %s)", line, err, p.stderr.String())
	}
	return p
}

// kill9 kills the server the hard way and waits until it is gone.
func (p *serveProcess) kill9(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait() // "signal: killed": the point of it
}

// countingTeam is a team whose member worker answers "count" at once and
// "slow" after an hour. Every run of a skill is one invocation_request line
// in inbox/worker.jsonl, so the lines count the runs.
func countingTeam(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	worker := team.MemberSpec{Name: "worker", Role: "counted", Runtime: team.RuntimeSpec{Kind: team.RuntimeScript,
		Steps: []team.Step{{Wait: team.Duration(time.Hour)}}}}
	worker.Actions = map[string]team.ActionSpec{
		"count": {Reply: "counted"},
		"slow":  {Reply: "slowly", Delay: team.Duration(time.Hour)},
	}
	writeTeamFiles(t, dir, team.Team{Name: "counting", Members: []team.MemberSpec{worker}}, map[string]string{
		".puruto-ipc.json": `{"allowed_targets":["worker"]}`,
	})
	return dir
}

// runsOf counts the invocations of worker.action that reached the worker.
func runsOf(t *testing.T, dir, action string) int {
	t.Helper()
	n := 0
	for _, m := range inboxLines(t, dir, "worker") {
		if m.Type == protocol.TypeInvocationRequest && m.Invocation != nil && m.Invocation.Action == action {
			n++
		}
	}
	return n
}

// httpAnswer is a response read in full.
type httpAnswer struct {
	code int
	body map[string]any
	raw  string
}

func (a httpAnswer) errorCode() string {
	e, _ := a.body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// send makes one request to a server on loopback; header may set Host.
func send(t *testing.T, method, url, contentType, body string, header map[string]string) httpAnswer {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(b, &out) // a body that is not JSON shows in raw
	return httpAnswer{code: resp.StatusCode, body: out, raw: string(b)}
}

func invokeBody(skill, prompt string) string {
	return `{"caller":{"id":"outsider","type":"test"},"skill_id":"` + skill + `","inputs":{"prompt":"` + prompt + `"}}`
}

// TestServeOneIdempotencyKeyRunsOnce: 50 POSTs at once with one
// Idempotency-Key reach a real huddle serve; the skill runs once, all 50
// get the same execution, and the key with another body is refused.
func TestServeOneIdempotencyKeyRunsOnce(t *testing.T) {
	dir := countingTeam(t)
	addr := freePort(t)
	startServeProcess(t, dir, addr)
	startUp(t, dir)
	base := "http://" + addr
	const n = 50
	answers := make([]httpAnswer, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			answers[i] = send(t, "POST", base+"/invoke", "application/json", invokeBody("worker.count", "once"),
				map[string]string{"Idempotency-Key": "one-key"})
		})
	}
	close(start)
	wg.Wait()
	ids := map[string]int{}
	for _, a := range answers {
		if a.code != http.StatusAccepted {
			t.Fatalf("a POST was not accepted: %d %s", a.code, a.raw)
		}
		ids[a.body["execution_id"].(string)]++
	}
	var id string
	for k := range ids {
		id = k
	}
	testkit.WaitFor(t, 20*time.Second, "the executions to finish", func() bool {
		done := true
		for k := range ids {
			st := send(t, "GET", base+"/status/"+k, "", "", nil)
			done = done && st.body["status"] == "completed"
		}
		return done
	})
	if runs := runsOf(t, dir, "count"); runs != 1 || len(ids) != 1 {
		t.Fatalf("50 POSTs with one key: %d executions, the skill ran %d times; want 1 and 1", len(ids), runs)
	}
	reused := send(t, "POST", base+"/invoke", "application/json", invokeBody("worker.count", "another body"),
		map[string]string{"Idempotency-Key": "one-key"})
	if reused.code != http.StatusUnprocessableEntity || reused.errorCode() != "IDEMPOTENCY_KEY_REUSED" {
		t.Fatalf("the key with another body: %d %s", reused.code, reused.raw)
	}
	if runs := runsOf(t, dir, "count"); runs != 1 {
		t.Fatalf("the refused POST ran the skill: %d runs", runs)
	}
	again := send(t, "POST", base+"/invoke", "application/json", invokeBody("worker.count", "once"),
		map[string]string{"Idempotency-Key": "one-key"})
	if again.code != http.StatusAccepted || again.body["execution_id"] != id {
		t.Fatalf("the same key and body after the run: %d %s, want execution %s", again.code, again.raw, id)
	}
}

// TestServeKill9MidExecution: kill -9 huddle serve while a slow skill runs;
// after a restart the execution is failed SERVER_RESTARTED with a retry
// hint, and 10 retries at once with its Idempotency-Key run it again once.
func TestServeKill9MidExecution(t *testing.T) {
	dir := countingTeam(t)
	addr := freePort(t)
	first := startServeProcess(t, dir, addr)
	startUp(t, dir)
	base := "http://" + addr
	post := func() httpAnswer {
		return send(t, "POST", base+"/invoke", "application/json", invokeBody("worker.slow", "take your time"),
			map[string]string{"Idempotency-Key": "slow-key"})
	}
	acc := post()
	if acc.code != http.StatusAccepted {
		t.Fatalf("invoke: %d %s", acc.code, acc.raw)
	}
	id := acc.body["execution_id"].(string)
	testkit.WaitFor(t, 10*time.Second, "the worker to get the call", func() bool { return runsOf(t, dir, "slow") == 1 })
	first.kill9(t)

	second := startServeProcess(t, dir, addr)
	st := send(t, "GET", base+"/status/"+id, "", "", nil)
	if st.code != http.StatusOK {
		t.Fatalf("status after a kill -9 and a restart: %d %s (stderr %s)", st.code, st.raw, second.stderr.String())
	}
	e, _ := st.body["error"].(map[string]any)
	retry, _ := e["retry"].(map[string]any)
	if st.body["status"] != "failed" || e["code"] != "SERVER_RESTARTED" || retry == nil || retry["max_attempts"] == nil {
		t.Fatalf("status after a kill -9 and a restart: %s", st.raw)
	}
	res := send(t, "GET", base+"/result/"+id, "", "", nil)
	if res.errorCode() != "SERVER_RESTARTED" {
		t.Fatalf("result after a kill -9 and a restart: %d %s", res.code, res.raw)
	}

	const n = 10
	answers := make([]httpAnswer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { answers[i] = post() })
	}
	wg.Wait()
	var again string
	for _, a := range answers {
		if a.code != http.StatusAccepted {
			t.Fatalf("a retry was not accepted: %d %s", a.code, a.raw)
		}
		got := a.body["execution_id"].(string)
		if again == "" {
			again = got
		}
		if got != again || got == id {
			t.Fatalf("retries answered executions %s and %s (the crashed one %s)", again, got, id)
		}
	}
	testkit.WaitFor(t, 10*time.Second, "the retry to reach the worker", func() bool { return runsOf(t, dir, "slow") >= 2 })
	st = send(t, "GET", base+"/status/"+again, "", "", nil)
	if st.body["status"] != "running" && st.body["status"] != "accepted" {
		t.Fatalf("the retried execution: %s", st.raw)
	}
	if runs := runsOf(t, dir, "slow"); runs != 2 {
		t.Fatalf("the slow skill ran %d times; want 2 (once before the crash, once for the retries)", runs)
	}
}

// TestServeRefusesBrowserBorneRequests: without API keys, a cross-origin
// text/plain POST (the shape of a CSRF form) and a request whose Host is
// not loopback (DNS rebinding) are refused with the error envelope, and
// nothing runs; the same server still answers a plain local client.
func TestServeRefusesBrowserBorneRequests(t *testing.T) {
	dir := countingTeam(t)
	addr := freePort(t)
	startServeProcess(t, dir, addr)
	base := "http://" + addr
	body := invokeBody("worker.count", "from a web page")
	for _, c := range []struct {
		name, method, path, contentType string
		header                          map[string]string
	}{
		{"a cross-origin text/plain POST", "POST", "/invoke", "text/plain", map[string]string{"Origin": "http://evil.example"}},
		{"a text/plain POST", "POST", "/invoke", "text/plain", nil},
		{"a form POST", "POST", "/invoke", "application/x-www-form-urlencoded", nil},
		{"a JSON POST with an Origin", "POST", "/invoke", "application/json", map[string]string{"Origin": "http://evil.example"}},
		{"a POST to evil.example", "POST", "/invoke", "application/json", map[string]string{"Host": "evil.example"}},
		{"a GET of discovery to evil.example", "GET", "/.well-known/skill-sharing", "", map[string]string{"Host": "evil.example:7420"}},
		{"a GET of discovery with an Origin", "GET", "/.well-known/skill-sharing", "", map[string]string{"Origin": "http://evil.example"}},
	} {
		a := send(t, c.method, base+c.path, c.contentType, body, c.header)
		if (a.code != http.StatusForbidden && a.code != http.StatusUnsupportedMediaType) || a.errorCode() == "" {
			t.Errorf("%s: %d %s; want 403 or 415 with the error envelope", c.name, a.code, a.raw)
		}
	}
	if ok := send(t, "POST", base+"/invoke", "application/json; charset=utf-8", body, map[string]string{"Host": "localhost"}); ok.code != http.StatusAccepted {
		t.Fatalf("a local JSON POST: %d %s", ok.code, ok.raw)
	}
	if runs := runsOf(t, dir, "count"); runs > 1 {
		t.Fatalf("a refused request ran the skill: %d runs", runs)
	}
}

// TestServeSkipsAnOverlongExecutionsLine: a line over the limit in
// executions.jsonl is skipped with a warning naming the file; the server
// starts and still answers for the executions around it.
func TestServeSkipsAnOverlongExecutionsLine(t *testing.T) {
	dir := countingTeam(t)
	addr := freePort(t)
	first := startServeProcess(t, dir, addr)
	startUp(t, dir)
	base := "http://" + addr
	run := func(prompt string) string {
		a := send(t, "POST", base+"/invoke", "application/json", invokeBody("worker.count", prompt), nil)
		if a.code != http.StatusAccepted {
			t.Fatalf("invoke: %d %s", a.code, a.raw)
		}
		id := a.body["execution_id"].(string)
		testkit.WaitFor(t, 20*time.Second, "execution "+id, func() bool {
			return send(t, "GET", base+"/status/"+id, "", "", nil).body["status"] == "completed"
		})
		return id
	}
	before := run("before")
	path := filepath.Join(dir, "executions.jsonl")
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	over := `{"id":"exec-overlong","status":"completed","output":"` + strings.Repeat("x", blueprint.MaxRecord) + "\"}\n"
	if _, err := f.WriteString(over); err != nil {
		t.Fatal(err)
	}
	f.Close()
	after := run("after")
	_ = first.cmd.Process.Signal(os.Interrupt)
	_ = first.cmd.Wait()

	second := startServeProcess(t, dir, addr)
	for _, id := range []string{before, after} {
		if st := send(t, "GET", base+"/status/"+id, "", "", nil); st.code != http.StatusOK || st.body["status"] != "completed" {
			t.Errorf("execution %s after the restart: %d %s", id, st.code, st.raw)
		}
	}
	testkit.WaitFor(t, 5*time.Second, "the warning", func() bool { return strings.Contains(second.stderr.String(), "executions.jsonl") })
	if log := second.stderr.String(); !strings.Contains(log, "WARN") || strings.Count(log, "xxxxxxxx") > 0 {
		t.Fatalf("the warning: %s", log)
	}
}
