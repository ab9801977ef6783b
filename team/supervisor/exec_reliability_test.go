package supervisor

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"huddle/inbox"
	"huddle/internal/testkit"
	"huddle/internal/testkit/dirlead"
	"huddle/internal/testkit/dirrecords"
	"huddle/internal/testkit/files"
	"huddle/internal/testkit/teamkit"
	"huddle/protocol"
	"huddle/store"
	"huddle/team"
	"huddle/teamdir"
)

func init() {
	testRoles["deaf"] = runDeaf
	testRoles["tally"] = runTally
	testRoles["shouter"] = runShouter
	testRoles["bigreply"] = runBigReply
	testRoles["planner"] = runPlanner
}

// runDeaf is an agent that never reads its stdin and ignores the polite
// signals: only SIGKILL ends it. It says "deaf" once it ignores them.
func runDeaf() int {
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM)
	json.NewEncoder(os.Stdout).Encode(protocol.ExecLine{Kind: "status", Status: "idle", Activity: "deaf"})
	time.Sleep(time.Hour)
	return 0
}

// runTally reads its stdin and appends "<type> <id> <request_id>" for each
// message to the file $TALLY; it answers nothing and ends at EOF.
func runTally() int {
	f, err := os.OpenFile(os.Getenv("TALLY"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return 3
	}
	defer f.Close()
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 64<<10), protocol.MaxLine)
	for sc.Scan() {
		m, err := protocol.Decode(sc.Bytes(), protocol.Fallback{})
		if err != nil {
			fmt.Fprintf(f, "bad %v\n", err)
			continue
		}
		id := m.RequestID
		if m.Invocation != nil {
			id = m.Invocation.RequestID
		}
		fmt.Fprintf(f, "%s %s %s\n", m.Type, m.ID, id)
	}
	return 0
}

// runShouter writes a line of 2 MiB, then a valid action, then listens.
func runShouter() int {
	w := bufio.NewWriter(os.Stdout)
	w.WriteString(`{"action":"send","to":"lead","content":"`)
	w.WriteString(strings.Repeat("x", 2<<20))
	w.WriteString("\"}\n")
	w.Flush()
	json.NewEncoder(os.Stdout).Encode(protocol.ExecLine{Kind: "send", To: protocol.Lead, Content: "still here"})
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 64<<10), protocol.MaxLine)
	for sc.Scan() {
	}
	return 0
}

// bigText is an answer full of markup: 390 KB of it.
var bigText = strings.Repeat("<a&b>", 390<<10/5)

// runBigReply answers an invocation whose prompt is "big" with 390 KB of
// markup, and one whose prompt is "huge" with 2 MiB.
func runBigReply() int {
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 64<<10), protocol.MaxLine)
	for sc.Scan() {
		m, err := protocol.Decode(sc.Bytes(), protocol.Fallback{})
		if err != nil || m.Type != protocol.TypeInvocationRequest {
			continue
		}
		text := bigText
		switch m.Invocation.Prompt {
		case "huge":
			text = strings.Repeat("y", 2<<20)
		case "full":
			// As long as a line on stdout may be: too long for an inbox
			// line once the envelope of a message is around it.
			empty, _ := protocol.OK(m.Invocation, 1, map[string]string{"summary": ""})
			line, _ := json.Marshal(protocol.ExecLine{Kind: "result", Result: &empty})
			text = strings.Repeat("y", protocol.MaxLine-len(line)-1)
		}
		res, _ := protocol.OK(m.Invocation, 1, map[string]string{"summary": text})
		enc.Encode(protocol.ExecLine{Kind: "result", Result: &res})
	}
	return 0
}

// runPlanner submits $PLANS plans (one by default) and tells the lead every
// plan_approval_response it gets: "response <id> approve=<b> reason=<r>".
func runPlanner() int {
	enc := json.NewEncoder(os.Stdout)
	plans := 1
	if os.Getenv("PLANS") == "2" {
		plans = 2
	}
	for i := range plans {
		enc.Encode(protocol.ExecLine{Kind: "plan", Plan: fmt.Sprintf("plan %d", i+1)})
	}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 64<<10), protocol.MaxLine)
	for sc.Scan() {
		m, err := protocol.Decode(sc.Bytes(), protocol.Fallback{})
		if err != nil || m.Type != protocol.TypePlanApprovalResponse {
			continue
		}
		enc.Encode(protocol.ExecLine{Kind: "send", To: protocol.Lead,
			Content: fmt.Sprintf("response %s approve=%v reason=%s", m.RequestID, m.Approve != nil && *m.Approve, m.Reason)})
	}
	return 0
}

// roleSpec is an exec member that runs the test binary in role, with env.
func roleSpec(name, role string, env ...string) team.MemberSpec {
	exe, _ := os.Executable()
	argv := append([]string{"/usr/bin/env", teamkit.RoleEnv + "=" + role}, env...)
	return team.MemberSpec{Name: name, Role: role, Runtime: team.RuntimeSpec{Kind: team.RuntimeExec, Command: append(argv, exe)}}
}

// agentPID waits until member's process reports activity and returns its pid.
func agentPID(t *testing.T, dir, member, activity string) int {
	t.Helper()
	var pid int
	testkit.WaitFor(t, 10*time.Second, member+"'s process", func() bool {
		m, err := dirrecords.LoadMember(dir, member)
		if err != nil || m.Activity != activity || m.PID == os.Getpid() {
			return false
		}
		pid = m.PID
		return pid > 0
	})
	return pid
}

// TestDeafAgentDoesNotBlockTheRuntime: an exec teammate that never reads
// its stdin (and ignores SIGINT and SIGTERM) with 300 messages for it: the
// runtime still stops within its grace, kills it, and commits no message
// that was not written to it; the next run's process gets all 300.
func TestDeafAgentDoesNotBlockTheRuntime(t *testing.T) {
	dir := t.TempDir()
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: []team.MemberSpec{roleSpec("deaf", "deaf")}})
	ev := &events{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, files.Open(t, dir), dir, Options{OnEvent: ev.add, Tick: 20 * time.Millisecond})
	}()
	pid := agentPID(t, dir, "deaf", "deaf")
	tm, err := team.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The first message is larger than any pipe buffer: it cannot be
	// written whole to an agent that does not read.
	if err := dirlead.Send(dir, tm, protocol.Lead, "deaf", strings.Repeat("x", 256<<10)); err != nil {
		t.Fatal(err)
	}
	for i := range 299 {
		if err := dirlead.Send(dir, tm, protocol.Lead, "deaf", fmt.Sprintf("message %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	testkit.WaitFor(t, 10*time.Second, "deaf's stdin full", func() bool { return testkit.StdinFull(pid) })
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		t.Logf("the runtime stopped %v after its context ended", time.Since(start).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Fatal("the runtime did not stop within 10 s of its context ending, with a deaf agent")
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the deaf agent (pid %d) still runs after the runtime stopped: %v", pid, err)
	}
	if off, err := inbox.Committed(dir, "deaf"); err != nil || off != 0 {
		t.Fatalf("committed offset %d, %v; want 0: the first message was never written whole", off, err)
	}

	// The next run's agent reads: it gets every message.
	tally := filepath.Join(t.TempDir(), "tally")
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: []team.MemberSpec{roleSpec("deaf", "tally", "TALLY="+tally)}})
	startTeam(t, dir, Options{})
	testkit.WaitFor(t, 20*time.Second, "all 300 messages at the next run's agent", func() bool {
		return len(tallied(tally, protocol.TypeMessage)) == 300
	})
}

// tallied reads a tally file: the ids of the messages of type typ, once each.
func tallied(path string, typ protocol.MessageType) map[string]string {
	b, _ := os.ReadFile(path)
	out := map[string]string{}
	for l := range strings.Lines(string(b)) {
		f := append(strings.Fields(l), "")
		if len(f) >= 3 && f[0] == string(typ) {
			out[f[1]] = f[2]
		}
	}
	return out
}

// TestOversizedStdoutLineIsDeadLettered: a line over 1 MiB on an exec
// teammate's stdout is dead-lettered with its first bytes, and the lines
// after it are carried out: the member is not disabled.
func TestOversizedStdoutLineIsDeadLettered(t *testing.T) {
	dir := t.TempDir()
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: []team.MemberSpec{roleSpec("shouter", "shouter")}})
	startTeam(t, dir, Options{})
	got := leadMessages(t, dir)
	testkit.WaitFor(t, 10*time.Second, "the line after the long one carried out", func() bool {
		return strings.Contains(got(), "shouter:still here")
	})
	b, err := os.ReadFile(teamdir.DeadLetterPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	var dl struct {
		Source, Reason, Raw string
	}
	if err := json.Unmarshal(b, &dl); err != nil {
		t.Fatalf("dead letters: %v: %.200s", err, b)
	}
	if dl.Source != "exec:shouter" || !strings.Contains(dl.Reason, "exceeds") || !strings.HasPrefix(dl.Raw, `{"action":"send","to":"lead","content":"xxxx`) {
		t.Fatalf("dead letter: source %q reason %q raw %.60q", dl.Source, dl.Reason, dl.Raw)
	}
	if st := memberStatus(dir, "shouter"); st != protocol.MemberWorking {
		t.Fatalf("shouter is %s after its long line", st)
	}
}

// leadMessages follows the lead's inbox; the function returns "from:content"
// of every message so far, joined by "|".
func leadMessages(t *testing.T, dir string) func() string {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	o, err := inbox.NewObserver(dir, protocol.Lead, true, func(d inbox.Delivery) {
		mu.Lock()
		seen = append(seen, d.Msg.From+":"+d.Msg.Content)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	return func() string {
		if err := o.Drain(); err != nil {
			t.Errorf("observe the lead's inbox: %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(seen, "|")
	}
}

// TestLargeAnswers: a 390 KB answer full of markup reaches its caller and
// takes a line of about 390 KB; an answer too large for an inbox line
// reaches the caller at once as IPC_ERROR naming its size, not as TIMEOUT.
func TestLargeAnswers(t *testing.T) {
	dir := t.TempDir()
	driver := withPolicy(t, dir, team.MemberSpec{Name: "driver", Runtime: team.RuntimeSpec{Kind: team.RuntimeExternal}}, `{"allowed_targets":["big"]}`)
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: []team.MemberSpec{roleSpec("big", "bigreply"), driver}})
	startTeam(t, dir, Options{})
	ctx, caller := outsideCaller(t, dir, "driver")

	res := caller.Call(ctx, protocol.InvocationRequest{Caller: "driver", Target: "big", Action: "answer", Prompt: "big", TimeoutSec: 30})
	var out struct{ Summary string }
	if res.Status != protocol.ResultOK || json.Unmarshal(res.Result, &out) != nil || out.Summary != bigText {
		t.Fatalf("the 390 KB answer: status %s error %+v, %d bytes of summary", res.Status, res.Error, len(out.Summary))
	}
	line, err := os.ReadFile(filepath.Join(teamdir.InboxDirPath(dir), "driver.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(line) > len(bigText)+4096 {
		t.Fatalf("a %d-byte answer took a %d-byte line", len(bigText), len(line))
	}

	// An answer that fits the agent's stdout but not an inbox line, and one
	// that fits neither.
	for _, prompt := range []string{"full", "huge"} {
		res = caller.Call(ctx, protocol.InvocationRequest{Caller: "driver", Target: "big", Action: "answer", Prompt: prompt, TimeoutSec: 30})
		if res.Error == nil || res.Error.Code != protocol.ErrIPC || !strings.Contains(res.Error.Message, "bytes") {
			t.Fatalf("the %s answer: status %s error %+v; want IPC_ERROR naming the size", prompt, res.Status, res.Error)
		}
	}
}

// TestExecAgentToldOfExpiredPlan: an exec teammate whose plan expires gets
// a plan_approval_response with approve false and reason "expired", and the
// roster does not show it awaiting approval with no pending request.
func TestExecAgentToldOfExpiredPlan(t *testing.T) {
	teamkit.OnEachStore(t, team.Team{Name: "t", Settings: team.Settings{ApprovalDeadline: team.Duration(150 * time.Millisecond)},
		Members: []team.MemberSpec{roleSpec("planner", "planner")}}, func(t *testing.T, k *teamkit.Kept) {
		start(t, k, Options{})
		var id string
		testkit.WaitFor(t, 10*time.Second, "the plan expired", func() bool {
			for _, r := range k.Requests() {
				if r.From == "planner" && r.Status == protocol.RequestExpired {
					id = r.ID
					return true
				}
			}
			return false
		})
		testkit.WaitFor(t, 10*time.Second, "the agent told", func() bool {
			return strings.Contains(k.LeadMessages(t), "planner:response "+id+" approve=false reason=expired")
		})
		testkit.WaitFor(t, 10*time.Second, "planner revising", func() bool { return k.Status("planner") == protocol.MemberRevising })
		if m := k.Member("planner"); !strings.Contains(m.Activity, "expired") {
			t.Fatalf("planner's activity %q does not say the plan expired", m.Activity)
		}
	})
}

// TestExecRosterFollowsADecisionWithoutALine: a plan decided by the
// decision file alone (no plan_approval_response line) still opens an exec
// teammate's gate: the roster does not show it awaiting approval of a plan
// that is no longer pending.
func TestExecRosterFollowsADecisionWithoutALine(t *testing.T) {
	teamkit.OnEachStore(t, team.Team{Name: "t", Members: []team.MemberSpec{roleSpec("planner", "planner")}}, func(t *testing.T, k *teamkit.Kept) {
		start(t, k, Options{})
		var id string
		testkit.WaitFor(t, 10*time.Second, "planner awaiting approval", func() bool {
			m := k.Member("planner")
			if m == nil || m.Status != protocol.MemberAwaitingApproval {
				return false
			}
			id = m.RequestID
			return id != ""
		})
		if _, err := k.St.Decide(t.Context(), id, store.Decision{Event: protocol.EventApprove, By: "another-lead", Text: "ok", At: time.Now()}); err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, 10*time.Second, "planner working", func() bool { return k.Status("planner") == protocol.MemberWorking })
	})
}

// TestExecAgentToldOfCancelledPlan: a newer plan cancels the older one, and
// the agent is told so; it stays awaiting approval of the newer one.
func TestExecAgentToldOfCancelledPlan(t *testing.T) {
	dir := t.TempDir()
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: []team.MemberSpec{roleSpec("planner", "planner", "PLANS=2")}})
	startTeam(t, dir, Options{})
	got := leadMessages(t, dir)
	var first, second *protocol.Request
	testkit.WaitFor(t, 10*time.Second, "the first plan cancelled", func() bool {
		rs, _ := dirrecords.ListRequests(dir)
		first, second = nil, nil
		for _, r := range rs {
			switch {
			case r.Plan == "plan 1" && r.Status == protocol.RequestCancelled:
				first = &r
			case r.Plan == "plan 2":
				second = &r
			}
		}
		return first != nil && second != nil
	})
	testkit.WaitFor(t, 10*time.Second, "the agent told", func() bool {
		return strings.Contains(got(), "planner:response "+first.ID+" approve=false reason=cancelled")
	})
	if second.Status != protocol.RequestPending {
		t.Fatalf("the second plan is %s", second.Status)
	}
	m, err := dirrecords.LoadMember(dir, "planner")
	if err != nil || m.Status != protocol.MemberAwaitingApproval || m.RequestID != second.ID {
		t.Fatalf("planner after the cancel: %+v %v; want awaiting approval of %s", m, err, second.ID)
	}
}

func init() { testRoles["holder"] = runHolder }

// runHolder starts a child that keeps its stdout open (and, once $GO
// exists, writes a send line on it), writes the child's pid to $PIDFILE,
// writes holderLines send lines and exits with code 3.
func runHolder() int {
	child := exec.Command("/bin/sh", "-c", `while [ ! -e "$GO" ]; do sleep 0.05; done; echo '{"action":"send","to":"lead","content":"from the child"}'; exec sleep 3600`)
	child.Stdout = os.Stdout
	if err := child.Start(); err != nil {
		return 4
	}
	if err := os.WriteFile(os.Getenv("PIDFILE"), []byte(fmt.Sprint(child.Process.Pid)), 0o600); err != nil {
		return 5
	}
	enc := json.NewEncoder(os.Stdout)
	enc.Encode(protocol.ExecLine{Kind: "status", Status: "working", Activity: "holding"})
	for i := range holderLines {
		enc.Encode(protocol.ExecLine{Kind: "send", To: protocol.Lead, Content: fmt.Sprintf("line %d", i)})
	}
	return 3
}

// holderLines is how many lines the holder writes just before it exits:
// more than a pipe holds at once.
const holderLines = 2000

// TestChildHoldingStdoutHidesNoDeath: an agent that exits while a child
// of its keeps its stdout open is crashed at once, every line it wrote
// before it exited carried out, the child killed with it, and nothing the
// child writes carried out as the member.
func TestChildHoldingStdoutHidesNoDeath(t *testing.T) {
	dir, scratch := t.TempDir(), t.TempDir()
	pidFile, goFile := filepath.Join(scratch, "pid"), filepath.Join(scratch, "go")
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: []team.MemberSpec{roleSpec("holder", "holder", "PIDFILE="+pidFile, "GO="+goFile)}})
	startTeam(t, dir, Options{})
	got := leadMessages(t, dir)
	testkit.WaitFor(t, 20*time.Second, "the agent crashed though its child holds its stdout", func() bool {
		return memberStatus(dir, "holder") == protocol.MemberCrashed
	})
	testkit.WaitFor(t, 20*time.Second, "the lines the agent wrote before it exited", func() bool {
		return strings.Contains(got(), fmt.Sprintf("holder:line %d", holderLines-1))
	})
	if n := strings.Count(got(), "holder:line "); n != holderLines {
		t.Errorf("%d of the agent's %d last lines carried out", n, holderLines)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	fmt.Sscan(string(b), &pid)
	if err := os.WriteFile(goFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 20*time.Second, "the child killed with the agent", func() bool {
		return !processLives(pid)
	})
	if strings.Contains(got(), "from the child") {
		t.Errorf("a line the child wrote after the agent exited was carried out as the member: %q", got())
	}
}

// processLives reports whether pid runs (a zombie does not).
func processLives(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command's closing parenthesis.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
