package agents_test

import (
	"slices"
	"strings"
	"testing"

	"huddle/protocol"
)

const (
	codexThread = "0199a213-81c0-7800-8aa1-bbab2a035a53"
)

// TestCodexPlanRejectReviseApprove: a rejection resumes the same thread,
// still read-only, with the lead's feedback, and the revised plan goes to
// the lead; only the run after the approval has a workspace-write sandbox.
func TestCodexPlanRejectReviseApprove(t *testing.T) {
	f := newFake(t, "codex", "codex/plan.jsonl", "codex/revise.jsonl", "codex/work.jsonl")
	h := startAdapter(t, f, "codex", "--skip-git-repo-check")

	if p := h.expect("plan"); !strings.HasPrefix(p.Plan, "Plan:\n1. Add a --verbose flag") {
		t.Errorf("plan = %q", p.Plan)
	}
	h.decide(false, "also document it in the README")
	if s := h.expectStatus("revising the plan"); s.Status != "revising" {
		t.Errorf("while revising: %+v", s)
	}
	if p := h.expect("plan"); !strings.Contains(p.Plan, "Document it in README.md") {
		t.Errorf("revised plan = %q", p.Plan)
	}
	h.decide(true, "")
	if s := h.expect("send"); s.To != "lead" || !strings.Contains(s.Content, "documented it") {
		t.Errorf("final answer sent as %+v", s)
	}
	h.expectStatus("done: ")

	runs := f.starts()
	if len(runs) != 3 {
		t.Fatalf("codex ran %d times, want 3: %q", len(runs), runs)
	}
	plan, revise, work := runs[0], runs[1], runs[2]
	if !hasArgs(plan, "exec", "--json", "--sandbox", "read-only", "--skip-git-repo-check") || slices.Contains(plan, "resume") ||
		!strings.Contains(plan[len(plan)-1], "Task: "+task) {
		t.Errorf("plan run args = %q", plan)
	}
	if !hasArgs(revise, "exec", "--json", "-c", `sandbox_mode="read-only"`, "--skip-git-repo-check", "resume", codexThread) ||
		!strings.Contains(revise[len(revise)-1], "also document it in the README") {
		t.Errorf("revision run args = %q", revise)
	}
	if !hasArgs(work, "-c", `sandbox_mode="workspace-write"`) || !hasArgs(work, "resume", codexThread) ||
		!strings.Contains(work[len(work)-1], "carry out the approved plan") {
		t.Errorf("work run args = %q", work)
	}
	for _, before := range runs[:2] {
		if contains(before, "workspace-write") {
			t.Errorf("a run before the approval may write: %q", before)
		}
	}
	got := strings.Join(h.statuses(), " | ")
	for _, want := range []string{"working: thinking: Reading the entry point", "working: running: bash -lc 'cat main.go'",
		"working: todo list: 1 of 2 done", "revising: thinking: Adding the README step",
		"working: editing: main.go, README.md", "working: tool: docs.search"} {
		if !strings.Contains(got, want) {
			t.Errorf("statuses lack %q: %s", want, got)
		}
	}
	// The thread's totals grew 24,763 → 49,863 → 79,863 (Codex reports a
	// resumed thread's running total): each run says what it added.
	if in, out, cost := h.usage(); in != 79863 || out != 612 || cost != 0 {
		t.Errorf("usage = in %d out %d cost %v (codex reports no cost)", in, out, cost)
	}
}

// TestMessageBeforeApprovalStaysReadOnly: a message answered while the
// plan awaits the lead runs read-only, and reports no status (huddle
// refuses one while a plan awaits approval).
func TestMessageBeforeApprovalStaysReadOnly(t *testing.T) {
	f := newFake(t, "codex", "codex/plan.jsonl", "codex/revise.jsonl")
	h := startAdapter(t, f, "codex")
	h.expect("plan")
	n := len(h.seen)
	h.message("bob", "what will you change?")
	if s := h.expect("send"); s.To != "bob" {
		t.Errorf("answer %+v", s)
	}
	for _, l := range h.seen[n:] {
		if l.Kind == "status" {
			t.Errorf("a status line while the plan awaits approval: %+v", l)
		}
	}
	run := f.starts()[1]
	if !hasArgs(run, "-c", `sandbox_mode="read-only"`) || !strings.Contains(run[len(run)-1], "change nothing") {
		t.Errorf("the answer before the approval ran with %q", run)
	}
}

// TestCodexTurnFailedIsSaid: Codex's turn.failed is the turn's failure.
func TestCodexTurnFailedIsSaid(t *testing.T) {
	f := newFake(t, "codex", "codex/failed.jsonl")
	h := startAdapter(t, f, "codex")
	h.expectStatus("no plan: codex reported a failure: stream disconnected before completion: retry limit reached")
}

// TestCodexOutsideGitSaysWhy: a CLI that exits before its stream starts
// says why on stderr (Codex outside a git repository), and the member's
// status says it too, not only its log.
func TestCodexOutsideGitSaysWhy(t *testing.T) {
	f := newFake(t, "codex", "codex/no-git.jsonl")
	h := startAdapter(t, f, "codex")
	h.expectStatus("no plan: codex exited: Not inside a trusted directory and --skip-git-repo-check was not specified.")
	if log := h.log.String(); !strings.Contains(log, "codex: exit status 1") {
		t.Errorf("the log lacks the exit status:\n%s", log)
	}
}

// TestInvocationIsATurn: an invocation of the member runs a turn on the
// session with its prompt, and the final answer is its ok result.
func TestInvocationIsATurn(t *testing.T) {
	f := newFake(t, "codex", "codex/plan.jsonl", "codex/revise.jsonl")
	h := startAdapter(t, f, "codex")
	h.expect("plan")
	inv := &protocol.InvocationRequest{RequestID: "inv-1", CorrelationID: "corr-1", Caller: "reviewer", Target: "coder", Action: "explain", Prompt: "explain the flag", TimeoutSec: 60}
	m := protocol.NewMessage(protocol.TypeInvocationRequest, "reviewer", "coder")
	m.Invocation = inv
	h.send(m)
	r := h.expect("result").Result
	if r == nil || r.RequestID != "inv-1" || r.Status != protocol.ResultOK || !strings.Contains(string(r.Result), `"summary":"Revised plan:\n1. Add`) {
		t.Errorf("result = %+v", r)
	}
	if run := f.starts()[1]; !strings.Contains(run[len(run)-1], "explain the flag") || !hasArgs(run, "resume", codexThread) {
		t.Errorf("invocation run args = %q", run)
	}
}
