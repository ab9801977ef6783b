package agents_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"huddle/claudeteam"
	"huddle/internal/fakeapi"
	"huddle/internal/realcli"
	"huddle/internal/testkit"
	"huddle/internal/testkit/dirlead"
	"huddle/internal/testkit/dirrecords"
	"huddle/protocol"
	"huddle/team"
)

// The marks the fake model reads to tell the lead's requests from the
// teammate's, and the plan the teammate writes.
const (
	leadMark     = "LEAD-GO"
	teammateMark = "TEAMMATE-TASK"
	teamPlan     = "# PLAN-CONTENT\n\n1. Write hello.txt.\n"
)

// TestRealClaudeTeamJournaled drives a Claude Code 2.1.328 agent team the
// way a person does, in its interactive TUI on a pseudo-terminal (only
// that creates teams): the lead, in plan mode, spawns a teammate, who must
// then have its plan approved; the teammate writes its plan and sends it
// to the lead, the lead's session approves it. `huddle claude watch`
// journals the team as it goes. The person quits, Claude Code deletes the
// team; `huddle claude requests --all` afterwards still shows the
// approved plan with its text.
func TestRealClaudeTeamJournaled(t *testing.T) {
	// Each step has its own deadline below; this one bounds the whole on a
	// machine as busy as two -race runs of it at once make it.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	b, err := realcli.Install(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var script []fakeapi.Turn
	for range 40 { // the lead's and the teammate's requests interleave: each is answered by what it says
		script = append(script, fakeapi.Turn{Make: teamTurn})
	}
	fake := fakeapi.Anthropic(script...)
	defer fake.Close()
	root := t.TempDir()
	e, err := realcli.ClaudeEnv(root, fake.URL())
	if err != nil {
		t.Fatal(err)
	}
	if err := realcli.ClaudeInteractive(&e); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(root, "claude-config")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(root, "xdg")) // huddle's journal
	huddle := func(args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, exe, args...)
		cmd.Env = append(os.Environ(), huddleEnv+"=1")
		return cmd
	}

	watch := huddle("claude", "watch", "--root", cfg)
	var watchOut testkit.Buffer
	watch.Stdout, watch.Stderr = &watchOut, &watchOut
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = watch.Process.Kill() }()

	term, err := realcli.StartTerminal(b.Claude, []string{"--permission-mode", "plan", leadMark + ": make a team of one planner"}, e, 120, 40)
	if err != nil {
		t.Fatal(err)
	}
	defer term.Stop()
	// press types key (if not "") until the screen shows re: a key typed
	// before the TUI listens for it is lost, so it is typed again each
	// second the screen has not changed as it should.
	press := func(key, what string, done func(screen string) bool) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		var typed time.Time
		for tick := time.NewTicker(50 * time.Millisecond); !done(term.Screen()); <-tick.C {
			select {
			case <-term.Exited():
				t.Fatalf("claude exited waiting for %s; its screen:\n%s", what, term.Screen())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s on Claude Code's screen:\n%s", what, term.Screen())
			}
			if key != "" && time.Since(typed) > time.Second {
				if err := term.Type(key); err != nil {
					t.Fatal(err)
				}
				typed = time.Now()
			}
		}
	}
	shows := func(re string) func(string) bool { return regexp.MustCompile(re).MatchString }
	testkit.WaitFor(t, time.Minute, "huddle claude watch journaling the session's team", func() bool {
		return strings.Contains(watchOut.String(), "journaling team session-")
	})

	// The lead's Agent call asks the person (the safety check auto mode
	// relies on does not pass through a loopback API): Yes, chosen with
	// the down arrow and Enter a second apart, as a person types (keys in
	// one burst are read as a paste), each typed again while the screen
	// says it was not taken.
	const proceed = "Do you want to proceed?"
	press("", "the Agent prompt", shows(regexp.QuoteMeta(proceed)))
	no, yes := regexp.MustCompile(`(?m)^\s*❯ No\s*$`), regexp.MustCompile(`(?m)^\s*❯ Yes\s*$`)
	var typed time.Time
	press("", "the Agent prompt answered Yes", func(s string) bool {
		if !strings.Contains(s, proceed) {
			return true
		}
		if time.Since(typed) > time.Second {
			key := ""
			switch {
			case no.MatchString(s):
				key = "\x1b[B"
			case yes.MatchString(s):
				key = "\r"
			}
			if key != "" {
				if err := term.Type(key); err != nil {
					t.Fatal(err)
				}
				typed = time.Now()
			}
		}
		return false
	})
	press("", "the teammate's plan at the lead", shows(`Plan Approval Request from planner`))

	teamName := strings.TrimSpace(regexp.MustCompile(`journaling team (session-[0-9a-f]+)`).FindStringSubmatch(watchOut.String())[1])
	j, err := claudeteam.DefaultJournal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The lead's next model turn approves the plan; on a loaded machine
	// that turn can take a while, so the wait is long and its failure
	// shows what the journal and the screen held.
	var st claudeteam.State
	var readErr error
	deadline := time.Now().Add(3 * time.Minute)
	for tick := time.NewTicker(100 * time.Millisecond); ; <-tick.C {
		st, readErr = claudeteam.ReadFrom(cfg, teamName, j)
		if readErr == nil && approvedPlan(st.Snapshot.Requests) != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no approved plan in huddle's journal after 3m (read error %v); requests %+v\nwatch:\n%s\nscreen:\n%s",
				readErr, st.Snapshot.Requests, watchOut.String(), term.Screen())
		}
	}

	// The person quits; Claude Code removes the team.
	// /exit, then Enter on "Exit and stop tasks" when it asks what
	// becomes of the teammate still running.
	// Typed once: the TUI has long been listening, and typing again
	// while its screen lags would send "/exit/exit".
	if err := term.Type("/exit"); err != nil {
		t.Fatal(err)
	}
	press("", "/exit typed", shows(`❯ /exit`))
	deadline = time.Now().Add(time.Minute)
	typed = time.Time{}
	for tick := time.NewTicker(50 * time.Millisecond); ; <-tick.C {
		select {
		case <-term.Exited():
		default:
			if time.Now().After(deadline) {
				t.Fatalf("claude did not exit on /exit; its screen:\n%s", term.Screen())
			}
			s := term.Screen()
			if (strings.Contains(s, "❯ /exit") || strings.Contains(s, "Enter to confirm")) && time.Since(typed) > time.Second {
				if err := term.Type("\r"); err != nil {
					t.Fatal(err)
				}
				typed = time.Now()
			}
			continue
		}
		break
	}
	testkit.WaitFor(t, time.Minute, "Claude Code removing its team", func() bool {
		_, err := os.Stat(filepath.Join(cfg, "teams", teamName))
		return os.IsNotExist(err)
	})
	// The watch ends on an interrupt, as a person's Ctrl-C; one still
	// running a minute later is a hang, and its goroutines are printed.
	_ = watch.Process.Signal(syscall.SIGINT)
	watched := make(chan error, 1)
	go func() { watched <- watch.Wait() }()
	select {
	case err := <-watched:
		if err != nil {
			t.Errorf("huddle claude watch: %v\n%s", err, watchOut.String())
		}
	case <-time.After(time.Minute):
		_ = watch.Process.Signal(syscall.SIGQUIT)
		<-watched
		t.Fatalf("huddle claude watch did not end on SIGINT:\n%s", watchOut.String())
	}

	out, err := huddle("claude", "requests", teamName, "--all", "--json", "--root", cfg).CombinedOutput()
	if err != nil {
		t.Fatalf("huddle claude requests --all --json: %v\n%s", err, out)
	}
	var reqs []protocol.Request
	if err := json.Unmarshal(out, &reqs); err != nil {
		t.Fatalf("huddle claude requests --all --json printed %q: %v", out, err)
	}
	p := approvedPlan(reqs)
	if p == nil {
		t.Fatalf("no approved plan in huddle claude requests --all after the team was removed: %s", out)
	}
	if p.From != "planner" || p.To != "team-lead" || strings.TrimSpace(p.Plan) != strings.TrimSpace(teamPlan) {
		t.Errorf("the plan request: from %q to %q, plan %q; want planner → team-lead, %q", p.From, p.To, p.Plan, teamPlan)
	}
	table, err := huddle("claude", "requests", teamName, "--all", "--root", cfg).CombinedOutput()
	t.Logf("huddle claude requests --all, the team gone:\n%s", table)
	if err != nil || !bytes.Contains(table, []byte("PLAN-CONTENT")) || !bytes.Contains(table, []byte("approved")) {
		t.Errorf("huddle claude requests --all: %v\n%s", err, table)
	}
}

// approvedPlan is the first approved plan request of rs, or nil.
func approvedPlan(rs []protocol.Request) *protocol.Request {
	for i, r := range rs {
		if r.Kind == protocol.KindPlan && r.Status == protocol.RequestApproved {
			return &rs[i]
		}
	}
	return nil
}

// teamTurn is the fake model of TestRealClaudeTeamJournaled. The lead
// spawns a teammate named planner, then waits. The teammate does what a
// model following Claude Code's instructions does: loads ExitPlanMode
// (deferred), calls it, is told where its plan file is, writes the plan
// there, calls ExitPlanMode again, and waits for the lead's answer.
func teamTurn(r fakeapi.Request) (fakeapi.Turn, error) {
	u := fakeapi.Usage{InputTokens: 10, OutputTokens: 5}
	call := func(name string, input any) fakeapi.Turn {
		return fakeapi.Turn{Calls: []fakeapi.Call{{Name: name, Input: input}}, Usage: u}
	}
	m, err := r.Messages()
	if err != nil {
		return fakeapi.Turn{}, err
	}
	var lastCall, lastResult string
	for _, msg := range m.Messages {
		for _, bl := range msg.Content {
			switch bl.Type {
			case "tool_use":
				lastCall = bl.Name
			case "tool_result":
				lastResult = bl.Content
			}
		}
	}
	body := string(r.Body)
	switch {
	case strings.Contains(body, leadMark): // the lead (its messages hold the teammate's prompt too)
		if lastCall == "" {
			return call("Agent", map[string]any{"name": "planner", "description": "Plan hello", "subagent_type": "general-purpose",
				"prompt": teammateMark + ": plan writing hello.txt"}), nil
		}
		return fakeapi.Turn{Text: "Waiting for the planner.", Usage: u}, nil
	case strings.Contains(body, teammateMark):
		const noPlan = "No plan file found at "
		switch {
		case lastCall == "":
			return call("ToolSearch", map[string]any{"query": "select:ExitPlanMode"}), nil
		case lastCall == "ToolSearch", lastCall == "Write":
			return call("ExitPlanMode", map[string]any{}), nil
		case lastCall == "ExitPlanMode" && strings.HasPrefix(lastResult, noPlan):
			path, _, _ := strings.Cut(strings.TrimPrefix(lastResult, noPlan), ". Please")
			return call("Write", map[string]any{"file_path": path, "content": teamPlan}), nil
		}
		return fakeapi.Turn{Text: "Waiting for the lead's answer.", Usage: u}, nil
	}
	return fakeapi.Turn{Text: "ok", Usage: u}, nil
}

// TestRealCodexAsksTheDesk: a Codex 0.169.0 session huddle did not start
// (its app server, driven by a client of its own as an editor would), with
// `huddle hook codex` as its PermissionRequest hook in hooks.json, trusted
// as a person trusts it in /hooks, puts both of its approvals to the desk
// instead of to its client: the first command is allowed by the lead, the
// second denied with a message the model reads. The session is a member
// of the desk, named by its thread id's random tail, its cwd in its role.
func TestRealCodexAsksTheDesk(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b, err := realcli.Install(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const noTouch = "No touching: the lead keeps denied.txt out."
	escalated := func(cmd string) fakeapi.Turn {
		return fakeapi.Turn{Calls: []fakeapi.Call{{Name: "exec_command", Input: map[string]any{
			"cmd": cmd, "sandbox_permissions": "require_escalated", "justification": "Touch a file?"}}}}
	}
	fake := fakeapi.Responses(escalated("touch allowed.txt"), escalated("touch denied.txt"), fakeapi.Turn{Text: "done"})
	defer fake.Close()
	root := t.TempDir()
	e, err := realcli.CodexEnv(root, fake.URL())
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	desk := filepath.Join(root, "desk")
	hook := fmt.Sprintf("%s=1 %q hook codex --desk %q --wait 2m", huddleEnv, exe, desk)
	hooks, _ := json.Marshal(map[string]any{"hooks": map[string]any{"PermissionRequest": []any{map[string]any{
		"hooks": []any{map[string]any{"type": "command", "command": hook, "timeout": 600}}}}}})
	if err := os.WriteFile(filepath.Join(root, "codex-home", "hooks.json"), hooks, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := realcli.StartCodex(b, e)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Stop() }()
	if err := c.Call(ctx, "initialize", map[string]any{"clientInfo": map[string]any{"name": "an-editor", "version": "0.0.0"}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Notify("initialized", nil); err != nil {
		t.Fatal(err)
	}
	if err := c.TrustHooks(ctx, e, e.Work); err != nil {
		t.Fatal(err)
	}
	var th realcli.CodexThreadStarted
	if err := c.Call(ctx, "thread/start", map[string]any{"cwd": e.Work, "approvalPolicy": "on-request", "sandbox": "read-only"}, &th); err != nil {
		t.Fatal(err)
	}
	turn := make(chan error, 1)
	go func() {
		err := c.Call(ctx, "turn/start", map[string]any{"threadId": th.Thread.ID, "input": []any{map[string]any{"type": "text", "text": "Touch two files."}}}, nil)
		if err == nil {
			_, err = c.ExpectTurnCompleted(ctx) // an approval put to this client fails it
		}
		turn <- err
	}()

	pending := func(command string) protocol.Request {
		t.Helper()
		return deskQuestion(t, desk, command, func(r protocol.Request) bool { return strings.Contains(string(r.Permission.Input), command) })
	}
	allowed := pending("touch allowed.txt")
	if _, err := dirlead.Decide(desk, allowed.ID, protocol.EventApprove, "", protocol.Lead); err != nil {
		t.Fatal(err)
	}
	denied := pending("touch denied.txt")
	if _, err := dirlead.Decide(desk, denied.ID, protocol.EventReject, noTouch, protocol.Lead); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-turn:
		if err != nil {
			t.Fatalf("the session's turn: %v\nstderr:\n%s", err, c.Stderr())
		}
	case <-ctx.Done():
		t.Fatal("the session's turn did not complete")
	}

	decided, from := permissions(t, desk)
	wantLines(t, "the desk's requests", decided, []string{
		"Bash touch allowed.txt: allowed by lead",
		"Bash touch denied.txt: denied by lead",
	})
	member, err := team.DeskMember("codex", th.Thread.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range from {
		if f != member {
			t.Errorf("a question of %s at the desk, want only %s's", f, member)
		}
	}
	wantFiles(t, e.Work, map[string]bool{"allowed.txt": true, "denied.txt": false}, "")
	modelRead(t, fake, noTouch)
	m, err := dirrecords.LoadMember(desk, member)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(member, "codex-") || !strings.Contains(m.Role, e.Work) || m.Counters.Permissions != 2 {
		t.Errorf("the session's member %s: %+v", member, m)
	}
}
