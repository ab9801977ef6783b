package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"huddle/inbox"
	"huddle/internal/testkit"
	"huddle/internal/testkit/dirrecords"
	"huddle/internal/testkit/files"
	"huddle/internal/testkit/teamkit"
	"huddle/ipc"
	"huddle/ipc/trace"
	"huddle/protocol"
	"huddle/store"
	"huddle/team"
	"huddle/teamdir"
)

// withPolicy gives a member a .puruto-ipc.json in dir/ipc/.
func withPolicy(t *testing.T, dir string, spec team.MemberSpec, policy string) team.MemberSpec {
	t.Helper()
	rel := filepath.Join("ipc", spec.Name+".json")
	if err := os.MkdirAll(filepath.Join(dir, "ipc"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, rel), []byte(policy), 0o600); err != nil {
		t.Fatal(err)
	}
	spec.IPC = rel
	return spec
}

func chains(t *testing.T, dir string) []trace.Chain {
	t.Helper()
	return teamkit.FilesKept(t, dir).Chains(t)
}

// TestTwoHopChainAndMaxHops: reservas → finanzas.pagar_factura →
// data.escribir, whose onward call at hop 2 is DENIED (max_hops), folded
// into its answer; one correlation id, linked by parent ids.
func TestTwoHopChainAndMaxHops(t *testing.T) {
	reservas := teamkit.Scripted("reservas", "", team.Step{Call: "finanzas", Action: "pagar_factura", Prompt: "invoice #123", TimeoutSec: 10}, team.Step{Wait: team.Duration(time.Hour)})
	finanzas := teamkit.Scripted("finanzas", "", team.Step{Wait: team.Duration(time.Hour)})
	finanzas.Actions = map[string]team.ActionSpec{"pagar_factura": {Reply: "invoice paid", Call: &team.CallSpec{Target: "data", Action: "escribir", Prompt: "record payment"}}}
	data := teamkit.Scripted("data", "", team.Step{Wait: team.Duration(time.Hour)})
	data.Actions = map[string]team.ActionSpec{"escribir": {Reply: "written", Call: &team.CallSpec{Target: "auditor", Action: "archivar"}}}
	auditor := teamkit.Scripted("auditor", "", team.Step{Wait: team.Duration(time.Hour)})
	auditor.Actions = map[string]team.ActionSpec{"archivar": {Reply: "archived"}}
	policies := map[string]string{
		"reservas": `{"allowed_targets":["finanzas"],"allowed_actions":{"finanzas":["pagar_factura"]},"max_hops":2}`,
		"finanzas": `{"allowed_targets":["data"],"max_hops":2}`,
		"data":     `{"allowed_targets":["auditor"],"max_hops":2}`,
	}
	teamkit.OnEachStoreWith(t, team.Team{Name: "t", Members: []team.MemberSpec{reservas, finanzas, data, auditor}}, policies, func(t *testing.T, k *teamkit.Kept) {
		ev := start(t, k, Options{})
		testkit.WaitFor(t, 10*time.Second, "reservas's call to end", func() bool {
			return ev.has(func(e Event) bool { return e["event"] == "call" && e["member"] == "reservas" })
		})
		testTwoHopChain(t, k.Chains(t))
	})
}

// testTwoHopChain checks the chain TestTwoHopChainAndMaxHops makes.
func testTwoHopChain(t *testing.T, cs []trace.Chain) {
	t.Helper()
	if len(cs) != 1 || len(cs[0].Rows) != 3 {
		t.Fatalf("want one chain of three calls, got %+v", cs)
	}
	rows := cs[0].Rows
	want := []struct {
		caller, target string
		hop, depth     int
		status, code   string
	}{
		{"reservas", "finanzas", 0, 0, trace.CallOK, ""},
		{"finanzas", "data", 1, 1, trace.CallOK, ""},
		{"data", "auditor", 2, 2, trace.CallError, "DENIED"},
	}
	for i, w := range want {
		c := rows[i].Call
		if c.Caller != w.caller || c.Target != w.target || c.Hop != w.hop || rows[i].Depth != w.depth || c.Status != w.status || c.ErrorCode != w.code {
			t.Errorf("row %d: %s → %s hop %d depth %d %s %s; want %+v", i, c.Caller, c.Target, c.Hop, rows[i].Depth, c.Status, c.ErrorCode, w)
		}
		if c.CorrelationID != cs[0].CorrelationID {
			t.Errorf("row %d has correlation %s", i, c.CorrelationID)
		}
		if i > 0 && c.ParentRequestID != rows[i-1].Call.RequestID {
			t.Errorf("row %d: parent %s, want %s", i, c.ParentRequestID, rows[i-1].Call.RequestID)
		}
	}
	if rows[2].Call.ErrorReason != protocol.DeniedMaxHops {
		t.Errorf("the denial's reason is %q, want max_hops", rows[2].Call.ErrorReason)
	}
	// The answer reservas got folds both onward answers in.
	var reply struct {
		Summary string                                 `json:"summary"`
		Onward  map[string]struct{ Status, Error any } `json:"onward"`
	}
	if err := json.Unmarshal([]byte(rows[0].Call.Result), &reply); err != nil || reply.Summary != "invoice paid" || reply.Onward["data.escribir"].Status != "ok" {
		t.Fatalf("reservas's answer: %s (%v)", rows[0].Call.Result, err)
	}
	if !strings.Contains(rows[1].Call.Result, "DENIED") {
		t.Fatalf("data's answer does not fold the denial in: %s", rows[1].Call.Result)
	}
}

func TestUnknownActionNamesIt(t *testing.T) {
	caller := teamkit.Scripted("caller", "", team.Step{Call: "callee", Action: "fly", TimeoutSec: 10}, team.Step{Wait: team.Duration(time.Hour)})
	callee := teamkit.Scripted("callee", "", team.Step{Wait: team.Duration(time.Hour)})
	callee.Actions = map[string]team.ActionSpec{"walk": {Reply: "walked"}}
	teamkit.OnEachStoreWith(t, team.Team{Name: "t", Members: []team.MemberSpec{caller, callee}}, map[string]string{"caller": `{"allowed_targets":["callee"]}`}, func(t *testing.T, k *teamkit.Kept) {
		ev := start(t, k, Options{})
		testkit.WaitFor(t, 10*time.Second, "the call to end", func() bool {
			return ev.has(func(e Event) bool { return e["event"] == "call" })
		})
		c := k.Chains(t)[0].Rows[0].Call
		if c.Status != trace.CallError || !strings.Contains(c.ErrorMessage, `callee has no action "fly"`) {
			t.Fatalf("got %+v", c)
		}
	})
}

// TestExecTeammateAnswersAndMisanswers: an exec teammate answers through
// its result action; a malformed answer reaches the caller as
// INVALID_RESPONSE.
func TestExecTeammateAnswersAndMisanswers(t *testing.T) {
	exe, _ := os.Executable()
	execSpec := func(name, role string) team.MemberSpec {
		return team.MemberSpec{Name: name, Runtime: team.RuntimeSpec{Kind: team.RuntimeExec, Command: []string{"/usr/bin/env", teamkit.RoleEnv + "=" + role, exe}}}
	}
	caller := teamkit.Scripted("caller", "",
		team.Step{Call: "good", Action: "audit", Prompt: "invoice 7", TimeoutSec: 10},
		team.Step{Call: "bad", Action: "audit", Prompt: "invoice 8", TimeoutSec: 10},
		team.Step{Wait: team.Duration(time.Hour)})
	tm := team.Team{Name: "t", Members: []team.MemberSpec{caller, execSpec("good", "echo"), execSpec("bad", "garbage")}}
	teamkit.OnEachStoreWith(t, tm, map[string]string{"caller": `{"allowed_targets":["good","bad"]}`}, func(t *testing.T, k *teamkit.Kept) {
		ev := start(t, k, Options{})
		testkit.WaitFor(t, 15*time.Second, "both calls", func() bool {
			n := 0
			ev.mu.Lock()
			for _, e := range ev.es {
				if e["event"] == "call" {
					n++
				}
			}
			ev.mu.Unlock()
			return n == 2
		})
		byTarget := map[string]*trace.Call{}
		for _, c := range k.Chains(t) {
			byTarget[c.Rows[0].Call.Target] = c.Rows[0].Call
		}
		if g := byTarget["good"]; g == nil || g.Status != trace.CallOK || !strings.Contains(g.Result, "echo: invoice 7") {
			t.Fatalf("good: %+v", g)
		}
		if b := byTarget["bad"]; b == nil || b.ErrorCode != "INVALID_RESPONSE" {
			t.Fatalf("bad: %+v", b)
		}
		// The trace keeps the answer that was refused, so a person can see why.
		if b := byTarget["bad"]; !strings.Contains(b.Refused, "echo: invoice 8") || !strings.Contains(b.Refused, `"status":""`) {
			t.Errorf("bad: the refused answer is not in the trace: %q", b.Refused)
		}
	})
}

// TestThousandConcurrentCalls: 1,000 calls at once across 10 scripted
// teammates; every caller gets its own answer and every call's chain is
// complete in traces.jsonl.
func TestThousandConcurrentCalls(t *testing.T) {
	dir := t.TempDir()
	var members []team.MemberSpec
	var names []string
	for i := range 10 {
		m := teamkit.Scripted(fmt.Sprintf("w%d", i), "", team.Step{Wait: team.Duration(time.Hour)})
		m.Actions = map[string]team.ActionSpec{"echo": {Reply: "ok"}}
		members = append(members, m)
		names = append(names, fmt.Sprintf("%q", m.Name))
	}
	driver := withPolicy(t, dir, team.MemberSpec{Name: "driver", Runtime: team.RuntimeSpec{Kind: team.RuntimeExternal}},
		`{"allowed_targets":[`+strings.Join(names, ",")+`]}`)
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: append(members, driver)})
	startTeam(t, dir, Options{})

	ctx, caller := outsideCaller(t, dir, "driver")
	const n = 1000
	results := make([]protocol.InvocationResult, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = caller.Call(ctx, protocol.InvocationRequest{RequestID: fmt.Sprintf("req-job-%d", i), Caller: "driver", Target: fmt.Sprintf("w%d", i%10), Action: "echo",
				Prompt: fmt.Sprintf("job %d", i), TimeoutSec: 60})
		}()
	}
	wg.Wait()
	ids := map[string]bool{}
	for i, r := range results {
		if r.Status != protocol.ResultOK || r.RequestID != fmt.Sprintf("req-job-%d", i) {
			t.Fatalf("call %d got %+v", i, r)
		}
		if ids[r.RequestID] {
			t.Fatalf("two callers got the answer %s", r.RequestID)
		}
		ids[r.RequestID] = true
	}
	cs := chains(t, dir)
	if len(cs) != n {
		t.Fatalf("%d chains in traces.jsonl, want %d", len(cs), n)
	}
	for _, c := range cs {
		if len(c.Rows) != 1 || c.Rows[0].Call.Status != trace.CallOK || c.Rows[0].Call.Start.IsZero() || !ids[c.Rows[0].Call.RequestID] {
			t.Fatalf("incomplete chain %+v", c.Rows[0].Call)
		}
	}
}

// TestCallToAGoneMemberIsTargetNotFound: a member whose run is over is not
// available, and a call says so at once instead of waiting for a deadline.
func TestCallToAGoneMemberIsTargetNotFound(t *testing.T) {
	dir := t.TempDir()
	exe, _ := os.Executable()
	broken := team.MemberSpec{Name: "broken", Runtime: team.RuntimeSpec{Kind: team.RuntimeExec, Command: []string{"/usr/bin/env", teamkit.RoleEnv + "=crash", exe}}}
	driver := withPolicy(t, dir, team.MemberSpec{Name: "driver", Runtime: team.RuntimeSpec{Kind: team.RuntimeExternal}}, `{"allowed_targets":["broken","nobody"]}`)
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: []team.MemberSpec{broken, driver}})
	startTeam(t, dir, Options{})
	testkit.WaitFor(t, 10*time.Second, "broken crashed", func() bool { return memberStatus(dir, "broken") == protocol.MemberCrashed })
	tm, _ := team.Load(dir)
	policy, policyErr := MemberPolicy(dir, tm, "driver")
	c := NewCaller(context.Background(), files.Open(t, dir), tm, ipc.NewRouter(""), policy, policyErr)
	for target, want := range map[string]string{"broken": "is not available: it is crashed", "nobody": "is not a member of team t"} {
		res := c.Call(context.Background(), protocol.InvocationRequest{Caller: "driver", Target: target, Action: "x", TimeoutSec: 30})
		if res.Error == nil || res.Error.Code != protocol.ErrTargetNotFound || !strings.Contains(res.Error.Message, want) {
			t.Errorf("call to %s: %+v", target, res.Error)
		}
		if res.DurationMS > 5000 {
			t.Errorf("call to %s took %dms: it waited instead of failing", target, res.DurationMS)
		}
	}
}

// TestTargetOnlyMembersRunNothing: a member that is only a target (exec or
// http) is listed, and calls reach its target; the runtime starts nothing
// for it.
func TestTargetOnlyMembersRunNothing(t *testing.T) {
	dir := t.TempDir()
	exe, _ := os.Executable()
	tool := team.MemberSpec{Name: "tool", Role: "a command", Target: &team.TargetSpec{Kind: team.TargetExec, Command: []string{"/usr/bin/env", teamkit.RoleEnv + "=exec-target", exe}}}
	remote := team.MemberSpec{Name: "remote", Role: "another huddle", Target: &team.TargetSpec{Kind: team.TargetHTTP, URL: "http://127.0.0.1:1", Skill: "x.y"}}
	caller := withPolicy(t, dir, teamkit.Scripted("caller", "", team.Step{Call: "tool", Action: "run", Prompt: "p", TimeoutSec: 10}, team.Step{Wait: team.Duration(time.Hour)}), `{"allowed_targets":["tool"]}`)
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: []team.MemberSpec{tool, remote, caller}})
	ev := startTeam(t, dir, Options{})
	testkit.WaitFor(t, 10*time.Second, "the call", func() bool { return ev.has(func(e Event) bool { return e["event"] == "call" }) })
	if !ev.has(func(e Event) bool { return e["event"] == "call" && e["status"] == "ok" }) {
		t.Fatalf("the call to the exec target failed: %v", ev.es)
	}
	for _, name := range []string{"tool", "remote"} {
		m, err := dirrecords.LoadMember(dir, name)
		if err != nil || m.Status != protocol.MemberIdle || !strings.HasPrefix(m.Runtime, "target:") {
			t.Fatalf("%s: %+v %v", name, m, err)
		}
	}
}

// TestNewCallerWithoutATeam: huddle call outside a team still gets a
// Caller: every target is unknown, and nothing is traced anywhere.
func TestNewCallerWithoutATeam(t *testing.T) {
	dir := t.TempDir()
	p, err := ipc.ParsePolicy([]byte(`{"allowed_targets":["anyone"]}`))
	if err != nil {
		t.Fatal(err)
	}
	c := NewCaller(context.Background(), nil, nil, ipc.NewRouter(""), p, nil)
	res := c.Call(context.Background(), protocol.InvocationRequest{Caller: "cli", Target: "anyone", Action: "x", TimeoutSec: 5})
	if res.Error == nil || res.Error.Code != protocol.ErrTargetNotFound {
		t.Fatalf("got %+v, want TARGET_NOT_FOUND", res)
	}
	if _, err := os.Stat(teamdir.TracesPath(dir)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a call without a team wrote %s: %v", teamdir.TracesFile, err)
	}
}

// TestMemberPolicySaysWhyThereIsNone: a member without a policy file, or
// with one that does not load, gets an IPC_ERROR for every call that says
// why.
func TestMemberPolicySaysWhyThereIsNone(t *testing.T) {
	dir := t.TempDir()
	tm := &team.Team{Name: "t", Members: []team.MemberSpec{
		{Name: "bare", Runtime: team.RuntimeSpec{Kind: team.RuntimeExternal}},
		{Name: "lost", Runtime: team.RuntimeSpec{Kind: team.RuntimeExternal}, IPC: "nowhere.json"},
	}}
	for member, want := range map[string]string{
		"bare": `IPC_ERROR: bare has no .puruto-ipc.json (set "ipc" or "dir" in team.json)`,
		"lost": "IPC_ERROR: lost: ipc config:",
	} {
		p, perr := MemberPolicy(dir, tm, member)
		if p != nil || perr == nil || !strings.HasPrefix(perr.Error(), want) {
			t.Fatalf("%s: policy %v, error %v; want one starting %q", member, p, perr, want)
		}
		res := NewCaller(context.Background(), files.Open(t, dir), tm, ipc.NewRouter(""), p, perr).Call(context.Background(),
			protocol.InvocationRequest{Caller: member, Target: "bare", Action: "x", TimeoutSec: 5})
		if res.Error == nil || res.Error.Code != protocol.ErrIPC || res.Error.Message != perr.Error() {
			t.Fatalf("%s: got %+v, want IPC_ERROR %q", member, res.Error, perr)
		}
	}
}

// outsideCaller is member's Caller in a process that does not run the team
// (as huddle call's): answers reach it through a watch of its inbox in
// the team directory's files store. The context ends with the test.
func outsideCaller(t *testing.T, dir, member string) (context.Context, *ipc.Caller) {
	t.Helper()
	tm, err := team.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	st := files.Open(t, dir, inbox.Options{Rescan: 250 * time.Millisecond})
	router := ipc.NewRouter("")
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	answers, err := st.WatchAnswers(ctx, member, func(d store.Delivery) bool {
		return router.Take(d.Msg)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = answers.Stop() })
	policy, policyErr := MemberPolicy(dir, tm, member)
	return ctx, NewCaller(ctx, st, tm, router, policy, policyErr)
}
