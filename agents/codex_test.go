package agents_test

import (
	"encoding/json"
	"strings"
	"testing"

	"huddle/protocol"
)

// codexFixture is a real `codex app-server` session: two turns on one
// thread, the first asking four approvals (two commands, two file
// changes), the second one command.
const codexFixture = "real/codex/approvals.jsonl"

const (
	codexFirstAnswer  = "Done: made.txt and notes.txt are there."
	codexSecondAnswer = "Touched it twice."
)

// clientLine finds the client's line that is the request method with id.
func clientLine(t *testing.T, f *fake, id int, method string) map[string]any {
	t.Helper()
	for _, l := range f.hostLines(t, 1) {
		if l["method"] == method && l["id"] == float64(id) {
			return l
		}
	}
	t.Fatalf("the client sent no %s with id %d: %v", method, id, f.hostLines(t, 1))
	return nil
}

// decisions are the client's answers to the server's requests, in order.
func decisions(t *testing.T, f *fake) []string {
	t.Helper()
	var out []string
	for _, l := range f.hostLines(t, 1) {
		if r, ok := l["result"].(map[string]any); ok && l["method"] == nil {
			out = append(out, r["decision"].(string))
		}
	}
	return out
}

// TestCodexAppServerPlanApproveWork: one app server carries the session.
// The plan turn runs read-only with approvals on request, and each
// approval it asks is a permission line (the command as the model wrote
// it, a file change as an Edit of its first file); the answers are
// accept or decline. The turn's last message is the plan; approved, the
// work turn runs in a workspace-write sandbox where every command not
// known safe asks; its answer goes to the lead; usage is what the
// thread's total grew by each turn.
func TestCodexAppServerPlanApproveWork(t *testing.T) {
	f := newFake(t, "codex", codexFixture)
	h := startAdapter(t, f, "codex", "--skip-git-repo-check", "-c", "model=\"gpt-5.5\"")

	var asked []string
	for _, allow := range []bool{true, true, false, false} {
		p := h.expect("permission")
		var in struct {
			Command  string `json:"command"`
			FilePath string `json:"file_path"`
			Diff     string `json:"diff"`
		}
		if err := json.Unmarshal(p.Input, &in); err != nil {
			t.Fatal(err)
		}
		asked = append(asked, strings.TrimSpace(p.Tool+" "+in.Command+in.FilePath+" "+strings.TrimSpace(in.Diff)))
		h.permit(p.RequestID, allow, "")
	}
	want := "Bash touch made.txt | Edit /tmp/huddle-realcli/work/notes.txt hello from a patch | Bash rm made.txt | Edit /tmp/huddle-realcli/work/declined.txt never written"
	if got := strings.Join(asked, " | "); got != want {
		t.Errorf("asked:\n%s\nwant\n%s", got, want)
	}
	if p := h.expect("plan"); p.Plan != codexFirstAnswer {
		t.Errorf("plan = %q", p.Plan)
	}
	h.decide(true, "")
	p := h.expect("permission")
	if !strings.Contains(string(p.Input), `"command":"touch second.txt"`) {
		t.Errorf("the work's permission: %s", p.Input)
	}
	h.permit(p.RequestID, true, "")
	if s := h.expect("send"); s.To != protocol.Lead || s.Content != codexSecondAnswer {
		t.Errorf("the work's report: %+v", s)
	}
	h.shutdown("sd-idle")
	h.expect("shutdown_response")
	if err := h.ended(); err != nil {
		t.Errorf("Run = %v", err)
	}

	starts := f.starts()
	if len(starts) != 1 || strings.Join(starts[0], " ") != `app-server -c model="gpt-5.5"` {
		t.Errorf("codex ran as %q, want one app-server (exec's --skip-git-repo-check dropped)", starts)
	}
	start := clientLine(t, f, 2, "thread/start")["params"].(map[string]any)
	if start["sandbox"] != "read-only" || start["approvalPolicy"] != "on-request" || start["cwd"] != "/work/repo" {
		t.Errorf("thread/start %v", start)
	}
	plan := clientLine(t, f, 3, "turn/start")["params"].(map[string]any)
	work := clientLine(t, f, 4, "turn/start")["params"].(map[string]any)
	if plan["sandboxPolicy"].(map[string]any)["type"] != "readOnly" || plan["approvalPolicy"] != "on-request" || !strings.Contains(plan["input"].([]any)[0].(map[string]any)["text"].(string), "Task: "+task) {
		t.Errorf("the plan turn: %v", plan)
	}
	if work["sandboxPolicy"].(map[string]any)["type"] != "workspaceWrite" || work["approvalPolicy"] != "untrusted" ||
		!strings.Contains(work["input"].([]any)[0].(map[string]any)["text"].(string), "carry out the approved plan") {
		t.Errorf("the work turn: %v", work)
	}
	if got := strings.Join(decisions(t, f), " "); got != "accept accept decline decline accept" {
		t.Errorf("decisions %s", got)
	}
	// The thread's total was 6,000 in and 300 out after the first turn,
	// 9,000 and 450 after the second.
	if in, out, _ := h.usage(); in != 9000 || out != 450 {
		t.Errorf("usage = in %d out %d, want 9000 and 450", in, out)
	}
}

// TestCodexCallBeforeApprovalStaysReadOnly: an invocation answered while
// the plan awaits the lead is a turn on the same thread, still read-only,
// and reports no status (huddle refuses one while a plan awaits
// approval); its answer is the ok result.
func TestCodexCallBeforeApprovalStaysReadOnly(t *testing.T) {
	f := newFake(t, "codex", codexFixture)
	h := startAdapter(t, f, "codex")
	for range 4 {
		h.permit(h.expect("permission").RequestID, true, "")
	}
	h.expect("plan")
	n := len(h.seen)
	inv := &protocol.InvocationRequest{RequestID: "inv-1", CorrelationID: "corr-1", Caller: "reviewer", Target: "coder", Action: "explain", Prompt: "explain the files", TimeoutSec: 60}
	m := protocol.NewMessage(protocol.TypeInvocationRequest, "reviewer", "coder")
	m.Invocation = inv
	h.send(m)
	h.permit(h.expect("permission").RequestID, true, "")
	r := h.expect("result").Result
	if r == nil || r.RequestID != "inv-1" || r.Status != protocol.ResultOK || !strings.Contains(string(r.Result), `"summary":"`+codexSecondAnswer+`"`) {
		t.Errorf("result = %+v", r)
	}
	for _, l := range h.seen[n:] {
		if l.Kind == "status" {
			t.Errorf("a status line while the plan awaits approval: %+v", l)
		}
	}
	call := clientLine(t, f, 4, "turn/start")["params"].(map[string]any)
	if call["sandboxPolicy"].(map[string]any)["type"] != "readOnly" || !strings.Contains(call["input"].([]any)[0].(map[string]any)["text"].(string), "explain the files") {
		t.Errorf("the call's turn: %v", call)
	}
}

// TestCodexServerThatExitsSaysWhy: a server that exits before answering
// is said in the member's status in its own last words.
func TestCodexServerThatExitsSaysWhy(t *testing.T) {
	f := newFakeOf(t, "codex", "#stderr Error: failed to load configuration\n#exit 1\n")
	h := startAdapter(t, f, "codex")
	h.expectStatus("no plan: codex exited: Error: failed to load configuration")
}
