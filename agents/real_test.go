package agents_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"huddle/internal/fakeapi"
	"huddle/internal/procenv"
	"huddle/internal/realcli"
	"huddle/internal/testkit"
	"huddle/internal/testkit/dirlead"
	"huddle/internal/testkit/dirrecords"
	"huddle/internal/testkit/files"
	"huddle/protocol"
	"huddle/team/supervisor"
	"huddle/teamdir"
)

// TestRealCodexEndsWithTheTeam: the real codex 0.169.0, run by `huddle
// agent codex` as a teammate, is mid-turn (its model request held by the
// fake) when the runtime stops: afterwards no process of it is left, the
// npm launcher's native child included, as /proc tells.
func TestRealCodexEndsWithTheTeam(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b, err := realcli.Install(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hold := make(chan struct{})
	defer close(hold)
	fake := fakeapi.Responses(fakeapi.Turn{Hold: hold})
	defer fake.Close()
	e, err := realcli.CodexEnv(t.TempDir(), fake.URL())
	if err != nil {
		t.Fatal(err)
	}
	useEnv(t, e)
	home := "CODEX_HOME=" + os.Getenv("CODEX_HOME") // what its processes' environments hold
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(huddleEnv, "1")
	dir := t.TempDir()
	spec := map[string]any{"name": "agents", "members": []any{map[string]any{
		"name": "coder", "role": "writes the change", "runtime": map[string]any{"kind": "exec",
			"command": []string{"huddle", "agent", "codex", "--task", "Say hello.", "--bin", b.Codex, "--", "--skip-git-repo-check"}}}}}
	sb, _ := json.Marshal(spec)
	if err := os.WriteFile(teamdir.ConfigPath(dir), sb, 0o600); err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- supervisor.Run(rctx, files.Open(t, dir), dir, supervisor.Options{Executable: exe}) }()

	if _, err := fake.Wait(ctx, 1); err != nil {
		t.Fatal(err)
	}
	var pids []int
	testkit.WaitFor(t, 30*time.Second, "codex's processes (the launcher and its native child)", func() bool {
		pids = procenv.With(home)
		return len(pids) >= 2
	})
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the runtime did not stop within 30 s")
	}
	// By the time Run returns, each is dead or has SIGKILL pending: none
	// lives on to finish its turn.
	for _, pid := range pids {
		if !doomed(pid) {
			t.Errorf("process %d of the teammate lives on after the runtime stopped", pid)
		}
	}
	testkit.WaitFor(t, 15*time.Second, "every process of the teammate gone", func() bool { return len(procenv.With(home)) == 0 })
	t.Logf("the teammate ran %d processes (the adapter, codex's launcher, its native binary); none is left", len(pids))
}

// doomed reports whether pid is gone, a zombie, or has a SIGKILL
// pending.
func doomed(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return true
	}
	for l := range strings.Lines(string(b)) {
		k, v, _ := strings.Cut(strings.TrimSpace(l), ":")
		v = strings.TrimSpace(v)
		switch k {
		case "State":
			if strings.HasPrefix(v, "Z") || strings.HasPrefix(v, "X") {
				return true
			}
		case "SigPnd", "ShdPnd":
			if mask, err := strconv.ParseUint(v, 16, 64); err == nil && mask&(1<<(9-1)) != 0 {
				return true
			}
		}
	}
	return false
}

// TestRealClaudeThroughHuddle: the real Claude Code 2.1.328, run by
// `huddle agent claude` as a teammate of a team the runtime runs, against
// a fake model that plans, is rejected and revises, then works. Every
// question the CLI asks is decided on huddle's side: the plan by the
// lead (rejected, then approved), a Write by the lead for the session (a
// second Write in the same directory then needs no one), a mkdir by an
// allow rule and an rm by a deny rule of team.json, a touch denied by the
// lead. What the CLI did is what huddle shows: the files the allowed
// uses made exist, the denied ones' do not, the model read each denial,
// and the member's counters are the CLI's own per-run figures.
func TestRealClaudeThroughHuddle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b, err := realcli.Install(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const (
		planV1   = "# Plan\n\n1. Write hello.txt.\n"
		planV2   = "# Plan\n\n1. Write hello.txt and notes.txt.\n2. Make out/.\n"
		rejected = "Also write notes.txt, and make out/."
		noTouch  = "Not that file: the lead keeps it out."
		done     = "Done: hello.txt and notes.txt are written, out/ is made."
	)
	u := fakeapi.Usage{InputTokens: 1000, OutputTokens: 50, CacheReadInputTokens: 300, CacheCreationInputTokens: 100}
	call := func(name string, input any) fakeapi.Turn {
		return fakeapi.Turn{Calls: []fakeapi.Call{{Name: name, Input: input}}, Usage: u}
	}
	planPath := regexp.MustCompile(`create your plan at (\S+\.md)`)
	var mu sync.Mutex
	var plan string
	planFile := func() string {
		mu.Lock()
		defer mu.Unlock()
		return plan
	}
	fake := fakeapi.Anthropic(
		fakeapi.Turn{Make: func(r fakeapi.Request) (fakeapi.Turn, error) {
			m := planPath.FindSubmatch(r.Body)
			if m == nil {
				return fakeapi.Turn{}, errors.New("the first request names no plan file (is plan mode on?)")
			}
			mu.Lock()
			plan = string(m[1])
			mu.Unlock()
			return call("Write", map[string]any{"file_path": string(m[1]), "content": planV1}), nil
		}},
		call("ToolSearch", map[string]any{"query": "select:ExitPlanMode", "max_results": 1}),
		call("ExitPlanMode", map[string]any{}),
		fakeapi.Turn{Make: func(fakeapi.Request) (fakeapi.Turn, error) {
			return call("Write", map[string]any{"file_path": planFile(), "content": planV2}), nil
		}},
		call("ExitPlanMode", map[string]any{}),
		call("Write", map[string]any{"file_path": "hello.txt", "content": "hello\n"}),
		call("Write", map[string]any{"file_path": "notes.txt", "content": "notes\n"}),
		call("Bash", map[string]any{"command": "mkdir -p out", "description": "Make out/"}),
		call("Bash", map[string]any{"command": "rm -rf out", "description": "Remove out/"}),
		call("Bash", map[string]any{"command": "touch denied.txt", "description": "Touch a file"}),
		fakeapi.Turn{Text: done, Usage: u},
	)
	defer fake.Close()
	e, err := realcli.ClaudeEnv(t.TempDir(), fake.URL())
	if err != nil {
		t.Fatal(err)
	}
	useEnv(t, e)
	tee, printed := teeOf(t, e, b.Claude, "claude")
	rules := map[string]any{"permissions": map[string]any{"allow": []string{"Bash(mkdir:*)"}, "deny": []string{"Bash(rm:*)"}}}
	rt := startRuntimeWith(t, rules, "huddle", "agent", "claude", "--task", "Write hello.txt.", "--bin", tee)

	first := rt.pendingPlanWithin(t, 3*time.Minute)
	if first.Plan != strings.TrimSpace(planV1) {
		t.Errorf("the first plan: %q, want %q", first.Plan, planV1)
	}
	if _, err := dirlead.Decide(rt.dir, first.ID, protocol.EventReject, rejected, protocol.Lead); err != nil {
		t.Fatal(err)
	}
	revised := rt.pendingPlanWithin(t, time.Minute)
	if revised.Plan != strings.TrimSpace(planV2) {
		t.Errorf("the revised plan: %q, want %q", revised.Plan, planV2)
	}
	if _, err := dirlead.Decide(rt.dir, revised.ID, protocol.EventApprove, "", protocol.Lead); err != nil {
		t.Fatal(err)
	}
	write := rt.pendingPermission(t, "Write", "hello.txt")
	if _, err := dirlead.AllowForSession(rt.dir, write.ID, protocol.Lead); err != nil {
		t.Fatal(err)
	}
	touch := rt.pendingPermission(t, "Bash", "touch denied.txt")
	if !strings.Contains(string(touch.Permission.Input), "touch denied.txt") {
		t.Fatalf("the Bash that asked the lead: %s", touch.Permission.Input)
	}
	if _, err := dirlead.Decide(rt.dir, touch.ID, protocol.EventReject, noTouch, protocol.Lead); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, time.Minute, "coder idle after the work", func() bool {
		m := rt.member(t)
		return m.Status == protocol.MemberIdle && strings.HasPrefix(m.Activity, "done: Done:")
	})

	decided, _ := permissions(t, rt.dir)
	wantLines(t, "the permissions, in order", decided, []string{
		"Write hello.txt: allowed by lead",
		"Write notes.txt: allowed by lead (for the session: " + write.Rule + ")",
		"Bash mkdir -p out: allowed by rule Bash(mkdir:*)",
		"Bash rm -rf out: denied by rule Bash(rm:*)",
		"Bash touch denied.txt: denied by lead",
	})
	wantFiles(t, rt.dir, map[string]bool{"hello.txt": true, "notes.txt": true, "out": true, "denied.txt": false}, "")
	modelRead(t, fake, rejected, "Bash(rm:*)", noTouch)
	if refused := fake.Refused(); len(refused) > 0 {
		t.Errorf("the fake refused %d requests: %s", len(refused), refused[0].Refused)
	}

	// The CLI's own figures, run by run.
	var in, out int64
	var cost float64
	for _, l := range realLinesAt(t, printed) {
		var r struct {
			Type  string `json:"type"`
			Usage struct {
				InputTokens              int64 `json:"input_tokens"`
				CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
				CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
				OutputTokens             int64 `json:"output_tokens"`
			} `json:"usage"`
			SinceLast map[string]struct {
				CostUSD float64 `json:"costUSD"`
			} `json:"model_usage_since_last_result"`
		}
		if json.Unmarshal(l, &r) != nil || r.Type != "result" {
			continue
		}
		in += r.Usage.InputTokens + r.Usage.CacheCreationInputTokens + r.Usage.CacheReadInputTokens
		out += r.Usage.OutputTokens
		for _, m := range r.SinceLast {
			cost += m.CostUSD
		}
	}
	c := rt.member(t).Counters
	if in == 0 || c.TokensIn != in || c.TokensOut != out || math.Abs(c.CostUSD-cost) > 1e-9 || c.Plans != 2 || c.Permissions != 5 {
		t.Errorf("counters %+v; the CLI says %d in, %d out, $%.6f", c, in, out, cost)
	}
	if n := len(fake.Served()); int64(n)*1400 != in {
		t.Errorf("the fake served %d requests of 1,400 tokens in; the CLI says %d", n, in)
	}
	t.Logf("%d model requests, %d tokens in, %d out, $%.6f; permissions:\n%s", len(fake.Served()), in, out, cost, strings.Join(decided, "\n"))
}

// realLinesAt reads a file of JSON lines.
func realLinesAt(t *testing.T, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for l := range bytes.Lines(b) {
		if l = bytes.TrimSpace(l); len(l) > 0 {
			out = append(out, l)
		}
	}
	return out
}

// TestRealCodexThroughHuddle: the real Codex 0.169.0, run by `huddle agent
// codex` on its app server as a teammate of a running team, against a
// fake model. Its plan is rejected (the model reads why) and the revision
// approved; the work turn's first model stream is cut (a reconnect, which
// is activity, not a failure); each command it asks to run is decided on
// huddle's side: a mkdir by an allow rule, a touch by the lead for the
// session (the next touch then asks no one), an rm by a deny rule, a cp
// denied by the lead. The files are what the decisions allowed, outside
// any git repository, and the member's tokens are the thread's own total.
func TestRealCodexThroughHuddle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b, err := realcli.Install(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const (
		plan1    = "Plan: 1. touch b.txt."
		rejected = "Also make out/ first."
		plan2    = "Plan: 1. mkdir -p out. 2. touch b.txt and c.txt."
		noCopy   = "Not that copy."
		done     = "Done: out/, b.txt and c.txt are made."
	)
	u := fakeapi.Usage{InputTokens: 1000, OutputTokens: 50, CacheReadInputTokens: 400}
	run := func(cmd string) fakeapi.Turn {
		return fakeapi.Turn{Calls: []fakeapi.Call{{Name: "exec_command", Input: map[string]any{"cmd": cmd}}}, Usage: u}
	}
	fake := fakeapi.Responses(
		fakeapi.Turn{Calls: []fakeapi.Call{{Name: "update_plan", Input: map[string]any{"explanation": "One file.", "plan": []any{
			map[string]any{"step": "touch b.txt", "status": "pending"}}}}}, Usage: u},
		fakeapi.Turn{Text: plan1, Usage: u},
		fakeapi.Turn{Text: plan2, Usage: u},
		fakeapi.Turn{Drop: true},
		run("mkdir -p out"),
		run("touch b.txt"),
		run("touch c.txt"),
		run("rm -rf out"),
		run("cp b.txt denied.txt"),
		fakeapi.Turn{Text: done, Usage: u},
	)
	defer fake.Close()
	e, err := realcli.CodexEnv(t.TempDir(), fake.URL())
	if err != nil {
		t.Fatal(err)
	}
	useEnv(t, e)
	tee, printed := teeOf(t, e, b.Codex, "codex")
	rules := map[string]any{"permissions": map[string]any{"allow": []string{"Bash(mkdir:*)"}, "deny": []string{"Bash(rm:*)"}}}
	rt := startRuntimeWith(t, rules, "huddle", "agent", "codex", "--task", "Make b.txt.", "--bin", tee)

	first := rt.pendingPlanWithin(t, 3*time.Minute)
	if first.Plan != plan1 {
		t.Errorf("the first plan: %q", first.Plan)
	}
	if _, err := dirlead.Decide(rt.dir, first.ID, protocol.EventReject, rejected, protocol.Lead); err != nil {
		t.Fatal(err)
	}
	revised := rt.pendingPlanWithin(t, time.Minute)
	if revised.Plan != plan2 {
		t.Errorf("the revised plan: %q", revised.Plan)
	}
	if _, err := dirlead.Decide(rt.dir, revised.ID, protocol.EventApprove, "", protocol.Lead); err != nil {
		t.Fatal(err)
	}
	touch := rt.pendingPermission(t, "Bash", "touch b.txt")
	if _, err := dirlead.AllowForSession(rt.dir, touch.ID, protocol.Lead); err != nil {
		t.Fatal(err)
	}
	cp := rt.pendingPermission(t, "Bash", "cp b.txt denied.txt")
	if _, err := dirlead.Decide(rt.dir, cp.ID, protocol.EventReject, noCopy, protocol.Lead); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, time.Minute, "coder idle after the work", func() bool {
		m := rt.member(t)
		return m.Status == protocol.MemberIdle && strings.HasPrefix(m.Activity, "done: Done:")
	})

	decided, _ := permissions(t, rt.dir)
	wantLines(t, "the permissions, in order", decided, []string{
		"Bash mkdir -p out: allowed by rule Bash(mkdir:*)",
		"Bash touch b.txt: allowed by lead",
		"Bash touch c.txt: allowed by lead (for the session: " + touch.Rule + ")",
		"Bash rm -rf out: denied by rule Bash(rm:*)",
		"Bash cp b.txt denied.txt: denied by lead",
	})
	wantFiles(t, rt.dir, map[string]bool{"out": true, "b.txt": true, "c.txt": true, "denied.txt": false}, "")
	modelRead(t, fake, rejected)
	if !strings.Contains(rt.activities(), "reconnecting: ") {
		t.Errorf("the cut stream was not shown as a reconnect: %s", rt.activities())
	}
	// The CLI's own figure: the thread's last total.
	var in, out int64
	for _, l := range realLinesAt(t, printed) {
		var n struct {
			Method string `json:"method"`
			Params struct {
				TokenUsage struct {
					Total struct {
						InputTokens  int64 `json:"inputTokens"`
						OutputTokens int64 `json:"outputTokens"`
					} `json:"total"`
				} `json:"tokenUsage"`
			} `json:"params"`
		}
		if json.Unmarshal(l, &n) == nil && n.Method == "thread/tokenUsage/updated" {
			in, out = n.Params.TokenUsage.Total.InputTokens, n.Params.TokenUsage.Total.OutputTokens
		}
	}
	c := rt.member(t).Counters
	if in == 0 || c.TokensIn != in || c.TokensOut != out || c.Plans != 2 || c.Permissions != 5 {
		t.Errorf("counters %+v; the thread's total is %d in, %d out", c, in, out)
	}
	t.Logf("%d model requests, the thread's total %d in, %d out; permissions:\n%s", len(fake.Served()), in, out, strings.Join(decided, "\n"))
}

// TestRealClaudeAsksTheDesk: a Claude Code 2.1.328 session a person runs
// themselves (-p here, in default mode), with `huddle hook claude` as its
// PermissionRequest hook in settings.json, puts each tool use it would ask
// about to the desk: its first Write is allowed by the lead for the
// session, its Bash denied with a message the model reads, its second
// Write in the same directory allowed by that allowance without asking.
// The session is a member of the desk, its cwd in its role.
func TestRealClaudeAsksTheDesk(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b, err := realcli.Install(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const noTouch = "No touching: the lead keeps a.txt out."
	u := fakeapi.Usage{InputTokens: 10, OutputTokens: 5}
	call := func(name string, input any) fakeapi.Turn {
		return fakeapi.Turn{Calls: []fakeapi.Call{{Name: name, Input: input}}, Usage: u}
	}
	fake := fakeapi.Anthropic(
		call("Write", map[string]any{"file_path": "hello.txt", "content": "hello\n"}),
		call("Bash", map[string]any{"command": "touch a.txt", "description": "Touch a.txt"}),
		call("Write", map[string]any{"file_path": "notes.txt", "content": "notes\n"}),
		fakeapi.Turn{Text: "done", Usage: u},
	)
	defer fake.Close()
	root := t.TempDir()
	e, err := realcli.ClaudeEnv(root, fake.URL())
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	desk := filepath.Join(root, "desk")
	hook := fmt.Sprintf("%s=1 %q hook claude --desk %q --wait 2m", huddleEnv, exe, desk)
	settings, _ := json.Marshal(map[string]any{"hooks": map[string]any{"PermissionRequest": []any{map[string]any{
		"matcher": "*", "hooks": []any{map[string]any{"type": "command", "command": hook, "timeout": 600}}}}}})
	if err := os.WriteFile(filepath.Join(root, "claude-config", "settings.json"), settings, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, b.Claude, "-p", "Write hello.txt and notes.txt; touch a.txt.", "--output-format", "stream-json", "--verbose", "--permission-mode", "default")
	cmd.Env, cmd.Dir = e.Vars, e.Work
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	pending := func(tool string) protocol.Request {
		t.Helper()
		return deskQuestion(t, desk, tool, func(r protocol.Request) bool { return r.Permission.Tool == tool })
	}
	write := pending("Write")
	if _, err := dirlead.AllowForSession(desk, write.ID, protocol.Lead); err != nil {
		t.Fatal(err)
	}
	touch := pending("Bash")
	if _, err := dirlead.Decide(desk, touch.ID, protocol.EventReject, noTouch, protocol.Lead); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("claude: %v\n%s", err, out.String())
		}
	case <-ctx.Done():
		t.Fatal("claude did not finish")
	}

	decided, from := permissions(t, desk)
	member := write.From
	wantLines(t, "the desk's requests", decided, []string{
		"Write hello.txt: allowed by lead",
		"Bash touch a.txt: denied by lead",
		"Write notes.txt: allowed by lead (for the session: " + write.Rule + ")",
	})
	for _, f := range from {
		if f != member {
			t.Errorf("a question of %s at the desk, want only %s's", f, member)
		}
	}
	wantFiles(t, e.Work, map[string]bool{"hello.txt": true, "notes.txt": true, "a.txt": false}, "; what the CLI printed:\n"+out.String())
	modelRead(t, fake, noTouch)
	m, err := dirrecords.LoadMember(desk, member)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(member, "claude-") || !strings.Contains(m.Role, e.Work) || m.Counters.Permissions != 3 || m.Status != protocol.MemberIdle {
		t.Errorf("the session's member %s: %+v", member, m)
	}
	t.Logf("desk %s; member %s (%s):\n%s", desk, member, m.Role, strings.Join(decided, "\n"))
}

// deskQuestion waits for the pending permission request at desk that is
// (what) and returns it.
func deskQuestion(t *testing.T, desk, what string, is func(protocol.Request) bool) protocol.Request {
	t.Helper()
	var p protocol.Request
	testkit.WaitFor(t, time.Minute, "the question of "+what+" at the desk", func() bool {
		rs, _, _ := dirrecords.ReadLiveRequests(desk)
		for _, r := range rs {
			if r.Kind == protocol.KindPermission && r.Status == protocol.RequestPending && is(r) {
				p = r
				return true
			}
		}
		return false
	})
	return p
}

// useEnv puts e's variables in this process's environment, which the
// runtime's members inherit.
func useEnv(t *testing.T, e realcli.Env) {
	for _, v := range e.Vars {
		k, val, _ := strings.Cut(v, "=")
		t.Setenv(k, val)
	}
}

// teeOf is a command named name under e.Root that runs bin and copies what
// it prints to the file printed as well: the CLI's own figures, read back.
func teeOf(t *testing.T, e realcli.Env, bin, name string) (tee, printed string) {
	t.Helper()
	printed, tee = filepath.Join(e.Root, "stdout.jsonl"), filepath.Join(e.Root, name)
	script := fmt.Sprintf("#!/bin/bash\nset -o pipefail\n%q \"$@\" | tee -a %q\n", bin, printed)
	if err := os.WriteFile(tee, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return tee, printed
}

// modelRead fails unless every one of said reached the model in some
// request the fake served.
func modelRead(t *testing.T, fake *fakeapi.Server, said ...string) {
	t.Helper()
	var bodies strings.Builder
	for _, r := range fake.Served() {
		bodies.Write(r.Body)
	}
	for _, s := range said {
		if !strings.Contains(bodies.String(), s) {
			t.Errorf("the model never read %q", s)
		}
	}
}
