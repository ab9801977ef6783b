package supervisor

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/internal/testkit/dirlead"
	"huddle/internal/testkit/dirrecords"
	"huddle/internal/testkit/teamkit"
	"huddle/protocol"
	"huddle/team"
	"huddle/teamdir"
)

func init() {
	testRoles["echo"] = func() int { return echoProcess(false) }
	testRoles["garbage"] = func() int { return echoProcess(true) }
	testRoles["exec-target"] = func() int {
		var req protocol.InvocationRequest
		if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
			return 3
		}
		res, _ := protocol.OK(&req, 1, map[string]string{"summary": "ran " + req.Prompt})
		json.NewEncoder(os.Stdout).Encode(res)
		return 0
	}
	testRoles["crash"] = func() int {
		fmt.Fprintln(os.Stderr, "agent: something went wrong")
		return 3
	}
}

// echoProcess is a minimal exec teammate: it submits a plan, echoes
// messages, and approves a shutdown.
func echoProcess(garbage bool) int {
	enc := json.NewEncoder(os.Stdout)
	enc.Encode(protocol.ExecLine{Kind: "status", Status: "idle", Activity: "listening"})
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		m, err := protocol.Decode(sc.Bytes(), protocol.Fallback{})
		if err != nil {
			continue
		}
		switch m.Type {
		case protocol.TypeMessage:
			if garbage {
				fmt.Println("not json at all")
			}
			enc.Encode(protocol.ExecLine{Kind: "send", To: m.From, Content: "echo: " + m.Content})
		case protocol.TypeInvocationRequest:
			res, _ := protocol.OK(m.Invocation, 1, map[string]string{"summary": "echo: " + m.Invocation.Prompt})
			if garbage {
				res.Status = "" // a malformed answer
			}
			enc.Encode(protocol.ExecLine{Kind: "result", Result: &res})
		case protocol.TypeShutdownRequest:
			enc.Encode(protocol.ExecLine{Kind: "shutdown_response", RequestID: m.RequestID, Approve: protocol.Bool(true), Reason: "bye"})
			return 0
		}
	}
	return 0
}

type events struct {
	mu sync.Mutex
	es []Event
}

func (e *events) add(ev Event) { e.mu.Lock(); e.es = append(e.es, ev); e.mu.Unlock() }

func (e *events) has(match func(Event) bool) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ev := range e.es {
		if match(ev) {
			return true
		}
	}
	return false
}

// startTeam runs the team in dir, on its files store, until the test ends.
func startTeam(t *testing.T, dir string, opts Options) *events {
	t.Helper()
	return start(t, teamkit.FilesKept(t, dir), opts)
}

func memberStatus(dir, name string) protocol.MemberStatus {
	m, err := dirrecords.LoadMember(dir, name)
	if err != nil {
		return ""
	}
	return m.Status
}

func pendingPlan(dir, from string) *protocol.Request {
	all, _ := dirrecords.ListRequests(dir)
	for _, r := range all {
		if r.Kind == protocol.KindPlan && r.From == from && r.Status == protocol.RequestPending {
			return &r
		}
	}
	return nil
}

func TestPlanGateApproveAndRejectRevise(t *testing.T) {
	teamkit.OnEachStore(t, team.Team{Name: "t", Members: []team.MemberSpec{
		teamkit.Scripted("alice", "", team.Step{Plan: "do the thing"}, team.Step{Say: "lead", Text: "did the thing"}, team.Step{Wait: team.Duration(time.Hour)}),
	}}, func(t *testing.T, k *teamkit.Kept) {
		ev := start(t, k, Options{})
		testkit.WaitFor(t, 5*time.Second, "a pending plan", func() bool { return k.PendingPlan("alice") != nil })
		testkit.WaitFor(t, 5*time.Second, "alice awaiting approval", func() bool { return k.Status("alice") == protocol.MemberAwaitingApproval })
		first := k.PendingPlan("alice")
		// The gate: nothing after the plan ran.
		if ev.has(func(e Event) bool {
			return e["event"] == "message_delivered" && e["from"] == "alice" && e["type"] == "message"
		}) {
			t.Fatal("a step ran before the plan was approved")
		}
		if _, err := k.Decide(first.ID, protocol.EventReject, "use the other room"); err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, 5*time.Second, "a revised plan", func() bool {
			p := k.PendingPlan("alice")
			return p != nil && p.ID != first.ID
		})
		revised := k.PendingPlan("alice")
		if !strings.Contains(revised.Plan, "use the other room") {
			t.Fatalf("revised plan lacks the feedback: %q", revised.Plan)
		}
		if revised.Revises != first.ID {
			t.Fatalf("the revised plan revises %q, want %s", revised.Revises, first.ID)
		}
		if first.Revises != "" {
			t.Fatalf("a first plan revises %q", first.Revises)
		}
		if r := k.Request(first.ID); r == nil || r.Status != protocol.RequestRejected || r.Feedback != "use the other room" || r.ResolvedBy != "lead" {
			t.Fatalf("first plan record: %+v", r)
		}
		if _, err := k.Decide(revised.ID, protocol.EventApprove, ""); err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, 5*time.Second, "alice's message after approval", func() bool {
			return ev.has(func(e Event) bool {
				return e["event"] == "message_delivered" && e["from"] == "alice" && e["type"] == "message"
			})
		})
		if _, err := k.Decide(revised.ID, protocol.EventReject, "too late"); err == nil || !strings.Contains(err.Error(), "already approved by lead") {
			t.Fatalf("second decision: %v", err)
		}
		// Every move is in alice's status history (local), in the order it
		// was made.
		hist, err := team.ReadStatusHistory(k.Dir, "alice", 0)
		if err != nil {
			t.Fatal(err)
		}
		want := []protocol.MemberStatus{protocol.MemberAwaitingApproval, protocol.MemberRevising, protocol.MemberAwaitingApproval, protocol.MemberWorking}
		i := 0
		for _, c := range hist {
			if i < len(want) && c.Status == want[i] {
				i++
			}
			if c.TS.IsZero() {
				t.Errorf("a change without a time: %+v", c)
			}
		}
		if i != len(want) {
			t.Fatalf("alice's history %+v lacks the moves %v in order", hist, want)
		}
	})
}

// TestShutdownRejectedWhileWorkingThenApproved: a scripted teammate whose
// policy is reject_while_working refuses a shutdown in the middle of a
// step (bob's lasts an hour: no scheduler ends it first) and approves one
// when it is not working (bee waits); a stopped member's shutdown is
// cancelled at once.
func TestShutdownRejectedWhileWorkingThenApproved(t *testing.T) {
	teamkit.OnEachStore(t, team.Team{Name: "t", Members: []team.MemberSpec{
		teamkit.Scripted("bob", team.OnShutdownRejectWhileWorking, team.Step{Work: team.Duration(time.Hour), Activity: "critical section"}),
		teamkit.Scripted("bee", team.OnShutdownRejectWhileWorking, team.Step{Wait: team.Duration(time.Hour)}),
	}}, func(t *testing.T, k *teamkit.Kept) {
		start(t, k, Options{})
		testkit.WaitFor(t, 5*time.Second, "bob working", func() bool {
			m := k.Member("bob")
			return m != nil && m.Activity == "critical section"
		})
		r, err := k.RequestShutdown("bob", "end of day")
		if err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, 5*time.Second, "the answer", func() bool { x := k.Request(r.ID); return x != nil && x.Status.IsTerminal() })
		if got := k.Request(r.ID); got.Status != protocol.RequestRejected || got.ResolvedBy != "bob" || !strings.Contains(got.ResponseReason, "critical section") {
			t.Fatalf("shutdown while working: %+v", got)
		}
		if st := k.Status("bob"); st != protocol.MemberWorking {
			t.Fatalf("bob is %s after refusing, want working", st)
		}
		testkit.WaitFor(t, 5*time.Second, "bee idle", func() bool { return k.Status("bee") == protocol.MemberIdle })
		r2, err := k.RequestShutdown("bee", "end of day, really")
		if err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, 5*time.Second, "bee stopped", func() bool { return k.Status("bee") == protocol.MemberStopped })
		if got := k.Request(r2.ID); got == nil || got.Status != protocol.RequestApproved || got.ResolvedBy != "bee" {
			t.Fatalf("shutdown of an idle member: %+v", got)
		}
		// Asking a stopped member is cancelled at once.
		r3, err := k.RequestShutdown("bee", "again")
		if err != nil {
			t.Fatal(err)
		}
		if r3.Status != protocol.RequestCancelled {
			t.Fatalf("shutdown of a stopped member is %s, want cancelled", r3.Status)
		}
	})
}

func TestExecTeammatesEchoMisbehaveAndCrash(t *testing.T) {
	exe, _ := os.Executable()
	execSpec := func(name, role string) team.MemberSpec {
		return team.MemberSpec{Name: name, Runtime: team.RuntimeSpec{Kind: team.RuntimeExec, Command: []string{"/usr/bin/env", teamkit.RoleEnv + "=" + role, exe}}}
	}
	teamkit.OnEachStore(t, team.Team{Name: "t", Members: []team.MemberSpec{
		execSpec("echo", "echo"), execSpec("noisy", "garbage"), execSpec("broken", "crash"),
		teamkit.Scripted("steady", "", team.Step{Wait: team.Duration(time.Hour)}),
	}}, func(t *testing.T, k *teamkit.Kept) {
		start(t, k, Options{})
		testkit.WaitFor(t, 10*time.Second, "broken crashed", func() bool { return k.Status("broken") == protocol.MemberCrashed })
		if m := k.Member("broken"); !strings.Contains(m.Error, "exit status 3") {
			t.Errorf("crash error %q", m.Error)
		}
		if m := k.Member("broken"); !strings.Contains(m.LastLog, "something went wrong") {
			t.Errorf("the record's last log line is %q, want what it wrote on stderr last", m.LastLog)
		}
		if b, _ := os.ReadFile(filepath.Join(k.Dir, "members", "broken.log")); !strings.Contains(string(b), "something went wrong") {
			t.Errorf("stderr not in members/broken.log: %q", b)
		}
		if err := k.Send("lead", "echo", "ping"); err != nil {
			t.Fatal(err)
		}
		if err := k.Send("lead", "noisy", "ping"); err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, 10*time.Second, "two echoes", func() bool {
			var replies []string
			for _, m := range k.MessagesTo(t, protocol.Lead) {
				replies = append(replies, m.From+":"+m.Content)
			}
			joined := strings.Join(replies, "|")
			return strings.Contains(joined, "echo:echo: ping") && strings.Contains(joined, "noisy:echo: ping")
		})
		testkit.WaitFor(t, 5*time.Second, "the garbage line dead-lettered", func() bool {
			dl := k.DeadLetters()
			return strings.Contains(dl, `"source":"exec:noisy"`) && strings.Contains(dl, "not json at all")
		})
		if st := k.Status("steady"); st == protocol.MemberCrashed {
			t.Fatal("a crash of one teammate took another down")
		}
		r, err := k.RequestShutdown("echo", "done")
		if err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, 10*time.Second, "echo stopped", func() bool { return k.Status("echo") == protocol.MemberStopped })
		if got := k.Request(r.ID); got == nil || got.Status != protocol.RequestApproved || got.ResolvedBy != "echo" {
			t.Fatalf("exec shutdown record: %+v", got)
		}
	})
}

func TestForgedAndStaleResponsesAreRefused(t *testing.T) {
	teamkit.OnEachStore(t, team.Team{Name: "t", Members: []team.MemberSpec{
		teamkit.Scripted("alice", "", team.Step{Plan: "plan A"}, team.Step{Wait: team.Duration(time.Hour)}),
		teamkit.Scripted("mallory", "", team.Step{Wait: team.Duration(time.Hour)}),
	}}, func(t *testing.T, k *teamkit.Kept) {
		start(t, k, Options{})
		testkit.WaitFor(t, 5*time.Second, "a pending plan", func() bool { return k.PendingPlan("alice") != nil })
		p := k.PendingPlan("alice")
		// A teammate trying to resolve alice's plan.
		forged := protocol.NewMessage(protocol.TypePlanApprovalResponse, "mallory", "alice")
		forged.RequestID, forged.Approve = p.ID, protocol.Bool(true)
		k.AppendTo(t, "alice", &forged)
		// A shutdown answer from the wrong member, and one for an unknown id.
		sd, err := k.RequestShutdown("alice", "x")
		if err != nil {
			t.Fatal(err)
		}
		wrong := protocol.NewMessage(protocol.TypeShutdownResponse, "mallory", protocol.Lead)
		wrong.RequestID, wrong.Approve = sd.ID, protocol.Bool(true)
		unknown := protocol.NewMessage(protocol.TypeShutdownResponse, "alice", protocol.Lead)
		unknown.RequestID, unknown.Approve = "sd-000000000000", protocol.Bool(true)
		for _, m := range []*protocol.Message{&wrong, &unknown} {
			k.AppendTo(t, protocol.Lead, m)
		}
		testkit.WaitFor(t, 5*time.Second, "three dead letters", func() bool {
			s := k.DeadLetters()
			return strings.Contains(s, "only the lead decides plans") && strings.Contains(s, "only alice answers it") && strings.Contains(s, "unknown request sd-000000000000")
		})
		// alice is awaiting approval, so she approves the shutdown; the plan
		// is then cancelled because she is gone, never approved by mallory.
		if r := k.Request(p.ID); r != nil && r.Status == protocol.RequestApproved {
			t.Fatalf("forged approval took effect: %+v", r)
		}
	})
}

// TestReadmeExampleAgent runs the example exec agent of the README (kept
// byte for byte in testdata/agent.py by TestReadmeAgentMatches).
func TestReadmeExampleAgent(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	agent, _ := filepath.Abs("testdata/agent.py")
	dir := t.TempDir()
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: []team.MemberSpec{
		{Name: "auditor", Runtime: team.RuntimeSpec{Kind: team.RuntimeExec, Command: []string{py, agent}}},
	}})
	startTeam(t, dir, Options{})
	testkit.WaitFor(t, 10*time.Second, "the agent's plan", func() bool { return pendingPlan(dir, "auditor") != nil })
	p := pendingPlan(dir, "auditor")
	if _, err := dirlead.Decide(dir, p.ID, protocol.EventReject, "only the large ones", ""); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the revised plan", func() bool {
		q := pendingPlan(dir, "auditor")
		return q != nil && strings.Contains(q.Plan, "only the large ones")
	})
	if _, err := dirlead.Decide(dir, pendingPlan(dir, "auditor").ID, protocol.EventApprove, "", ""); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "auditor working", func() bool {
		m, _ := dirrecords.LoadMember(dir, "auditor")
		return m != nil && m.Status == protocol.MemberWorking && m.Activity == "auditing"
	})
	if _, err := dirlead.RequestShutdown(dir, "auditor", "done"); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "auditor stopped", func() bool { return memberStatus(dir, "auditor") == protocol.MemberStopped })
}

func TestReadmeAgentMatches(t *testing.T) {
	readme, err := os.ReadFile("../../docs/agents.md")
	if err != nil {
		t.Fatal(err)
	}
	agent, err := os.ReadFile("testdata/agent.py")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "```python\n"+string(agent)+"```") {
		t.Fatal("the README's example agent and testdata/agent.py differ")
	}
}

func TestAutoApprove(t *testing.T) {
	teamkit.OnEachStore(t, team.Team{Name: "t", Members: []team.MemberSpec{
		teamkit.Scripted("alice", "", team.Step{Plan: "ship it"}, team.Step{Say: "lead", Text: "shipped"}, team.Step{Wait: team.Duration(time.Hour)}),
	}}, func(t *testing.T, k *teamkit.Kept) {
		ev := start(t, k, Options{AutoApprove: true})
		testkit.WaitFor(t, 5*time.Second, "alice's message after the plan", func() bool {
			return ev.has(func(e Event) bool {
				return e["event"] == "message_delivered" && e["from"] == "alice" && e["type"] == "message"
			})
		})
		if rs := k.Requests(); len(rs) != 1 || rs[0].Status != protocol.RequestApproved || rs[0].ResolvedBy != "lead (auto-approve)" {
			t.Fatalf("requests: %+v", rs)
		}
	})
}

// TestExternalMember: a member run by something else writes lines alone, in
// the learn-claude-code dialect; huddle lists it, records what it reports,
// creates the record of its plan, and never consumes its inbox.
func TestExternalMember(t *testing.T) {
	dir := t.TempDir()
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: []team.MemberSpec{
		{Name: "ext", Role: "crawler", Runtime: team.RuntimeSpec{Kind: team.RuntimeExternal}},
	}})
	startTeam(t, dir, Options{})
	if m, err := dirrecords.LoadMember(dir, "ext"); err != nil || m.Runtime != team.RuntimeExternal {
		t.Fatalf("external member not listed: %+v %v", m, err)
	}
	// Stamped now: a fixed date would make this test expire with time.
	now := float64(time.Now().UnixMicro()) / 1e6
	lines := fmt.Sprintf(`{"type":"status","from":"ext","status":"working","content":"crawling the catalogue","timestamp":%.6f}`+"\n"+
		`{"type":"plan_approval_response","from":"ext","request_id":"ab12cd34","plan":"crawl everything","timestamp":%.6f}`+"\n", now, now+0.5)
	f, err := os.OpenFile(filepath.Join(dir, "inbox", "lead.jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(lines)
	f.Close()
	testkit.WaitFor(t, 5*time.Second, "ext's report and its plan", func() bool {
		m, _ := dirrecords.LoadMember(dir, "ext")
		r, _ := dirrecords.LoadRequest(dir, "ab12cd34")
		return m != nil && m.Status == protocol.MemberWorking && m.Activity == "crawling the catalogue" && r != nil
	})
	r, _ := dirrecords.LoadRequest(dir, "ab12cd34")
	if r.Kind != protocol.KindPlan || r.From != "ext" || r.Status != protocol.RequestPending || r.Plan != "crawl everything" {
		t.Fatalf("record of the external plan: %+v", r)
	}
	if _, err := dirlead.Decide(dir, "ab12cd34", protocol.EventApprove, "", ""); err != nil {
		t.Fatal(err)
	}
	// The answer waits in ext's inbox for whatever runs it.
	if p, err := teamdir.CursorPath(dir, "ext"); err != nil {
		t.Fatal(err)
	} else if _, err := os.Stat(p); err == nil {
		t.Fatal("huddle consumes the inbox of an external member")
	}
	b, err := os.ReadFile(filepath.Join(dir, "inbox", "ext.jsonl"))
	if err != nil || !strings.Contains(string(b), `"request_id":"ab12cd34"`) || !strings.Contains(string(b), `"approve":true`) {
		t.Fatalf("ext's inbox: %q %v", b, err)
	}
}

// TestRespawnedMemberIgnoresItsPreviousRunsRequest: bob approves a shutdown
// and stops; the same request's line turns up again; the respawned bob
// refuses it as stale and keeps running.
func TestRespawnedMemberIgnoresItsPreviousRunsRequest(t *testing.T) {
	teamkit.OnEachStore(t, team.Team{Name: "t", Members: []team.MemberSpec{
		teamkit.Scripted("bob", team.OnShutdownApprove, team.Step{Wait: team.Duration(time.Hour)}),
	}}, func(t *testing.T, k *teamkit.Kept) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- Run(ctx, k.St, k.Dir, Options{Tick: 20 * time.Millisecond}) }()
		testkit.WaitFor(t, 5*time.Second, "bob idle", func() bool { return k.Status("bob") == protocol.MemberIdle })
		r, err := k.RequestShutdown("bob", "first run is over")
		if err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, 5*time.Second, "bob stopped", func() bool { return k.Status("bob") == protocol.MemberStopped })
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		again := protocol.NewMessage(protocol.TypeShutdownRequest, protocol.Lead, "bob")
		again.RequestID, again.Reason = r.ID, "first run is over"
		k.AppendTo(t, "bob", &again)
		start(t, k, Options{})
		testkit.WaitFor(t, 5*time.Second, "the old request refused as stale", func() bool {
			return strings.Contains(k.DeadLetters(), "stale shutdown_request: "+r.ID)
		})
		testkit.WaitFor(t, 5*time.Second, "respawned bob idle", func() bool { return k.Status("bob") == protocol.MemberIdle })
		if rs := k.Requests(); len(rs) != 1 || rs[0].Status != protocol.RequestApproved {
			t.Fatalf("requests after the respawn: %+v", rs)
		}
	})
}

// TestPlanExpires: a plan nobody answers expires at the deadline and the
// teammate submits it again.
func TestPlanExpires(t *testing.T) {
	teamkit.OnEachStore(t, team.Team{Name: "t",
		Settings: team.Settings{ApprovalDeadline: team.Duration(150 * time.Millisecond)},
		Members: []team.MemberSpec{
			teamkit.Scripted("alice", "", team.Step{Plan: "plan that nobody reads"}, team.Step{Wait: team.Duration(time.Hour)}),
		}}, func(t *testing.T, k *teamkit.Kept) {
		start(t, k, Options{})
		testkit.WaitFor(t, 5*time.Second, "an expired plan and its resubmission", func() bool {
			expired, pending := false, false
			for _, r := range k.Requests() {
				if r.From != "alice" {
					continue
				}
				expired = expired || (r.Status == protocol.RequestExpired && r.ResolvedBy == "huddle")
				pending = pending || r.Status == protocol.RequestPending
			}
			return expired && pending
		})
	})
}

// TestNewerPlanSupersedesTheOlder: two plans from one member, written alone;
// the second cancels the first.
func TestNewerPlanSupersedesTheOlder(t *testing.T) {
	teamkit.OnEachStore(t, team.Team{Name: "t", Members: []team.MemberSpec{{Name: "ext", Runtime: team.RuntimeSpec{Kind: team.RuntimeExternal}}}}, func(t *testing.T, k *teamkit.Kept) {
		start(t, k, Options{})
		for _, id := range []string{"first0001", "second002"} {
			m := protocol.NewMessage(protocol.TypePlanApprovalRequest, "ext", protocol.Lead)
			m.RequestID, m.Plan = id, "plan "+id
			k.AppendTo(t, protocol.Lead, &m)
		}
		testkit.WaitFor(t, 5*time.Second, "the first plan cancelled", func() bool {
			r := k.Request("first0001")
			return r != nil && r.Status == protocol.RequestCancelled
		})
		if r := k.Request("first0001"); r.ResponseReason != "superseded by second002" {
			t.Errorf("cancellation reason %q", r.ResponseReason)
		}
	})
}
