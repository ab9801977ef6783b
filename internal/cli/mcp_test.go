package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"huddle/internal/testkit"
)

// startMCPHTTP runs `huddle mcp --addr` and waits for its address line.
func startMCPHTTP(t *testing.T, dir, addr string, extra ...string) *testkit.Buffer {
	t.Helper()
	cmd := exec.Command(huddleBinary(t), append([]string{"mcp", "--dir", dir, "--addr", addr}, extra...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &testkit.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.Contains(line, "http://"+addr+"/mcp") {
		t.Fatalf("huddle mcp: %q %v (stderr %s)", line, err, stderr.String())
	}
	return stderr
}

// mcpStdio is the environment that makes mcp-client.mjs start huddle mcp
// on dir as its stdio server, with args.
func mcpStdio(t *testing.T, dir string, args ...string) []string {
	cmd, _ := json.Marshal(append([]string{huddleBinary(t), "mcp", "--dir", dir}, args...))
	return []string{"MCP_STDIO=" + string(cmd)}
}

func field(l map[string]any, k string) string { return fmt.Sprint(l[k]) }

// TestMCPWithTheTSSDK: MCP's TypeScript SDK (a client we did not write)
// starts huddle mcp over stdio: it reads the tasks capability and
// call_action's taskSupport, and, deciding by itself to call it as a task,
// sees the task working, input_required while the planner's plan waits
// (the plan in its status message), and, once the lead approves with
// the lead rejects it (huddle reject) and a client the lead lets decide
// (--decide) approves the revised plan through the door, the result,
// related to the task. approve is not among the first client's tools. It
// cancels a task, cannot cancel it twice, lists it, and a call at
// max_hops is DENIED.
func TestMCPWithTheTSSDK(t *testing.T) {
	dir := a2aTeamDir(t)
	startUp(t, dir)
	testkit.WaitFor(t, 30*time.Second, "planner's plan to wait", func() bool {
		return strings.Contains(huddle(t, "requests", "--dir", dir).stdout, "planner")
	})
	env := mcpStdio(t, dir, "--caller", "tsclient")

	tools := js(t, "mcp-client.mjs", env, "tools").wait(t)
	if len(tools) != 1 || tools[0]["kind"] != "tools" {
		t.Fatalf("tools: %v", tools)
	}
	caps, _ := tools[0]["capabilities"].(map[string]any)
	tasks, _ := caps["tasks"].(map[string]any)
	if reqs, _ := tasks["requests"].(map[string]any); reqs["tools"] == nil || tasks["cancel"] == nil || tasks["list"] == nil {
		t.Errorf("the tasks capability the TS SDK read: %v", caps)
	}
	list := fmt.Sprint(tools[0]["tools"])
	if !strings.Contains(list, "name:call_action readOnly:false taskSupport:optional") || strings.Contains(list, "approve") ||
		!strings.Contains(list, "name:members readOnly:true taskSupport:<nil>") {
		t.Errorf("the tools the TS SDK read: %s", list)
	}

	run := js(t, "mcp-client.mjs", env, "task", "call_action", `{"member":"planner","action":"act","prompt":"please act"}`)
	waiting := run.find(t, "the task input_required", func(l map[string]any) bool { return l["status"] == "input_required" })
	msg := field(waiting, "statusMessage")
	var planID string
	for _, w := range strings.Fields(msg) {
		if strings.HasPrefix(w, "pl-") {
			planID = strings.Trim(w, "():,")
			break
		}
	}
	if planID == "" || !strings.Contains(msg, "read the ledger") {
		t.Fatalf("input_required says %q", msg)
	}
	// The lead rejects it; the planner revises; a client the lead lets
	// decide (--decide) sees approve among its tools and approves the
	// revised plan, recorded as mcp:boss.
	if r := huddle(t, "reject", planID, "--feedback", "check the totals too", "--dir", dir); r.code != 0 {
		t.Fatalf("huddle reject: %+v", r)
	}
	var revised string
	testkit.WaitFor(t, 30*time.Second, "the revised plan", func() bool {
		r := huddle(t, "requests", "--dir", dir, "--json")
		for _, f := range strings.Split(r.stdout, "\"") {
			if strings.HasPrefix(f, "pl-") && f != planID {
				revised = f
			}
		}
		return revised != ""
	})
	decider := mcpStdio(t, dir, "--caller", "boss", "--decide", "boss")
	if l := js(t, "mcp-client.mjs", decider, "tools").wait(t); !strings.Contains(fmt.Sprint(l[0]["tools"]), "name:approve") {
		t.Fatalf("tools with --decide: %v", l)
	}
	approved := js(t, "mcp-client.mjs", decider, "call", "approve", `{"id":"`+revised+`"}`).wait(t)
	if len(approved) != 1 || approved[0]["isError"] != false || !strings.Contains(field(approved[0], "text"), `"resolved_by": "mcp:boss"`) {
		t.Fatalf("approve through the door: %v", approved)
	}
	lines := run.wait(t)
	var kinds []string
	for _, l := range lines {
		k := field(l, "kind")
		if k == "taskStatus" {
			k += ":" + field(l, "status")
		}
		kinds = append(kinds, k)
	}
	got := strings.Join(kinds, " ")
	// The SDK polls tasks/get, so how many working statuses it sees is the
	// scheduler's; the order of what it sees is not.
	if !strings.HasPrefix(got, "taskCreated ") || !strings.HasSuffix(got, "taskStatus:input_required result") || strings.Contains(got, "error") {
		t.Fatalf("the task as the TS SDK saw it: %s\n%v", got, lines)
	}
	last := lines[len(lines)-1]
	if last["isError"] != false || last["text"] != "planner acted" || last["related"] != lines[0]["taskId"] {
		t.Errorf("the task's result: %v", last)
	}

	cancel := js(t, "mcp-client.mjs", env, "task-cancel", "call_action", `{"member":"slow","action":"act","prompt":"take your time"}`).wait(t)
	if len(cancel) != 4 || cancel[0]["status"] != "cancelled" || cancel[1]["status"] != "cancelled" ||
		cancel[2]["kind"] != "error" || cancel[2]["code"] != float64(-32602) ||
		fmt.Sprint(cancel[3]["tasks"]) != fmt.Sprintf("[map[status:cancelled taskId:%s]]", cancel[0]["taskId"]) {
		t.Errorf("cancel: %v", cancel)
	}

	plain := js(t, "mcp-client.mjs", env, "call", "call_action", `{"member":"helper","action":"act","prompt":"quick","hop":2}`).wait(t)
	if len(plain) != 1 || plain[0]["isError"] != true || !strings.HasPrefix(field(plain[0], "text"), "DENIED") {
		t.Errorf("a call at max_hops: %v", plain)
	}

}

// TestMCPOverHTTPWithTheTSSDK: huddle mcp --addr with keys: the TS SDK
// without a key is refused, with one it lists the members as the key's
// owner, and the key reaches no log or file.
func TestMCPOverHTTPWithTheTSSDK(t *testing.T) {
	const key = "sk-mcp-door-secret-7373"
	dir := a2aTeamDir(t)
	keys := keysFile(t, key+" remote-client")
	addr := freePort(t)
	stderr := startMCPHTTP(t, dir, addr, "--api-keys-file", keys)
	startUp(t, dir)
	url := []string{"MCP_URL=http://" + addr + "/mcp"}
	refused := js(t, "mcp-client.mjs", url, "tools").wait(t)
	if len(refused) != 1 || refused[0]["kind"] != "error" || refused[0]["code"] != float64(401) || !strings.Contains(field(refused[0], "message"), "API key is required") {
		t.Errorf("no key: %v", refused)
	}
	withKey := append(url, "MCP_KEY="+key)
	members := js(t, "mcp-client.mjs", withKey, "call", "members", "{}").wait(t)
	if len(members) != 1 || members[0]["isError"] != false || !strings.Contains(field(members[0], "text"), `"planner"`) {
		t.Fatalf("members over HTTP: %v", members)
	}
	sent := js(t, "mcp-client.mjs", withKey, "call", "send_message", `{"to":"helper","text":"over http"}`).wait(t)
	if len(sent) != 1 || !strings.Contains(field(sent[0], "text"), `"from": "remote-client"`) {
		t.Errorf("send_message as the key's owner: %v", sent)
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
