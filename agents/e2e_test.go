package agents_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"huddle/internal/realcli"
	"huddle/internal/testkit"
	"huddle/internal/testkit/dirlead"
	"huddle/internal/testkit/dirrecords"
	"huddle/internal/testkit/files"
	"huddle/protocol"
	"huddle/team/supervisor"
	"huddle/teamdir"
)

// runtime runs a team through the real runtime; its exec members run
// `huddle agent …` through this test binary (huddleEnv).
type runtime struct {
	dir    string
	mu     sync.Mutex
	events []supervisor.Event
}

func startRuntime(t *testing.T, command ...string) *runtime {
	t.Helper()
	return startRuntimeWith(t, nil, command...)
}

// startRuntimeWith runs coder with the member fields of with added to
// its team.json entry.
func startRuntimeWith(t *testing.T, with map[string]any, command ...string) *runtime {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(huddleEnv, "1")
	rt := &runtime{dir: t.TempDir()}
	member := map[string]any{"name": "coder", "role": "writes the change", "runtime": map[string]any{"kind": "exec", "command": command}}
	for k, v := range with {
		member[k] = v
	}
	b, _ := json.Marshal(map[string]any{"name": "agents", "members": []any{member}})
	if err := os.WriteFile(teamdir.ConfigPath(rt.dir), b, 0o600); err != nil {
		t.Fatal(err)
	}
	st := files.Open(t, rt.dir)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- supervisor.Run(ctx, st, rt.dir, supervisor.Options{Executable: exe, Tick: 20 * time.Millisecond, OnEvent: rt.add})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("supervisor.Run: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("supervisor.Run did not stop")
		}
	})
	return rt
}

func (rt *runtime) add(e supervisor.Event) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.events = append(rt.events, e)
}

// activities are the activities of coder's member_status events.
func (rt *runtime) activities() string {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	var out []string
	for _, e := range rt.events {
		if e["event"] == "member_status" && e["member"] == "coder" {
			a, _ := e["activity"].(string)
			out = append(out, e["status"].(string)+": "+a)
		}
	}
	return strings.Join(out, " | ")
}

func (rt *runtime) member(t *testing.T) *protocol.Member {
	t.Helper()
	m, err := dirrecords.LoadMember(rt.dir, "coder")
	if err != nil {
		return &protocol.Member{} // not written yet
	}
	return m
}

// pendingPlan waits for coder's plan to await the lead.
func (rt *runtime) pendingPlan(t *testing.T) protocol.Request {
	t.Helper()
	return rt.pendingPlanWithin(t, 30*time.Second)
}

// pendingPlanWithin waits up to d for coder's plan to await the lead.
func (rt *runtime) pendingPlanWithin(t *testing.T, d time.Duration) protocol.Request {
	t.Helper()
	var plan protocol.Request
	testkit.WaitFor(t, d, "coder's plan pending", func() bool {
		rs, _, _ := dirrecords.ReadLiveRequests(rt.dir)
		for _, r := range rs {
			if r.Kind == protocol.KindPlan && r.From == "coder" && r.Status == protocol.RequestPending {
				plan = r
				return true
			}
		}
		return false
	})
	return plan
}

// leadInbox is the lead's inbox, decoded.
func (rt *runtime) leadInbox(t *testing.T) []protocol.Message {
	t.Helper()
	p, _ := teamdir.InboxPath(rt.dir, protocol.Lead)
	b, _ := os.ReadFile(p)
	var out []protocol.Message
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if m, err := protocol.Decode([]byte(l), protocol.Fallback{}); err == nil {
			out = append(out, m)
		}
	}
	return out
}

func (rt *runtime) deadLetters() string {
	b, _ := os.ReadFile(teamdir.DeadLetterPath(rt.dir))
	return string(b)
}

// TestClaudeTeammateThroughTheRuntime: `huddle agent claude` as an exec
// member of a team the real runtime runs, its CLI replaying a real Claude
// Code session. Each ExitPlanMode is a plan request: rejected with
// team.Decide, the model revises; approved, the same run works. Its
// Write asks the lead, who allows it for the session; its first Bash
// asks the lead, who allows it once; its rm is denied by the member's
// deny rule in team.json without asking anyone. Every answer reaches the
// CLI; the counters hold the run's own figures, the lead gets the report,
// and a shutdown stops the member.
func TestClaudeTeammateThroughTheRuntime(t *testing.T) {
	f := newFake(t, "claude", claudeSessionFixture)
	rules := map[string]any{"permissions": map[string]any{"deny": []string{"Bash(rm:*)"}}}
	rt := startRuntimeWith(t, rules, "huddle", "agent", "claude", "--task", task, "--bin", f.bin)

	plan := rt.pendingPlan(t)
	if plan.Plan != strings.TrimSpace(realcli.ClaudePlanV1) {
		t.Errorf("plan request %q, want %q", plan.Plan, realcli.ClaudePlanV1)
	}
	if _, err := dirlead.Decide(rt.dir, plan.ID, protocol.EventReject, realcli.ClaudePlanDenial, protocol.Lead); err != nil {
		t.Fatal(err)
	}
	revised := rt.pendingPlan(t)
	if revised.Plan != strings.TrimSpace(realcli.ClaudePlanV2) {
		t.Errorf("revised plan %q", revised.Plan)
	}
	if _, err := dirlead.Decide(rt.dir, revised.ID, protocol.EventApprove, "", protocol.Lead); err != nil {
		t.Fatal(err)
	}
	write := rt.pendingPermission(t, "Write", "hello.txt")
	if !strings.Contains(write.Permission.Summary, "hello.txt") {
		t.Errorf("the Write's summary: %q", write.Permission.Summary)
	}
	if _, err := dirlead.AllowForSession(rt.dir, write.ID, protocol.Lead); err != nil {
		t.Fatal(err)
	}
	show := rt.pendingPermission(t, "Bash", "mkdir -p out")
	if _, err := dirlead.Decide(rt.dir, show.ID, protocol.EventApprove, "", protocol.Lead); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 30*time.Second, "coder idle after the work", func() bool {
		m := rt.member(t)
		return m.Status == protocol.MemberIdle && strings.HasPrefix(m.Activity, "done: "+realcli.ClaudeDone[:10])
	})
	decided, _ := permissions(t, rt.dir)
	wantLines(t, "the permissions, in order", decided, []string{
		"Write hello.txt: allowed by lead",
		"Bash " + realcli.ClaudeShowCommand + ": allowed by lead",
		"Bash " + realcli.ClaudeRmCommand + ": denied by rule Bash(rm:*)",
	})
	host := f.hostLines(t, 1)
	if len(host) != 6 {
		t.Fatalf("the CLI got %d lines, want the task and 5 answers: %v", len(host), host)
	}
	if b, _ := json.Marshal(host[5]); !strings.Contains(string(b), `"behavior":"deny"`) || !strings.Contains(string(b), "Bash(rm:*)") {
		t.Errorf("the rm's answer: %s", b)
	}
	c := rt.member(t).Counters
	if c.TokensIn != 12600 || c.TokensOut != 450 || math.Abs(c.CostUSD-0.05004) > 1e-9 || c.Plans != 2 || c.Permissions != 3 {
		t.Errorf("counters %+v", c)
	}
	var answer string
	for _, m := range rt.leadInbox(t) {
		if m.Type == protocol.TypeMessage && m.From == "coder" {
			answer = m.Content
		}
	}
	if answer != realcli.ClaudeDone {
		t.Errorf("the lead got %q", answer)
	}
	if dl := rt.deadLetters(); dl != "" {
		t.Errorf("lines of the adapter were refused:\n%s", dl)
	}

	sd, err := dirlead.RequestShutdown(rt.dir, "coder", "done")
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 20*time.Second, "coder stopped", func() bool { return rt.member(t).Status == protocol.MemberStopped })
	if r, _ := dirrecords.LoadRequest(rt.dir, sd.ID); r.Status != protocol.RequestApproved || r.ResolvedBy != "coder" {
		t.Errorf("shutdown request %+v", r)
	}
	if n := len(f.starts()); n != 1 {
		t.Errorf("claude started %d times, want 1", n)
	}
}

// pendingPermission waits for a permission of coder to use tool, with an
// input that holds holds, to await the lead. (A use a rule decides is
// pending for a moment too.)
func (rt *runtime) pendingPermission(t *testing.T, tool, holds string) protocol.Request {
	t.Helper()
	var p protocol.Request
	testkit.WaitFor(t, 30*time.Second, "coder's "+tool+" permission pending", func() bool {
		rs, _, _ := dirrecords.ReadLiveRequests(rt.dir)
		for _, r := range rs {
			if r.Kind == protocol.KindPermission && r.From == "coder" && r.Status == protocol.RequestPending && r.Permission.Tool == tool &&
				strings.Contains(string(r.Permission.Input), holds) {
				p = r
				return true
			}
		}
		return false
	})
	return p
}

// TestMissingBinaryCrashesTheMember: a binary that is not there is one
// line in the member's log naming it, and the member is crashed.
func TestMissingBinaryCrashesTheMember(t *testing.T) {
	rt := startRuntime(t, "huddle", "agent", "claude", "--task", task, "--bin", "/nonexistent/claude")
	testkit.WaitFor(t, 20*time.Second, "coder crashed", func() bool { return rt.member(t).Status == protocol.MemberCrashed })
	logPath, _ := teamdir.MemberLogPath(rt.dir, "coder")
	b, _ := os.ReadFile(logPath)
	want := `huddle: agent: claude binary "/nonexistent/claude" (from --bin): not found; install claude or name it with --bin or HUDDLE_CLAUDE_BIN` + "\n"
	if string(b) != want {
		t.Errorf("members/coder.log = %q, want the one line %q", b, want)
	}
	if m := rt.member(t); !strings.Contains(m.Error, "exit status 1") {
		t.Errorf("crash error %q", m.Error)
	}
}

// permissions are the permission requests of the team in dir, oldest
// first, each as "TOOL WHAT: STATUS by RESOLVER" (WHAT its command, or its
// file's name), with who asked each.
func permissions(t *testing.T, dir string) (decided, from []string) {
	t.Helper()
	rs, err := dirrecords.ListRequests(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Kind != protocol.KindPermission {
			continue
		}
		var in struct {
			Command  string `json:"command"`
			FilePath string `json:"file_path"`
		}
		_ = json.Unmarshal(r.Permission.Input, &in)
		what := in.Command
		if in.FilePath != "" {
			what = filepath.Base(in.FilePath)
		}
		decided = append(decided, fmt.Sprintf("%s %s: %s by %s", r.Permission.Tool, what, r.Status, r.ResolvedBy))
		from = append(from, r.From)
	}
	return decided, from
}

// wantLines fails unless got is want, line for line.
func wantLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\n%s\nwant\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// wantFiles fails unless each name under dir exists or not as said;
// context is added to a failure.
func wantFiles(t *testing.T, dir string, exist map[string]bool, context string) {
	t.Helper()
	for name, want := range exist {
		if _, err := os.Stat(filepath.Join(dir, name)); (err == nil) != want {
			t.Errorf("%s exists: %v, want %v%s", name, err == nil, want, context)
		}
	}
}
