package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/ipc/blueprint"
	"huddle/ipc/trace"
	"huddle/store"
	"huddle/team"
)

// freePort finds a loopback port that is free now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startServe runs `huddle serve` and waits for its address line.
func startServe(t *testing.T, dir, addr string, extra ...string) (stderr *testkit.Buffer) {
	t.Helper()
	cmd := exec.Command(huddleBinary(t), append([]string{"serve", "--dir", dir, "--addr", addr}, extra...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr = &testkit.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.Contains(line, "on http://"+addr) {
		t.Fatalf("huddle serve: %q %v (stderr %s)", line, err, stderr.String())
	}
	return stderr
}

func writeTeamFiles(t *testing.T, dir string, tm team.Team, files map[string]string) {
	t.Helper()
	b, _ := json.Marshal(tm)
	os.WriteFile(team.ConfigPath(dir), b, 0o600)
	for name, content := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func teamChains(t *testing.T, dir string) []trace.Chain {
	t.Helper()
	spans, err := trace.NewTraceReader(dir).Read()
	if err != nil {
		t.Fatal(err)
	}
	tr := trace.NewTraces()
	for _, s := range spans {
		tr.Add(s)
	}
	return tr.Chains()
}

// callsOf lists "caller→target.action status remote?" of a chain.
func callsOf(c trace.Chain) []string {
	var out []string
	for _, r := range c.Rows {
		s := fmt.Sprintf("%s→%s.%s %s", r.Call.Caller, r.Call.Target, r.Call.Action, r.Call.Status)
		if r.Call.Remote != "" {
			s += " remote"
		}
		out = append(out, s)
	}
	return out
}

// TestTwoTeamsOnLoopback: four processes (up and serve for teams A and B).
// alpha in A calls bravo in B over HTTP; bravo's action calls back into A's
// echo. The chain is in both teams' traces under one correlation id.
func TestTwoTeamsOnLoopback(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	addrA, addrB := freePort(t), freePort(t)
	wait := team.Step{Wait: team.Duration(time.Hour)}
	script := func(name string, steps ...team.Step) team.MemberSpec {
		return team.MemberSpec{Name: name, Role: "test", Runtime: team.RuntimeSpec{Kind: team.RuntimeScript, Steps: steps}}
	}
	alpha := script("alpha", team.Step{Call: "bravo", Action: "act", Prompt: "from A", TimeoutSec: 20}, wait)
	alpha.IPC = "ipc/alpha.json"
	echo := script("echo", wait)
	echo.Actions = map[string]team.ActionSpec{"echo": {Reply: "echoed in A"}}
	remoteBravo := team.MemberSpec{Name: "bravo", Role: "B's bravo", Target: &team.TargetSpec{Kind: team.TargetHTTP, URL: "http://" + addrB, Skill: "bravo.act"}}
	writeTeamFiles(t, a, team.Team{Name: "team-a", Members: []team.MemberSpec{alpha, echo, remoteBravo}}, map[string]string{
		"ipc/alpha.json":   `{"allowed_targets":["bravo"]}`,
		".puruto-ipc.json": `{"allowed_targets":["echo"]}`,
	})
	bravo := script("bravo", wait)
	bravo.IPC = "ipc/bravo.json"
	bravo.Actions = map[string]team.ActionSpec{"act": {Reply: "done in B", Call: &team.CallSpec{Target: "back", Action: "echo"}}}
	back := team.MemberSpec{Name: "back", Role: "A's echo", Target: &team.TargetSpec{Kind: team.TargetHTTP, URL: "http://" + addrA, Skill: "echo.echo"}}
	writeTeamFiles(t, b, team.Team{Name: "team-b", Members: []team.MemberSpec{bravo, back}}, map[string]string{
		"ipc/bravo.json":   `{"allowed_targets":["back"]}`,
		".puruto-ipc.json": `{"allowed_targets":["bravo"]}`,
	})
	startServe(t, a, addrA)
	startServe(t, b, addrB)
	startUp(t, b)
	upA := startUp(t, a)
	t.Cleanup(func() {
		if t.Failed() {
			ta, _ := os.ReadFile(filepath.Join(a, "traces.jsonl"))
			t.Logf("traces A:\n%s", ta)
		}
	})
	testkit.WaitFor(t, 30*time.Second, "alpha's call to end", func() bool {
		return upA.saw(func(e map[string]any) bool { return e["event"] == "call" && e["member"] == "alpha" })
	})
	if !upA.saw(func(e map[string]any) bool {
		return e["event"] == "call" && e["member"] == "alpha" && e["status"] == "ok"
	}) {
		t.Fatalf("alpha's call failed: %v", upA.events)
	}
	var corr string
	for _, c := range teamChains(t, a) {
		for _, r := range c.Rows {
			if r.Call.Caller == "alpha" {
				corr = c.CorrelationID
			}
		}
	}
	if corr == "" {
		t.Fatal("alpha's call is not in A's traces")
	}
	find := func(dir string) []string {
		for _, c := range teamChains(t, dir) {
			if c.CorrelationID == corr {
				return callsOf(c)
			}
		}
		return nil
	}
	testkit.WaitFor(t, 10*time.Second, "the whole chain in both traces", func() bool {
		return len(find(a)) == 2 && len(find(b)) == 2
	})
	inA, inB := strings.Join(find(a), " | "), strings.Join(find(b), " | ")
	for _, want := range []string{"alpha→bravo.act ok remote", "bravo→echo.echo ok"} {
		if !strings.Contains(inA, want) {
			t.Errorf("A's chain %q lacks %q", inA, want)
		}
	}
	for _, want := range []string{"alpha→bravo.act ok", "bravo→back.echo ok remote"} {
		if !strings.Contains(inB, want) {
			t.Errorf("B's chain %q lacks %q", inB, want)
		}
	}
}

// TestServeKeepsTheKeySecret: a run with API keys — accepted, refused and
// misspelt keys, in the header and in the body — leaves the key in no log
// line, trace, inbox, record or response.
func TestServeKeepsTheKeySecret(t *testing.T) {
	const key, wrong = "sk-the-real-secret-4242", "sk-a-wrong-guess-1717"
	dir := demoTeam(t)
	keys := keysFile(t, key+" ifay-instance-001")
	addr := freePort(t)
	stderr := startServe(t, dir, addr, "--api-keys-file", keys)
	startUp(t, dir)
	base := "http://" + addr
	var bodies []string
	post := func(path, body string, header map[string]string) string {
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		bodies = append(bodies, string(b))
		return string(b)
	}
	call := func(apiKey, where string) string {
		body := `{"caller":{"id":"ifay-instance-001","type":"ifay"},"skill_id":"data.leer","inputs":{"prompt":"read it"}}`
		h := map[string]string{}
		if where == "header" {
			h["X-API-Key"] = apiKey
		} else {
			body = strings.Replace(body, `"type":"ifay"}`, `"type":"ifay","credentials":{"api_key":"`+apiKey+`"}}`, 1)
		}
		return post("/invoke", body, h)
	}
	accepted := call(key, "header")
	call(key, "body")
	call(wrong, "header")
	call(wrong, "body")
	var acc struct {
		ExecutionID string `json:"execution_id"`
	}
	json.Unmarshal([]byte(accepted), &acc)
	if acc.ExecutionID == "" {
		t.Fatalf("the right key was refused: %s", accepted)
	}
	testkit.WaitFor(t, 10*time.Second, "the execution to finish", func() bool {
		req, _ := http.NewRequest("GET", base+"/result/"+acc.ExecutionID, nil)
		req.Header.Set("X-API-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		bodies = append(bodies, string(b))
		return resp.StatusCode == 200
	})
	// Everything the run wrote: the server's log, every file of the team
	// directory (traces, inboxes, records, executions) and every response.
	haystack := []string{stderr.String()}
	haystack = append(haystack, bodies...)
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			haystack = append(haystack, p+": "+string(b))
		}
		return nil
	})
	for _, h := range haystack {
		for _, secret := range []string{key, wrong} {
			if strings.Contains(h, secret) {
				t.Fatalf("the key %q shows in: %.300s", secret, h)
			}
		}
	}
	if !strings.Contains(strings.Join(haystack, "\n"), "ifay-instance-001 → data.leer") &&
		!strings.Contains(strings.Join(haystack, "\n"), `"caller":"ifay-instance-001"`) {
		t.Fatal("the call is in no trace: the search above proves nothing")
	}
}

func TestServeRefusesAnOpenAddressWithoutKeys(t *testing.T) {
	dir := demoTeam(t)
	huddle(t, "serve", "--dir", dir, "--addr", "0.0.0.0:0").wantError(t, ExitUsage, "loopback", "serve 0.0.0.0")
	keys := keysFile(t, "not a valid line with four words")
	r := huddle(t, "serve", "--dir", dir, "--api-keys-file", keys)
	r.wantError(t, ExitUsage, "line 1", "serve with a bad keys file")
	if strings.Contains(r.stderr, "valid line") {
		t.Fatal("the error repeats the keys file's content")
	}
}

// TestServeFromAnotherProcess: on both kinds of store, `huddle serve` on
// real loopback HTTP serves the skills of a team that a `huddle up`
// process runs: a skill the team's policy allows is answered by the
// member, one it does not is refused, and the call is in `huddle
// traces`. On NATS the answer serve took leaves the store.
func TestServeFromAnotherProcess(t *testing.T) {
	b, _ := json.Marshal(actionsTeam())
	onEachStore(t, map[string]string{
		store.ConfigTeam:   string(b),
		store.ConfigPolicy: `{"allowed_targets":["bob"]}`,
	}, func(t *testing.T, tm *teamOn) {
		tm.up(t, "lead,alice,bob")
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		addr := freePort(t)
		if tm.dir != "" {
			startServe(t, tm.dir, addr)
		} else {
			startServe(t, t.TempDir(), addr, tm.args...)
		}
		c := &blueprint.Client{BaseURL: "http://" + addr}
		ask := func(skill string) (blueprint.Result, error) {
			return c.Call(ctx, blueprint.InvokeRequest{Caller: blueprint.Caller{ID: "web", Type: "agent"}, SkillID: skill,
				Inputs: map[string]any{"prompt": "q"}, Context: blueprint.Context{TimeoutMS: 30000}}, "")
		}
		res, err := ask("bob.lookup")
		if err != nil || res.Status != "completed" || !strings.Contains(string(res.Output), "found") {
			t.Fatalf("bob.lookup over HTTP: %v %+v %s", err, res, res.Output)
		}
		if tm.kind == "nats" {
			testkit.WaitFor(t, 20*time.Second, "the answer serve took removed from web's inbox", func() bool { return inboxHolds(t, tm.st, "web") == 0 })
		}
		if res, err := ask("alice.note"); err == nil && res.Status == "completed" {
			t.Fatalf("alice.note, which the team's policy does not allow, was answered: %s", res.Output)
		}
		out := tm.must(t, "traces", "--json").stdout
		var chains []struct {
			Calls []struct{ Caller, Target, Action, Status string } `json:"calls"`
		}
		if err := json.Unmarshal([]byte(out), &chains); err != nil {
			t.Fatalf("traces --json: %v\n%s", err, out)
		}
		found := false
		for _, ch := range chains {
			for _, call := range ch.Calls {
				found = found || call.Caller == "web" && call.Target == "bob" && call.Action == "lookup" && call.Status == "ok"
			}
		}
		if !found {
			t.Fatalf("the served call is not in the team's traces:\n%s", out)
		}
	})
}

// keysFile writes an --api-keys-file of one line ("KEY CALLER") and
// returns its path.
func keysFile(t *testing.T, line string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(path, []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
