package agents_test

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"huddle/internal/realcli"
	"huddle/internal/testkit"
	"huddle/internal/testkit/dirrecords"
	"huddle/protocol"
	"huddle/team"
)

// claudeSessionFixture is a whole Claude Code session as the real CLI
// printed it: plan, denied; revised plan, allowed; a Write and a Bash
// allowed, a Bash denied; a result; a second user turn and its result.
const claudeSessionFixture = "real/claude/plan-deny-revise-work.jsonl"

// TestClaudeSessionPlanRejectReviseApproveWork: one claude process, in
// plan mode on the control protocol, carries the whole session. Its
// ExitPlanMode questions are the plans put to the lead; the rejection is
// the deny message the model revises by, the approval the allow (the
// input echoed) after which the same run does the work; each tool use it
// asks for is a permission line whose answer goes back as the CLI's
// control_response; the run's result is the report to the lead, a
// message is a second user turn; usage is each run's own.
func TestClaudeSessionPlanRejectReviseApproveWork(t *testing.T) {
	f := newFake(t, "claude", claudeSessionFixture)
	h := startAdapter(t, f, "claude", "--model", "sonnet")

	if p := h.expect("plan"); p.Plan != strings.TrimSpace(realcli.ClaudePlanV1) {
		t.Errorf("first plan = %q, want the plan file's %q", p.Plan, realcli.ClaudePlanV1)
	}
	h.decide(false, realcli.ClaudePlanDenial)
	if p := h.expect("plan"); p.Plan != strings.TrimSpace(realcli.ClaudePlanV2) {
		t.Errorf("revised plan = %q", p.Plan)
	}
	h.decide(true, "")
	w := h.expect("permission")
	if w.Tool != "Write" || protocol.KindOfID(w.RequestID) != protocol.KindPermission || !strings.Contains(string(w.Input), `hello.txt"`) || w.ToolUseID == "" {
		t.Errorf("the Write's permission line: %+v", w)
	}
	h.permit(w.RequestID, true, "")
	show := h.expect("permission")
	if show.Tool != "Bash" || !strings.Contains(string(show.Input), realcli.ClaudeShowCommand) {
		t.Errorf("the first Bash's permission line: %+v", show)
	}
	h.permit(show.RequestID, true, "")
	rm := h.expect("permission")
	if rm.Tool != "Bash" || !strings.Contains(string(rm.Input), realcli.ClaudeRmCommand) {
		t.Errorf("the second Bash's permission line: %+v", rm)
	}
	h.permit(rm.RequestID, false, realcli.ClaudeRmDenial)
	if s := h.expect("send"); s.To != protocol.Lead || s.Content != realcli.ClaudeDone {
		t.Errorf("the work's report: %+v", s)
	}
	h.message(protocol.Lead, realcli.ClaudeThanks)
	if s := h.expect("send"); s.To != protocol.Lead || s.Content != realcli.ClaudeWelcome {
		t.Errorf("the answer to the message: %+v", s)
	}
	h.shutdown("sd-idle")
	if r := h.expect("shutdown_response"); r.RequestID != "sd-idle" || r.Approve == nil || !*r.Approve {
		t.Errorf("shutdown while idle answered %+v", r)
	}
	if err := h.ended(); err != nil {
		t.Errorf("Run = %v", err)
	}

	starts := f.starts()
	if len(starts) != 1 {
		t.Fatalf("claude started %d times, want one process for the session: %q", len(starts), starts)
	}
	if a := starts[0]; !hasArgs(a, "-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose") ||
		!hasArgs(a, "--permission-prompt-tool", "stdio", "--permission-mode", "plan") || !hasArgs(a, "--model", "sonnet") {
		t.Errorf("claude's arguments: %q", a)
	}
	host := f.hostLines(t, 1)
	want := [][]string{
		{`"type":"user"`, "Task: " + task, "ExitPlanMode"},
		{`"behavior":"deny"`, realcli.ClaudePlanDenial, "ExitPlanMode"},
		{`"behavior":"allow"`, `"updatedInput":{"plan":"# Plan\n\n1. Write hello.txt with a greeting.\n2. Copy it`},
		{`"behavior":"allow"`, `"updatedInput":{"content":"hello\n","file_path":"/tmp/huddle-realcli/work/hello.txt"}`},
		{`"behavior":"allow"`, realcli.ClaudeShowCommand},
		{`"behavior":"deny"`, realcli.ClaudeRmDenial},
		{`"type":"user"`, realcli.ClaudeThanks},
	}
	if len(host) != len(want) {
		t.Errorf("the host wrote %d lines, want %d (2 user turns, 5 answers): %v", len(host), len(want), host)
	}
	for i := range min(len(host), len(want)) {
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(host[i])
		for _, w := range want[i] {
			if !strings.Contains(b.String(), w) {
				t.Errorf("host line %d lacks %q: %s", i+1, w, b.String())
			}
		}
	}
	// The CLI's per-run figures: 9,000+900+2,700 in and 450 out for the
	// first run, 7 and 3 for the second, $0.05004 and $0.000088.
	in, out, cost := h.usage()
	if in != 12607 || out != 453 || math.Abs(cost-0.050128) > 1e-9 {
		t.Errorf("usage = in %d out %d cost %v, want 12607, 453, 0.050128", in, out, cost)
	}
}

// insert is directives for the session fake, put before the first line
// of a recording that holds before.
type insert struct {
	before     string
	directives []string
}

// recorded is the real recording name (under testdata) with inserts.
func recorded(t *testing.T, name string, inserts ...insert) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for l := range strings.Lines(string(b)) {
		if len(inserts) > 0 && strings.Contains(l, inserts[0].before) {
			out = append(out, inserts[0].directives...)
			inserts = inserts[1:]
		}
		out = append(out, strings.TrimSuffix(l, "\n"))
	}
	if len(inserts) > 0 {
		t.Fatalf("%s has no line with %q", name, inserts[0].before)
	}
	return strings.Join(out, "\n") + "\n"
}

// beforeResult holds the first run of the session before its result
// until the test touches release.
var beforeResult = insert{`"type":"result"`, []string{"#touch working", "#wait-for release"}}

// approveAndPermit approves the first plan and allows the Write and the
// first Bash, denies the rm: the recorded session's first run.
func approveAndPermit(h *harness, note string) {
	h.expect("plan")
	h.decide(true, note)
	for _, allow := range []bool{true, true, false} {
		p := h.expect("permission")
		h.permit(p.RequestID, allow, "not this one")
	}
}

// TestClaudeMessageWaitsForTheRunningTurn: a teammate's message that
// arrives while a run works is the session's next user turn once the run
// ends, on the same process, and its answer goes back to the sender. The
// approval's note reaches the model with the plan.
func TestClaudeMessageWaitsForTheRunningTurn(t *testing.T) {
	f := newFakeOf(t, "claude", recorded(t, claudeSessionFixture, beforeResult))
	h := startAdapter(t, f, "claude")
	approveAndPermit(h, "keep it small")
	testkit.WaitFor(t, 20*time.Second, "the run under way", func() bool { return f.exists("working") })
	h.message("bob", "which file did you write?")
	f.touch(t, "release")
	if s := h.expect("send"); s.To != protocol.Lead || s.Content != realcli.ClaudeDone {
		t.Errorf("first send %+v, want the report to the lead", s)
	}
	if s := h.expect("send"); s.To != "bob" || s.Content != realcli.ClaudeWelcome {
		t.Errorf("answer to bob: %+v", s)
	}
	host := f.hostLines(t, 1)
	if b, _ := json.Marshal(host[1]); !strings.Contains(string(b), `The lead approved this plan with a note: keep it small`) {
		t.Errorf("the approval: %s", b)
	}
	if b, _ := json.Marshal(host[len(host)-1]); !strings.Contains(string(b), "which file did you write?") || !strings.Contains(string(b), `"type":"user"`) {
		t.Errorf("the message's turn: %s", b)
	}
	if n := len(f.starts()); n != 1 {
		t.Errorf("claude started %d times", n)
	}
}

// TestClaudeShutdownWhileWorkingAfterTheTurn: a shutdown asked during the
// run that carries out the plan is approved once it ends, its report
// delivered first.
func TestClaudeShutdownWhileWorkingAfterTheTurn(t *testing.T) {
	f := newFakeOf(t, "claude", recorded(t, claudeSessionFixture, beforeResult))
	h := startAdapter(t, f, "claude")
	approveAndPermit(h, "")
	testkit.WaitFor(t, 20*time.Second, "the run under way", func() bool { return f.exists("working") })
	h.shutdown("sd-1")
	h.expectStatus("finishing its work turn, then stopping")
	f.touch(t, "release")
	if s := h.expect("send"); s.To != protocol.Lead || s.Content != realcli.ClaudeDone {
		t.Errorf("the turn's report: %+v", s)
	}
	r := h.expect("shutdown_response")
	if r.RequestID != "sd-1" || r.Approve == nil || !*r.Approve || r.Reason != "finished its work turn, stopping" {
		t.Errorf("shutdown answered %+v", r)
	}
	if err := h.ended(); err != nil {
		t.Errorf("Run = %v", err)
	}
}

// TestClaudeShutdownAskedTwiceKillsTheTurn: a second shutdown request while
// the CLI works kills it at once; both are approved, saying the turn was
// cut.
func TestClaudeShutdownAskedTwiceKillsTheTurn(t *testing.T) {
	f := newFakeOf(t, "claude", recorded(t, claudeSessionFixture, insert{`"type":"result"`, []string{"#touch working", "#wait-for never"}}))
	h := startAdapter(t, f, "claude")
	approveAndPermit(h, "")
	testkit.WaitFor(t, 20*time.Second, "the run under way", func() bool { return f.exists("working") })
	h.shutdown("sd-1")
	h.shutdown("sd-2")
	var ids []string
	for range 2 {
		r := h.expect("shutdown_response")
		ids = append(ids, r.RequestID)
		if r.Approve == nil || !*r.Approve || !strings.Contains(r.Reason, "second request") || !strings.Contains(r.Reason, "cut short") {
			t.Errorf("shutdown answered %+v", r)
		}
	}
	if strings.Join(ids, " ") != "sd-1 sd-2" {
		t.Errorf("answered %v", ids)
	}
	if err := h.ended(); err != nil {
		t.Errorf("Run = %v", err)
	}
	assertGone(t, f)
}

// TestClaudeShutdownWhileAskingCutsAtOnce: a shutdown while the run waits
// for a permission (or for the plan's approval) stops it at once: nothing
// would end the run first.
func TestClaudeShutdownWhileAskingCutsAtOnce(t *testing.T) {
	for _, waitOn := range []string{"plan", "permission"} {
		t.Run(waitOn, func(t *testing.T) {
			f := newFake(t, "claude", claudeSessionFixture)
			h := startAdapter(t, f, "claude")
			h.expect("plan")
			if waitOn == "permission" {
				h.decide(true, "")
				h.expect("permission")
			}
			h.shutdown("sd-1")
			r := h.expect("shutdown_response")
			if r.RequestID != "sd-1" || r.Approve == nil || !*r.Approve || !strings.Contains(r.Reason, "waiting for an answer") {
				t.Errorf("shutdown answered %+v", r)
			}
			if err := h.ended(); err != nil {
				t.Errorf("Run = %v", err)
			}
			assertGone(t, f)
		})
	}
}

// assertGone checks the fake's last process is not running.
func assertGone(t *testing.T, f *fake) {
	t.Helper()
	var last fakeRun
	for _, r := range readRuns(f.dir) {
		if r.Event == "start" {
			last = r
		}
	}
	if last.PID == 0 {
		t.Fatal("the fake never started")
	}
	if err := syscall.Kill(last.PID, 0); err == nil {
		t.Errorf("the killed claude (pid %d) is still running", last.PID)
	}
}

// TestClaudePlanExpiredWaitsAgain: a plan nobody decided in time is put to
// the lead again, the run still waiting on it; the next decision answers
// the CLI.
func TestClaudePlanExpiredWaitsAgain(t *testing.T) {
	f := newFake(t, "claude", claudeSessionFixture)
	h := startAdapter(t, f, "claude")
	first := h.expect("plan")
	m := protocol.NewMessage(protocol.TypePlanApprovalResponse, protocol.Lead, "coder")
	m.RequestID, m.Approve, m.Reason, m.Feedback = protocol.NewRequestID(protocol.KindPlan), protocol.Bool(false), string(protocol.RequestExpired), "nobody answered"
	h.send(m)
	if again := h.expect("plan"); again.Plan != first.Plan {
		t.Errorf("after the deadline the plan put again is %q, want %q", again.Plan, first.Plan)
	}
	h.decide(false, realcli.ClaudePlanDenial)
	h.expect("plan")
	host := f.hostLines(t, 1)
	if len(host) != 2 {
		t.Fatalf("the CLI got %d lines, want the task and one answer: %v", len(host), host)
	}
	if b, _ := json.Marshal(host[1]); !strings.Contains(string(b), realcli.ClaudePlanDenial) {
		t.Errorf("the answer after the deadline: %s", b)
	}
}

// TestClaudeCrashGarbageAndFailureAreSaid: a CLI that exits non-zero, or
// prints lines that are not JSON events and exits without a result, or
// ends a run with a failure (a real API error), is said in the log and
// the status; the agent does not hang, and a message runs the plan again
// with the message added, resuming the session the CLI named.
func TestClaudeCrashGarbageAndFailureAreSaid(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", claudeSessionFixture))
	if err != nil {
		t.Fatal(err)
	}
	init, _, _ := strings.Cut(string(b), "\n")
	var head struct {
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal([]byte(init), &head); err != nil || head.SessionID == "" {
		t.Fatalf("the recording's first line is no init with a session: %q", init)
	}
	f := newFakeOf(t, "claude",
		"#stderr Error: something broke inside the fake claude\n#exit 3\n",
		init+"\nWelcome to the fake claude!\nnot json\n{\"no\":\"type\"}\n#exit 0\n",
		recorded(t, "real/claude/api-error.jsonl")+recorded(t, claudeSessionFixture))
	h := startAdapter(t, f, "claude")

	if s := h.expectStatus("no plan: claude exited: Error: something broke inside the fake claude"); s.Status != "idle" {
		t.Errorf("after the crash: %+v", s)
	}
	h.message(protocol.Lead, "try again")
	h.expectStatus("no plan: claude ended without finishing the turn (4 lines, 3 not JSON events)")
	h.message(protocol.Lead, "once more")
	h.expectStatus("no plan: claude reported a failure: API Error: 400")
	h.message(protocol.Lead, "last try")
	if p := h.expect("plan"); p.Plan != strings.TrimSpace(realcli.ClaudePlanV1) {
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
	if len(runs) != 3 {
		t.Fatalf("claude started %d times, want 3 (the failed run's process lives on): %q", len(runs), runs)
	}
	if slices.Contains(runs[1], "--resume") || !hasArgs(runs[2], "--resume", head.SessionID) {
		t.Errorf("a crash gave no session to resume; the init did: %q", runs)
	}
	for _, r := range runs {
		if !hasArgs(r, "--permission-mode", "plan") {
			t.Errorf("a plan retry may edit: %q", r)
		}
	}
	if b, _ := json.Marshal(f.hostLines(t, 2)[0]); !strings.Contains(string(b), "lead adds: try again") || !strings.Contains(string(b), "Task: "+task) {
		t.Errorf("the retry's turn: %s", b)
	}
	if b, _ := json.Marshal(f.hostLines(t, 3)[1]); !strings.Contains(string(b), "lead adds: last try") {
		t.Errorf("the last retry's turn: %s", b)
	}
}

// TestClaudeShutdownThatExpiredDuringTheTurn: a shutdown request that reached
// its deadline before the turn ended is not answered, and the agent goes
// on; a later one, while idle, is approved at once.
func TestClaudeShutdownThatExpiredDuringTheTurn(t *testing.T) {
	teamDir := t.TempDir()
	f := newFakeOf(t, "claude", recorded(t, claudeSessionFixture, beforeResult))
	h := startAdapterIn(t, teamDir, f, "claude")
	approveAndPermit(h, "")
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
	h.expectStatus("done: " + realcli.ClaudeDone)
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
