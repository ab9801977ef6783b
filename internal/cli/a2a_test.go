package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"huddle/internal/nodekit"
	"huddle/internal/testkit"
	"huddle/ipc/trace"
	"huddle/team"
)

// nodeKit installs the pinned JavaScript SDKs once for the test binary: a
// missing node, npm or registry fails the test that needs them.
var nodeKit = sync.OnceValues(func() (nodekit.Kit, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return nodekit.Install(ctx)
})

func kit(t *testing.T) nodekit.Kit {
	t.Helper()
	k, err := nodeKit()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// jsRun is one run of a node script: the JSON lines it printed, as they
// come, and how it ended.
type jsRun struct {
	mu     sync.Mutex
	lines  []map[string]any
	stderr testkit.Buffer
	done   chan struct{}
	err    error
}

// js starts script with args (env added), reading its lines as they come.
func js(t *testing.T, script string, env []string, args ...string) *jsRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd, err := kit(t).Command(ctx, script, args...)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	r := &jsRun{done: make(chan struct{})}
	cmd.Stderr = &r.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				m = map[string]any{"kind": "garbage", "line": sc.Text()}
			}
			r.mu.Lock()
			r.lines = append(r.lines, m)
			r.mu.Unlock()
		}
		r.err = cmd.Wait()
		close(r.done)
	}()
	t.Cleanup(func() {
		cancel()
		<-r.done
		if t.Failed() {
			t.Logf("node %s %v: stderr %s", script, args, r.stderr.String())
		}
	})
	return r
}

// wait waits for the script to end and returns its lines.
func (r *jsRun) wait(t *testing.T) []map[string]any {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("node did not end; it printed %v", r.all())
	}
	return r.all()
}

func (r *jsRun) all() []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]map[string]any(nil), r.lines...)
}

// find waits for a line that matches and returns it.
func (r *jsRun) find(t *testing.T, what string, match func(map[string]any) bool) map[string]any {
	t.Helper()
	var found map[string]any
	testkit.WaitFor(t, 30*time.Second, what, func() bool {
		for _, l := range r.all() {
			if match(l) {
				found = l
				return true
			}
		}
		return false
	})
	return found
}

// planOf is the plan a status line carries in a data part.
func planOf(l map[string]any) map[string]any {
	msg, _ := l["message"].(map[string]any)
	parts, _ := msg["parts"].([]any)
	for _, p := range parts {
		if d, ok := p.(map[string]any)["data"].(map[string]any); ok {
			return d
		}
	}
	return nil
}

// states is what each line says, in order: its kind and state.
func states(lines []map[string]any) string {
	var s []string
	for _, l := range lines {
		switch l["kind"] {
		case "task", "status":
			s = append(s, strings.TrimPrefix(fmt.Sprint(l["state"]), "TASK_STATE_"))
		default:
			s = append(s, fmt.Sprint(l["kind"]))
		}
	}
	return strings.Join(s, " ")
}

// a2aTeamDir is a team for the A2A door: planner needs its plan approved,
// helper needs none, slow takes a minute; HTTP callers may call each at
// hops below 2.
func a2aTeamDir(t *testing.T) string {
	dir := t.TempDir()
	wait := team.Step{Wait: team.Duration(time.Hour)}
	script := func(name string, steps ...team.Step) team.MemberSpec {
		return team.MemberSpec{Name: name, Role: "test", Runtime: team.RuntimeSpec{Kind: team.RuntimeScript, Steps: steps}}
	}
	planner := script("planner", team.Step{Plan: "read the ledger, then answer"}, wait)
	planner.Actions = map[string]team.ActionSpec{"act": {Reply: "planner acted"}}
	helper := script("helper", wait)
	helper.Actions = map[string]team.ActionSpec{"act": {Reply: "helper acted"}}
	slow := script("slow", wait)
	slow.Actions = map[string]team.ActionSpec{"act": {Reply: "slow acted", Delay: team.Duration(time.Minute)}}
	writeTeamFiles(t, dir, team.Team{Name: "doors", Members: []team.MemberSpec{planner, helper, slow}}, map[string]string{
		".puruto-ipc.json": `{"allowed_targets":["planner","helper","slow"],"max_hops":2}`,
	})
	return dir
}

// TestA2AWithTheJSSDK: the A2A project's JavaScript SDK (a client we did
// not write) reads huddle serve --a2a's card and streams a task to a
// member whose plan waits: INPUT_REQUIRED with the plan, the lead's
// rejection (huddle reject) then INPUT_REQUIRED on the revised plan, the
// approval (huddle approve), the artifact, COMPLETED, all on one stream.
// A member that needs no plan answers a blocking send; hop 2 is REJECTED
// with Puruto's DENIED; a cancelled task ends CANCELED on its stream;
// GetTask and ListTasks see the tasks.
func TestA2AWithTheJSSDK(t *testing.T) {
	dir := a2aTeamDir(t)
	addr := freePort(t)
	startServe(t, dir, addr, "--a2a")
	startUp(t, dir)
	url := "http://" + addr

	card := js(t, "a2a-client.mjs", nil, "card", url).wait(t)
	if len(card) != 1 || card[0]["protocol"] != "1.0" || fmt.Sprint(card[0]["skills"]) != "[planner.act helper.act slow.act]" ||
		!strings.Contains(fmt.Sprint(card[0]["extensions"]), "plan-approval") || card[0]["streaming"] != true {
		t.Fatalf("the card as the JS SDK reads it: %v", card)
	}

	testkit.WaitFor(t, 30*time.Second, "planner's plan to wait", func() bool {
		return strings.Contains(huddle(t, "requests", "--dir", dir).stdout, "planner")
	})
	s := js(t, "a2a-client.mjs", nil, "stream", url, "planner.act", "please act")
	first := planOf(s.find(t, "INPUT_REQUIRED on the first plan", func(l map[string]any) bool { return planOf(l) != nil }))
	id := fmt.Sprint(first["request_id"])
	if r := huddle(t, "reject", id, "--feedback", "check the totals too", "--dir", dir); r.code != 0 {
		t.Fatalf("huddle reject: %+v", r)
	}
	second := planOf(s.find(t, "INPUT_REQUIRED on the revised plan", func(l map[string]any) bool {
		p := planOf(l)
		return p != nil && p["request_id"] != first["request_id"]
	}))
	if second["revises"] != id || second["feedback"] != "check the totals too" {
		t.Errorf("the revised plan: %v", second)
	}
	if r := huddle(t, "approve", fmt.Sprint(second["request_id"]), "--dir", dir); r.code != 0 {
		t.Fatalf("huddle approve: %+v", r)
	}
	lines := s.wait(t)
	want := "SUBMITTED WORKING INPUT_REQUIRED WORKING INPUT_REQUIRED WORKING artifact COMPLETED end"
	if got := states(lines); got != want {
		t.Fatalf("the stream the JS SDK saw:\n got %s\nwant %s\n%v", got, want, lines)
	}
	art := lines[len(lines)-3]
	if !strings.Contains(fmt.Sprint(art["parts"]), "planner acted") {
		t.Errorf("the artifact: %v", art)
	}
	taskID := fmt.Sprint(lines[0]["id"])

	sent := js(t, "a2a-client.mjs", nil, "send", url, "helper.act", "quick").wait(t)
	if len(sent) != 1 || sent[0]["state"] != "TASK_STATE_COMPLETED" || !strings.Contains(fmt.Sprint(sent[0]["artifacts"]), "helper acted") {
		t.Errorf("a blocking send to helper: %v", sent)
	}

	deep := js(t, "a2a-client.mjs", []string{"A2A_HOP=2"}, "send", url, "helper.act", "too deep").wait(t)
	if len(deep) != 1 || deep[0]["state"] != "TASK_STATE_REJECTED" || !strings.Contains(fmt.Sprint(deep[0]["message"]), "DENIED") ||
		!strings.Contains(fmt.Sprint(deep[0]["message"]), "max_hops") {
		t.Errorf("hop 2 of max_hops 2: %v", deep)
	}

	slow := js(t, "a2a-client.mjs", nil, "stream", url, "slow.act", "take your time")
	working := slow.find(t, "the slow task working", func(l map[string]any) bool { return l["state"] == "TASK_STATE_WORKING" })
	cancelled := js(t, "a2a-client.mjs", nil, "cancel", url, fmt.Sprint(working["taskId"])).wait(t)
	if len(cancelled) != 1 || cancelled[0]["state"] != "TASK_STATE_CANCELED" {
		t.Errorf("cancel: %v", cancelled)
	}
	if got := states(slow.wait(t)); got != "SUBMITTED WORKING CANCELED end" {
		t.Errorf("the cancelled task's stream: %s", got)
	}

	got := js(t, "a2a-client.mjs", nil, "get", url, taskID).wait(t)
	if len(got) != 1 || got[0]["state"] != "TASK_STATE_COMPLETED" || got[0]["id"] != taskID {
		t.Errorf("GetTask: %v", got)
	}
	list := js(t, "a2a-client.mjs", nil, "list", url).wait(t)
	if len(list) != 1 || list[0]["total"] != float64(4) {
		t.Errorf("ListTasks: %v", list)
	}
	// The invocations are in the team's traces, the chain under the
	// task's context.
	var chain []string
	for _, c := range teamChains(t, dir) {
		if c.CorrelationID == fmt.Sprint(lines[0]["contextId"]) {
			chain = callsOf(c)
		}
	}
	if strings.Join(chain, " | ") != "a2a→planner.act ok" {
		t.Errorf("the task's chain in the traces: %v", chain)
	}
}

// TestA2AKeysWithTheJSSDK: with --api-keys-file the JS SDK's calls need
// the key (X-API-Key, as the card's security scheme says): without it the
// call fails, with it the task runs as the key's caller, and the key is in
// no line the server wrote.
func TestA2AKeysWithTheJSSDK(t *testing.T) {
	const key = "sk-a2a-door-secret-5151"
	dir := a2aTeamDir(t)
	keys := keysFile(t, key+" partner")
	addr := freePort(t)
	stderr := startServe(t, dir, addr, "--a2a", "--api-keys-file", keys)
	startUp(t, dir)
	url := "http://" + addr
	refused := js(t, "a2a-client.mjs", nil, "send", url, "helper.act", "no key")
	lines := refused.wait(t)
	if len(lines) != 1 || lines[0]["kind"] != "error" || !strings.Contains(fmt.Sprint(lines[0]["message"]), "API key is required") {
		t.Errorf("no key: %v", lines)
	}
	ok := js(t, "a2a-client.mjs", []string{"A2A_KEY=" + key}, "send", url, "helper.act", "with the key").wait(t)
	if len(ok) != 1 || ok[0]["state"] != "TASK_STATE_COMPLETED" {
		t.Fatalf("with the key: %v", ok)
	}
	if md, _ := ok[0]["metadata"].(map[string]any); fmt.Sprint(md["huddle"].(map[string]any)["caller"]) != "partner" {
		t.Errorf("the task's caller: %v", ok[0]["metadata"])
	}
	if strings.Contains(stderr.String(), key) {
		t.Error("the key is in the server's log")
	}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), key) {
				t.Errorf("the key is in %s", p)
			}
		}
		return nil
	})
}

// TestA2ATargetIsTheJSSDKAgent: a member whose target is an A2A agent
// made with the JavaScript SDK (kind http, protocol a2a) is called by a
// teammate and by huddle call: the agent sees the chain's correlation id
// as its contextId, the hop and parent in the metadata and a traceparent
// of the chain's trace; the answer is the artifact's text; a task the
// agent pauses at INPUT_REQUIRED (where its server closes the stream) is
// followed to its end. The chain is in the team's traces, marked remote.
func TestA2ATargetIsTheJSSDKAgent(t *testing.T) {
	agent := js(t, "a2a-agent.mjs", nil)
	url := fmt.Sprint(agent.find(t, "the JS agent to listen", func(l map[string]any) bool { return l["kind"] == "listening" })["url"])
	dir := t.TempDir()
	wait := team.Step{Wait: team.Duration(time.Hour)}
	asker := team.MemberSpec{Name: "asker", Role: "test", IPC: "ipc/asker.json", Runtime: team.RuntimeSpec{Kind: team.RuntimeScript, Steps: []team.Step{
		{Call: "jsagent", Action: "echo", Prompt: "hello from huddle", TimeoutSec: 30},
		{Call: "jsagent", Action: "echo", Prompt: "pause, then answer", TimeoutSec: 30},
		wait,
	}}}
	remote := team.MemberSpec{Name: "jsagent", Role: "an A2A agent of the JS SDK",
		Target: &team.TargetSpec{Kind: team.TargetHTTP, Protocol: team.ProtocolA2A, URL: url, Skill: "echo"}}
	writeTeamFiles(t, dir, team.Team{Name: "outward", Members: []team.MemberSpec{asker, remote}}, map[string]string{
		"ipc/asker.json":   `{"allowed_targets":["jsagent"]}`,
		".puruto-ipc.json": `{"allowed_targets":["jsagent"]}`,
	})
	if r := huddle(t, "validate", dir); r.code != 0 {
		t.Fatalf("huddle validate: %+v", r)
	}
	up := startUp(t, dir)
	testkit.WaitFor(t, 30*time.Second, "asker's two calls", func() bool {
		n := 0
		up.mu.Lock()
		for _, e := range up.events {
			if e["event"] == "call" && e["member"] == "asker" {
				n++
			}
		}
		up.mu.Unlock()
		return n == 2
	})
	up.mu.Lock()
	for _, e := range up.events {
		if e["event"] == "call" && e["status"] != "ok" {
			t.Errorf("a call failed: %v", e)
		}
	}
	up.mu.Unlock()

	// What the JS agent saw of the first call, against the traces.
	seen := agent.find(t, "the agent's first task", func(l map[string]any) bool { return l["text"] == "hello from huddle" })
	var chain trace.Chain
	for _, c := range teamChains(t, dir) {
		if c.CorrelationID == seen["contextId"] {
			chain = c
		}
	}
	if len(chain.Rows) != 1 || strings.Join(callsOf(chain), "") != "asker→jsagent.echo ok remote" {
		t.Fatalf("the chain of contextId %v in the traces: %v", seen["contextId"], callsOf(chain))
	}
	call := chain.Rows[0].Call
	md, _ := seen["metadata"].(map[string]any)
	if md["skill_id"] != "echo" || md["hop"] != float64(0) || md["parent_request_id"] != call.RequestID || md["caller"] != "asker" {
		t.Errorf("the metadata the agent got: %v (request %s)", md, call.RequestID)
	}
	wantTrace := trace.TraceID(chain.CorrelationID).String()
	if tp := fmt.Sprint(seen["traceparent"]); !strings.HasPrefix(tp, "00-"+wantTrace+"-"+trace.SpanID(call.RequestID).String()) {
		t.Errorf("traceparent %s is not the call's (trace %s)", tp, wantTrace)
	}
	if !strings.Contains(call.Result, "js agent heard: hello from huddle") {
		t.Errorf("the call's result: %s", call.Result)
	}
	paused := false
	for _, c := range teamChains(t, dir) {
		for _, r := range c.Rows {
			if strings.Contains(r.Call.Result, "js agent heard: pause, then answer") && r.Call.Status == "ok" {
				paused = true
			}
		}
	}
	if !paused {
		t.Error("the task the agent paused at INPUT_REQUIRED did not come back ok")
	}

	// huddle call reaches the same agent through the member.
	r := huddleIn(t, dir, nil, "call", "--dir", dir, "--config", filepath.Join(dir, ".puruto-ipc.json"), "--caller", "shell",
		"--target", "jsagent", "--action", "echo", "--prompt", "hi from a shell")
	if r.code != 0 || !strings.Contains(r.stdout, "js agent heard: hi from a shell") {
		t.Errorf("huddle call: %+v", r)
	}
}
