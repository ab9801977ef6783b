package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/internal/testkit/dirrecords"
	"huddle/protocol"
	"huddle/team"
	"huddle/teamdir"
)

// elsewhere is a team directory and another directory to run huddle in,
// with the team directory as a path relative to it.
func elsewhere(t *testing.T) (dir, cwd, rel string) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	root := t.TempDir()
	dir, cwd = filepath.Join(root, "project", "team"), filepath.Join(root, "somewhere", "else")
	for _, d := range []string{dir, cwd} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	rel, err := filepath.Rel(cwd, dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, cwd, rel
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// leadHears waits for a message to the lead from member whose content
// starts with prefix, and returns its content.
func leadHears(t *testing.T, dir, member, prefix string) string {
	t.Helper()
	var content string
	testkit.WaitFor(t, 20*time.Second, "a message from "+member+" starting "+prefix, func() bool {
		for _, m := range inboxLines(t, dir, protocol.Lead) {
			if m.From == member && strings.HasPrefix(m.Content, prefix) {
				content = m.Content
				return true
			}
		}
		return false
	})
	return content
}

// TestReadmeAgentRunsFromAnyDirectory: the README's example agent (kept
// byte for byte as team/supervisor/testdata/agent.py), in team.json as the README
// shows it — ["python3", "agent.py"], agent.py next to team.json — runs
// when `huddle up` runs in another directory with a relative --dir: its
// plan, a rejection and the revision, the approval, a message answered,
// and a shutdown it approves.
func TestReadmeAgentRunsFromAnyDirectory(t *testing.T) {
	dir, cwd, rel := elsewhere(t)
	copyFile(t, filepath.Join("..", "..", "team", "supervisor", "testdata", "agent.py"), filepath.Join(dir, "agent.py"))
	b, _ := json.Marshal(team.Team{Name: "audit", Members: []team.MemberSpec{{Name: "auditor", Role: "audits",
		Runtime: team.RuntimeSpec{Kind: team.RuntimeExec, Command: []string{"python3", "agent.py"}}}}})
	if err := os.WriteFile(team.ConfigPath(dir), b, 0o600); err != nil {
		t.Fatal(err)
	}
	up := startUpIn(t, cwd, rel)

	pending := func() []protocol.Request {
		var out []protocol.Request
		for _, r := range mustRequests(t, dir) {
			if r.From == "auditor" && r.Status == protocol.RequestPending {
				out = append(out, r)
			}
		}
		return out
	}
	testkit.WaitFor(t, 20*time.Second, "the agent's plan", func() bool { return len(pending()) == 1 })
	first := pending()[0]
	mustHuddle(t, "reject", first.ID, "--feedback", "only the large ones", "--dir", dir)
	testkit.WaitFor(t, 20*time.Second, "the revised plan", func() bool {
		p := pending()
		return len(p) == 1 && p[0].ID != first.ID && strings.HasSuffix(p[0].Plan, "only the large ones")
	})
	mustHuddle(t, "approve", pending()[0].ID, "--dir", dir)
	testkit.WaitFor(t, 20*time.Second, "auditor working on it", func() bool {
		m, err := dirrecords.LoadMember(dir, "auditor")
		return err == nil && m.Status == protocol.MemberWorking && m.Activity == "auditing"
	})
	mustHuddle(t, "send", "auditor", "invoice 42", "--dir", dir)
	leadHears(t, dir, "auditor", "audited: invoice 42")

	r := huddle(t, "shutdown", "auditor", "--wait", "--timeout", "20s", "--dir", dir)
	if r.code != ExitOK || !strings.HasSuffix(r.stdout, "approved by auditor: done\n") {
		t.Fatalf("shutdown --wait: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	waitingFor(t, dir, "auditor", protocol.MemberStopped)
	if up.saw(func(e map[string]any) bool { return e["event"] == "dead_letter" }) {
		t.Fatalf("the example agent's lines were refused: %v", up.events)
	}
}

// TestExecAgentGets: what docs/agents.md says an exec teammate gets — its
// working directory (the team directory, whatever directory huddle runs
// in), HUDDLE_DIR (absolute) and HUDDLE_MEMBER, the invocation_result of
// its invoke line, invocation_requests it answers with a result line, its
// stderr in members/<name>.log, and SIGINT when the team stops.
func TestExecAgentGets(t *testing.T) {
	dir, cwd, rel := elsewhere(t)
	copyFile(t, filepath.Join("testdata", "probe_agent.py"), filepath.Join(dir, "probe_agent.py"))
	if err := os.WriteFile(filepath.Join(dir, "probe-ipc.json"), []byte(`{"allowed_targets":["greeter"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	greeter := team.MemberSpec{Name: "greeter", Role: "greets", Runtime: team.RuntimeSpec{Kind: team.RuntimeScript,
		Steps: []team.Step{{Wait: team.Duration(time.Hour)}}}, Actions: map[string]team.ActionSpec{"greet": {Reply: "hello from greeter"}}}
	probe := team.MemberSpec{Name: "probe", Role: "reports", IPC: "probe-ipc.json",
		Runtime: team.RuntimeSpec{Kind: team.RuntimeExec, Command: []string{"python3", "probe_agent.py"}}}
	b, _ := json.Marshal(team.Team{Name: "probing", Members: []team.MemberSpec{greeter, probe}})
	if err := os.WriteFile(team.ConfigPath(dir), b, 0o600); err != nil {
		t.Fatal(err)
	}
	up := startUpIn(t, cwd, rel)

	var env struct{ Cwd, Dir, Member string }
	if err := json.Unmarshal([]byte(leadHears(t, dir, "probe", "{")), &env); err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(dir)
	if got, _ := filepath.EvalSymlinks(env.Cwd); got != real {
		t.Errorf("the agent runs in %s, want the team directory %s", env.Cwd, dir)
	}
	if !filepath.IsAbs(env.Dir) || env.Dir != dir || env.Member != "probe" {
		t.Errorf("HUDDLE_DIR %q HUDDLE_MEMBER %q, want %q and probe", env.Dir, env.Member, dir)
	}

	var res protocol.InvocationResult
	if err := json.Unmarshal([]byte(strings.TrimPrefix(leadHears(t, dir, "probe", "result: "), "result: ")), &res); err != nil {
		t.Fatal(err)
	}
	if res.Status != protocol.ResultOK || !strings.Contains(string(res.Result), "hello from greeter") || res.RequestID == "" || res.CorrelationID == "" {
		t.Errorf("the invocation_result of its invoke: %+v", res)
	}

	config := filepath.Join(t.TempDir(), ".puruto-ipc.json")
	if err := os.WriteFile(config, []byte(`{"owner":"tester","allowed_targets":["probe"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := mustHuddle(t, "call", "--target", "probe", "--action", "anything", "--prompt", "p", "--config", config, "--dir", dir)
	if !strings.Contains(r.stdout, `"summary": "probed: p"`) {
		t.Errorf("call probe:\n%s", r.stdout)
	}

	if err := up.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	up.waitExit(t, "SIGTERM")
	logPath, _ := teamdir.MemberLogPath(dir, "probe")
	log, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(log), "probe: started\n") || !strings.Contains(string(log), "probe: SIGINT\n") {
		t.Errorf("members/probe.log:\n%s", log)
	}
	if m, _ := dirrecords.LoadMember(dir, "probe"); m == nil || m.Status != protocol.MemberStopped {
		t.Errorf("after the stop probe is %+v", m)
	}
}

// TestAgentsDocExamples: every line docs/agents.md shows is what it says:
// an inbox message huddle's decoder accepts (and re-encodes the same), or
// an exec action with only protocol.ExecLine's fields; its complete agent is
// the README's, byte for byte.
func TestAgentsDocExamples(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "agents.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	messages, actions := 0, 0
	for _, block := range strings.Split(doc, "```json\n")[1:] {
		block = block[:strings.Index(block, "```")]
		if strings.HasPrefix(block, `{"name"`) { // a member of team.json
			var m team.MemberSpec
			dec := json.NewDecoder(strings.NewReader(block))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&m); err != nil || m.Runtime.Kind != team.RuntimeExec {
				t.Errorf("not an exec member: %s: %v", block, err)
			}
			continue
		}
		for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
			var probe struct {
				Type   string `json:"type"`
				Action string `json:"action"`
			}
			if err := json.Unmarshal([]byte(line), &probe); err != nil {
				t.Errorf("not JSON: %s", line)
				continue
			}
			switch {
			case probe.Type != "":
				messages++
				m, err := protocol.Decode([]byte(line), protocol.Fallback{})
				if err != nil {
					t.Errorf("huddle would refuse %s: %v", line, err)
					continue
				}
				if again, _ := protocol.Encode(&m); string(again) != line {
					t.Errorf("huddle writes\n  %s\nnot\n  %s", again, line)
				}
			case probe.Action != "":
				actions++
				var l protocol.ExecLine
				dec := json.NewDecoder(strings.NewReader(line))
				dec.DisallowUnknownFields()
				if err := dec.Decode(&l); err != nil {
					t.Errorf("not an exec line: %s: %v", line, err)
				}
				if l.Result != nil {
					if err := l.Result.Validate(); err != nil {
						t.Errorf("not a valid result: %s: %v", line, err)
					}
				}
			}
		}
	}
	if messages < 11 || actions < 7 {
		t.Errorf("read %d messages and %d actions from docs/agents.md: the parsing broke", messages, actions)
	}
	agent, err := os.ReadFile(filepath.Join("..", "..", "team", "supervisor", "testdata", "agent.py"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(doc, "```python\n"+string(agent)+"```") {
		t.Error("docs/agents.md's complete agent is not team/supervisor/testdata/agent.py (the README's)")
	}
}
