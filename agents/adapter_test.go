package agents_test

import (
	"math"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/internal/testkit/dirrecords"
	"huddle/protocol"
	"huddle/team"
)

const (
	claudeSession = "9b2f6c1e-4d7a-4e8b-a1c3-5f6e7d8c9b0a"
	codexThread   = "0199a213-81c0-7800-8aa1-bbab2a035a53"
	claudePlan    = "1. Add a --verbose flag to main.go.\n2. Print each step when it is set.\n3. Run go test ./... to check."
)

// TestClaudePlanApproveWork: the plan runs in plan mode on a new session
// and its ExitPlanMode plan goes to the lead; only after the approval does
// the session resume with edits allowed, told to carry out the plan with
// the lead's feedback; its tools are the activity, its result's tokens and
// cost are reported, its final answer goes to the lead; idle, a shutdown
// is approved at once.
func TestClaudePlanApproveWork(t *testing.T) {
	f := newFake(t, "claude", "claude/plan.jsonl", "claude/work.jsonl")
	f.touch(t, "release")
	h := startAdapter(t, f, "claude", "--model", "sonnet")

	if p := h.expect("plan"); p.Plan != claudePlan {
		t.Errorf("plan = %q, want the ExitPlanMode input %q", p.Plan, claudePlan)
	}
	runs := f.starts()
	if len(runs) != 1 {
		t.Fatalf("runs before the approval = %d, want 1: %q", len(runs), runs)
	}
	plan := runs[0]
	if plan[0] != "-p" || !strings.Contains(plan[1], "Task: "+task) ||
		!hasArgs(plan, "--output-format", "stream-json", "--verbose", "--permission-mode", "plan") ||
		!hasArgs(plan, "--model", "sonnet") || slices.Contains(plan, "--resume") {
		t.Errorf("plan run args = %q", plan)
	}

	h.decide(true, "keep it small")
	if s := h.expect("send"); s.To != "lead" || s.Content != "Added --verbose to main.go; go test ./... passes." {
		t.Errorf("final answer sent as %+v", s)
	}
	work := f.starts()[1]
	if !hasArgs(work, "--permission-mode", "acceptEdits") || !hasArgs(work, "--resume", claudeSession) ||
		!strings.Contains(work[1], "carry out the approved plan") || !strings.Contains(work[1], "keep it small") ||
		!hasArgs(work, "--model", "sonnet") {
		t.Errorf("work run args = %q", work)
	}
	done := h.expectStatus("done: Added --verbose")
	if done.Status != "idle" {
		t.Errorf("after the work: %+v, want idle", done)
	}
	got := strings.Join(h.statuses(), " | ")
	for _, want := range []string{"working: planning: " + task, "working: Read main.go", "working: putting forward the plan",
		"working: carrying out the plan", "working: thinking", "working: Edit main.go", "working: running: go test ./..."} {
		if !strings.Contains(got, want) {
			t.Errorf("statuses lack %q: %s", want, got)
		}
	}
	in, out, cost := h.usage()
	if in != 12+900+1900+16+400+3000 || out != 152+300 || math.Abs(cost-(0.0421+0.0875)) > 1e-9 {
		t.Errorf("usage = in %d out %d cost %v", in, out, cost)
	}

	h.shutdown("sd-idle")
	if r := h.expect("shutdown_response"); r.RequestID != "sd-idle" || r.Approve == nil || !*r.Approve || !strings.Contains(r.Reason, "idle") {
		t.Errorf("shutdown while idle answered %+v", r)
	}
	if err := h.ended(); err != nil {
		t.Errorf("Run = %v", err)
	}
	if n := len(f.starts()); n != 2 {
		t.Errorf("claude ran %d times, want 2", n)
	}
}

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

// TestMessageIsAFollowUpTurn: a teammate's message that arrives while a
// turn runs waits for it, then runs on the same session (with edits, the
// plan being approved) and its answer goes back to the sender.
func TestMessageIsAFollowUpTurn(t *testing.T) {
	f := newFake(t, "claude", "claude/plan.jsonl", "claude/work.jsonl", "claude/answer.jsonl")
	h := startAdapter(t, f, "claude")
	h.expect("plan")
	h.decide(true, "")
	testkit.WaitFor(t, 20*time.Second, "the work turn under way", func() bool { return f.exists("working") })
	h.message("bob", "which flag did you add?")
	f.touch(t, "release")

	if s := h.expect("send"); s.To != "lead" {
		t.Errorf("first send %+v, want the work's answer to the lead", s)
	}
	if s := h.expect("send"); s.To != "bob" || s.Content != "The flag is -verbose; it prints each step." {
		t.Errorf("answer to bob: %+v", s)
	}
	runs := readRuns(f.dir)
	var order []string
	for _, r := range runs {
		order = append(order, r.Event+string(rune('0'+r.N)))
	}
	if strings.Join(order, " ") != "start1 end1 start2 end2 start3 end3" {
		t.Errorf("runs overlapped: %v", order)
	}
	follow := f.starts()[2]
	if !hasArgs(follow, "--resume", claudeSession) || !hasArgs(follow, "--permission-mode", "acceptEdits") ||
		!strings.Contains(follow[1], "which flag did you add?") || !strings.Contains(follow[1], "bob") {
		t.Errorf("follow-up run args = %q", follow)
	}
}

// TestMessageBeforeApprovalStaysReadOnly: a message answered while the
// plan awaits the lead runs read-only, and reports no status (huddle
// refuses one while a plan awaits approval).
func TestMessageBeforeApprovalStaysReadOnly(t *testing.T) {
	f := newFake(t, "claude", "claude/plan.jsonl", "claude/answer.jsonl")
	h := startAdapter(t, f, "claude")
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
	if !hasArgs(run, "--permission-mode", "plan") || !strings.Contains(run[1], "change nothing") {
		t.Errorf("the answer before the approval ran with %q", run)
	}
}

// TestShutdownWhileWorkingAfterTheTurn: a shutdown asked during a turn is
// approved once the turn ends, its answer delivered first.
func TestShutdownWhileWorkingAfterTheTurn(t *testing.T) {
	f := newFake(t, "claude", "claude/plan.jsonl", "claude/work.jsonl")
	h := startAdapter(t, f, "claude")
	h.expect("plan")
	h.decide(true, "")
	testkit.WaitFor(t, 20*time.Second, "the work turn under way", func() bool { return f.exists("working") })
	h.shutdown("sd-1")
	h.expectStatus("finishing its work turn, then stopping")
	f.touch(t, "release")
	if s := h.expect("send"); s.To != "lead" {
		t.Errorf("the turn's answer: %+v", s)
	}
	r := h.expect("shutdown_response")
	if r.RequestID != "sd-1" || r.Approve == nil || !*r.Approve || r.Reason != "finished its work turn, stopping" {
		t.Errorf("shutdown answered %+v", r)
	}
	if err := h.ended(); err != nil {
		t.Errorf("Run = %v", err)
	}
}

// TestShutdownAskedTwiceKillsTheTurn: a second shutdown request while the
// CLI works kills it at once; both are approved, saying the turn was cut.
func TestShutdownAskedTwiceKillsTheTurn(t *testing.T) {
	f := newFake(t, "claude", "claude/plan.jsonl", "claude/hang.jsonl")
	h := startAdapter(t, f, "claude")
	h.expect("plan")
	h.decide(true, "")
	h.expectStatus("running: go test -count=1000 ./...")
	testkit.WaitFor(t, 20*time.Second, "the turn under way", func() bool { return f.exists("working") })
	h.shutdown("sd-1")
	h.shutdown("sd-2")
	var ids []string
	for range 2 {
		r := h.expect("shutdown_response")
		ids = append(ids, r.RequestID)
		if r.Approve == nil || !*r.Approve || !strings.Contains(r.Reason, "cut short") {
			t.Errorf("shutdown answered %+v", r)
		}
	}
	if strings.Join(ids, " ") != "sd-1 sd-2" {
		t.Errorf("answered %v", ids)
	}
	if err := h.ended(); err != nil {
		t.Errorf("Run = %v", err)
	}
	runs := readRuns(f.dir)
	last := runs[len(runs)-1]
	if last.Event != "start" || last.N != 2 {
		t.Fatalf("the hanging turn ended by itself: %+v", runs)
	}
	if err := syscall.Kill(last.PID, 0); err == nil {
		t.Errorf("the killed claude (pid %d) is still running", last.PID)
	}
}

// TestCrashAndGarbageAreSaid: a CLI that exits non-zero, or prints lines
// that are not JSON events and ends without a result, is said in the log
// and the status; the agent does not hang, and a message runs the plan
// again with the message added.
func TestCrashAndGarbageAreSaid(t *testing.T) {
	f := newFake(t, "claude", "claude/crash.jsonl", "claude/garbage.jsonl", "claude/error_result.jsonl", "claude/plan.jsonl")
	h := startAdapter(t, f, "claude")

	if s := h.expectStatus("no plan: claude exited: Error: something broke inside the fake claude"); s.Status != "idle" {
		t.Errorf("after the crash: %+v", s)
	}
	h.message("lead", "try again")
	h.expectStatus("no plan: claude ended without finishing the turn (4 lines, 4 not JSON events)")
	h.message("lead", "once more")
	h.expectStatus("no plan: claude reported a failure: error_max_turns: Reached maximum number of turns (10)")
	h.message("lead", "last try")
	if p := h.expect("plan"); p.Plan != claudePlan {
		t.Errorf("plan = %q", p.Plan)
	}
	log := h.log.String()
	for _, want := range []string{"Error: something broke inside the fake claude", "claude: exit status 3",
		"claude: not a JSON event", "Welcome to the fake claude!"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	runs := f.starts()
	if !strings.Contains(runs[1][1], "lead adds: try again") || !strings.Contains(runs[1][1], "Task: "+task) {
		t.Errorf("retry prompt = %q", runs[1][1])
	}
	if slices.Contains(runs[1], "--resume") || !hasArgs(runs[3], "--resume", claudeSession) {
		t.Errorf("a crash gave no session to resume; the error result did: %q", runs)
	}
	for _, r := range runs {
		if !hasArgs(r, "--permission-mode", "plan") {
			t.Errorf("a plan retry may edit: %q", r)
		}
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
	f := newFake(t, "claude", "claude/plan.jsonl", "claude/answer.jsonl")
	h := startAdapter(t, f, "claude")
	h.expect("plan")
	inv := &protocol.InvocationRequest{RequestID: "inv-1", CorrelationID: "corr-1", Caller: "reviewer", Target: "coder", Action: "explain", Prompt: "explain the flag", TimeoutSec: 60}
	m := protocol.NewMessage(protocol.TypeInvocationRequest, "reviewer", "coder")
	m.Invocation = inv
	h.send(m)
	r := h.expect("result").Result
	if r == nil || r.RequestID != "inv-1" || r.Status != protocol.ResultOK || !strings.Contains(string(r.Result), `"summary":"The flag is -verbose; it prints each step."`) {
		t.Errorf("result = %+v", r)
	}
	if run := f.starts()[1]; !strings.Contains(run[1], "explain the flag") || !hasArgs(run, "--resume", claudeSession) {
		t.Errorf("invocation run args = %q", run)
	}
}

// TestShutdownThatExpiredDuringTheTurn: a shutdown request that reached
// its deadline before the turn ended is not answered, and the agent goes
// on; a later one, while idle, is approved at once.
func TestShutdownThatExpiredDuringTheTurn(t *testing.T) {
	teamDir := t.TempDir()
	f := newFake(t, "claude", "claude/plan.jsonl", "claude/work.jsonl")
	h := startAdapterIn(t, teamDir, f, "claude")
	h.expect("plan")
	h.decide(true, "")
	testkit.WaitFor(t, 20*time.Second, "the work turn under way", func() bool { return f.exists("working") })
	r := protocol.NewRequest(protocol.KindShutdown, protocol.NewRequestID(protocol.KindShutdown), protocol.Lead, "coder", time.Now(), 2*time.Minute)
	if err := dirrecords.CreateRequest(teamDir, &r); err != nil {
		t.Fatal(err)
	}
	h.shutdown(r.ID)
	h.expectStatus("finishing its work turn, then stopping")
	if _, err := dirrecords.Resolve(teamDir, r.ID, team.Resolution{Event: protocol.EventDeadline, By: "huddle", Text: "no answer before the deadline"}); err != nil {
		t.Fatal(err)
	}
	f.touch(t, "release")
	h.expectStatus("done: Added --verbose")
	h.shutdown("sd-later")
	if resp := h.expect("shutdown_response"); resp.RequestID != "sd-later" {
		t.Errorf("answered %+v, want only sd-later", resp)
	}
	if err := h.ended(); err != nil {
		t.Errorf("Run = %v", err)
	}
	if !strings.Contains(h.log.String(), "shutdown request "+r.ID+" is expired already: going on") {
		t.Errorf("log:\n%s", h.log.String())
	}
}
