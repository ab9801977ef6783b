package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"huddle/claudeteam"
	"huddle/internal/testkit"
	"huddle/protocol"
	"huddle/tui"
)

// claudeFixture writes a Claude Code team under root the way Claude Code
// lays it out: config.json with members, inboxes as JSON arrays.
func claudeFixture(t *testing.T, root, name string, members []string, inboxes map[string][]claudeteam.Entry) {
	t.Helper()
	dir := filepath.Join(root, "teams", name)
	if err := os.MkdirAll(filepath.Join(dir, "inboxes"), 0o700); err != nil {
		t.Fatal(err)
	}
	var ms []map[string]any
	for _, m := range append([]string{claudeteam.LeadName}, members...) {
		ms = append(ms, map[string]any{"agentId": m + "@" + name, "name": m, "agentType": "general-purpose", "model": "claude-sonnet-4-6"})
	}
	b, _ := json.MarshalIndent(map[string]any{"name": name, "leadAgentId": "team-lead@" + name, "members": ms}, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	for member, es := range inboxes {
		b, _ := json.MarshalIndent(es, "", "  ")
		if err := os.WriteFile(filepath.Join(dir, "inboxes", member+".json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func claudeText(fields map[string]any) string {
	b, _ := json.Marshal(fields)
	return string(b)
}

// alphaTeam: alice idle with a pending plan, bob asked a permission that
// the lead allowed.
func alphaTeam(t *testing.T, root string) {
	t.Helper()
	at := claudeteam.Stamp(time.Now().Add(-time.Minute))
	claudeFixture(t, root, "alpha", []string{"alice", "bob"}, map[string][]claudeteam.Entry{
		claudeteam.LeadName: {
			{From: "alice", Text: claudeText(map[string]any{"type": "idle_notification", "from": "alice", "idleReason": "available"}), Timestamp: at},
			{From: "alice", Text: claudeText(map[string]any{"type": "plan_approval_request", "requestId": "plan-1@alice", "from": "alice", "planContent": "refactor the parser", "planFilePath": "/p.md"}), Timestamp: at},
			{From: "bob", Text: claudeText(map[string]any{"type": "permission_request", "request_id": "perm-1", "agent_id": "bob", "tool_name": "Bash", "description": "run tests", "input": map[string]any{"command": "go test"}}), Timestamp: at},
		},
		"bob": {
			{From: claudeteam.LeadName, Text: claudeText(map[string]any{"type": "permission_response", "request_id": "perm-1", "subtype": "success", "response": map[string]any{}}), Timestamp: at, Read: true},
		},
	})
}

func TestClaudeTeams(t *testing.T) {
	root := t.TempDir()
	r := huddle(t, "claude", "teams", "--root", root).wantOK(t)
	if !strings.Contains(r.stdout, "no Claude Code team under "+root) {
		t.Errorf("no teams: %q", r.stdout)
	}
	alphaTeam(t, root)
	claudeFixture(t, root, "beta", nil, nil)
	r = huddle(t, "claude", "teams", "--root", root, "--json").wantOK(t)
	var rows []struct {
		Name    string `json:"name"`
		Members int    `json:"members"`
		Pending int    `json:"pending"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if len(rows) != 2 || rows[0].Name != "alpha" || rows[0].Members != 3 || rows[0].Pending != 1 || rows[1].Name != "beta" {
		t.Errorf("teams %+v", rows)
	}
	// $CLAUDE_CONFIG_DIR is the root without --root.
	r = huddleIn(t, t.TempDir(), []string{"CLAUDE_CONFIG_DIR=" + root}, "claude", "teams")
	if r.code != exitOK || !strings.Contains(r.stdout, "alpha") || !strings.Contains(r.stdout, "beta") {
		t.Errorf("with CLAUDE_CONFIG_DIR: %+v", r)
	}
}

func TestClaudeStatus(t *testing.T) {
	root := t.TempDir()
	alphaTeam(t, root)
	r := huddle(t, "claude", "status", "--root", root, "--json").wantOK(t)
	var out struct {
		Team    string `json:"team"`
		Pending int    `json:"pending"`
		Members []struct {
			Name, Status, Activity string
			Unread                 int
		} `json:"members"`
		Tasks []any `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if out.Team != "alpha" || out.Pending != 1 || len(out.Members) != 3 || out.Tasks == nil {
		t.Fatalf("status %+v", out)
	}
	want := map[string]string{claudeteam.LeadName: "working", "alice": "working", "bob": "working"}
	for _, m := range out.Members {
		if m.Status != want[m.Name] {
			t.Errorf("%s: %s (%s), want %s", m.Name, m.Status, m.Activity, want[m.Name])
		}
	}
	if out.Members[0].Unread != 3 {
		t.Errorf("team-lead unread %d, want 3", out.Members[0].Unread)
	}
	r = huddle(t, "claude", "status", "alpha", "--root", root).wantOK(t)
	if !strings.Contains(r.stdout, "claude team alpha (1 pending)") || !strings.Contains(r.stdout, "alice") {
		t.Errorf("status:\n%s", r.stdout)
	}
	claudeFixture(t, root, "beta", nil, nil)
	huddle(t, "claude", "status", "--root", root).wantError(t, exitFail, "2 Claude Code teams under "+root+", name one: alpha, beta")
	huddle(t, "claude", "status", "gamma", "--root", root).wantError(t, exitFail, `no Claude Code team "gamma"`)
	huddle(t, "claude", "status", "a", "b", "--root", root).wantError(t, exitUsage, `unexpected argument "b"`)
}

func TestClaudeRequests(t *testing.T) {
	root := t.TempDir()
	alphaTeam(t, root)
	r := huddle(t, "claude", "requests", "--root", root).wantOK(t)
	if !strings.Contains(r.stdout, "plan-1@alice") || strings.Contains(r.stdout, "perm-1") {
		t.Errorf("pending:\n%s", r.stdout)
	}
	r = huddle(t, "claude", "requests", "--root", root, "--all", "--json").wantOK(t)
	var reqs []protocol.Request
	if err := json.Unmarshal([]byte(r.stdout), &reqs); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if len(reqs) != 2 || reqs[0].ID != "plan-1@alice" || reqs[0].Status != protocol.RequestPending || reqs[0].Plan != "refactor the parser" ||
		reqs[1].ID != "perm-1" || reqs[1].Kind != protocol.KindPermission || reqs[1].Status != protocol.RequestAllowed || len(reqs[1].History) != 2 {
		t.Errorf("requests %+v", reqs)
	}
	r = huddle(t, "claude", "requests", "--root", root, "--json").wantOK(t)
	if err := json.Unmarshal([]byte(r.stdout), &reqs); err != nil || len(reqs) != 1 {
		t.Errorf("pending json: %v %s", err, r.stdout)
	}
}

// TestClaudeRequestsAfterTheTeamIsGone: what `huddle claude requests` saw
// is in huddle's journal, so after Claude Code deleted the delivered plan
// and removed the team, `requests --all` still shows the plan with its
// content, `teams` lists the team as removed and `status` its roster.
func TestClaudeRequestsAfterTheTeamIsGone(t *testing.T) {
	root := t.TempDir()
	alphaTeam(t, root)
	huddle(t, "claude", "requests", "--root", root).wantOK(t)
	if err := os.RemoveAll(filepath.Join(root, "teams", "alpha")); err != nil {
		t.Fatal(err)
	}
	r := huddle(t, "claude", "requests", "alpha", "--root", root, "--all", "--json").wantOK(t)
	var reqs []protocol.Request
	if err := json.Unmarshal([]byte(r.stdout), &reqs); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if len(reqs) != 2 || reqs[0].ID != "plan-1@alice" || reqs[0].Plan != "refactor the parser" {
		t.Errorf("requests after the team went: %+v", reqs)
	}
	r = huddle(t, "claude", "teams", "--root", root).wantOK(t)
	if !strings.Contains(r.stdout, "alpha") || !strings.Contains(r.stdout, "removed by Claude Code") {
		t.Errorf("teams:\n%s", r.stdout)
	}
	r = huddle(t, "claude", "status", "alpha", "--root", root)
	if r.code != exitOK || !strings.Contains(r.stdout, "alice") || !strings.Contains(r.stderr, "removed this team") {
		t.Errorf("status:\n%s\n%s", r.stdout, r.stderr)
	}
}

// TestClaudeShutdownIsRefused: huddle asks no Claude Code teammate to shut
// down, since the real CLI refuses a request that did not come from its
// own lead: the command says so and writes nothing.
func TestClaudeShutdownIsRefused(t *testing.T) {
	root := t.TempDir()
	alphaTeam(t, root)
	inbox := claudeteam.InboxPath(root, "alpha", "alice")
	before, _ := os.ReadFile(inbox)
	huddle(t, "claude", "shutdown", "alpha", "alice", "--root", root).wantError(t, exitFail, `verified="false"`)
	if after, _ := os.ReadFile(inbox); string(after) != string(before) {
		t.Errorf("alice's inbox changed: %s", after)
	}
	if r := huddle(t, "claude", "--help"); strings.Contains(r.stdout+r.stderr, "shutdown TEAM") {
		t.Errorf("the help still offers shutdown:\n%s%s", r.stdout, r.stderr)
	}
	huddle(t, "claude", "frobnicate", "--root", root).wantError(t, exitUsage, `no subcommand "frobnicate"`)
	huddle(t, "claude", "--root", root).wantError(t, exitUsage, "a subcommand")
	huddle(t, "claude", "attach", "--root", root).wantError(t, exitUsage, "stdout is not a terminal")
	huddle(t, "claude", "status", "--experimental-permissions", "--root", root).wantError(t, exitUsage, "--experimental-permissions does not go with status")
}

// The UI on a Claude Code team, wired as `huddle claude attach` wires it:
// its roster and its pending plan show, a on the plan says why huddle does
// not answer it, s asks a member to shut down, and with the flag a and r
// answer a permission request.
func TestClaudeAttachShowsRosterAndPlan(t *testing.T) {
	root := t.TempDir()
	alphaTeam(t, root)
	at := claudeteam.Stamp(time.Now())
	lead := claudeteam.InboxPath(root, "alpha", claudeteam.LeadName)
	b, _ := os.ReadFile(lead)
	var es []claudeteam.Entry
	_ = json.Unmarshal(b, &es)
	es = append(es, claudeteam.Entry{From: "alice", Text: claudeText(map[string]any{"type": "permission_request", "request_id": "perm-2", "agent_id": "alice", "tool_name": "Edit", "description": "edit main.go"}), Timestamp: at})
	b, _ = json.MarshalIndent(es, "", "  ")
	if err := os.WriteFile(lead, b, 0o600); err != nil {
		t.Fatal(err)
	}

	opts := claudeRunOptions(root, "alpha", "", true)
	st := tui.NewStyles(false, true)
	drawn := &lastDrawn{Model: tui.New(tui.Options{Dir: root, Styles: &st, Footer: opts.Footer, Actions: opts.Actions, NoFeed: opts.NoFeed})}
	tm := teatest.NewTestModel(t, drawn, teatest.WithInitialTermSize(140, 40))
	stop, err := opts.Connect(t.Context(), tm.Send)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		tm.Quit()
		if err := stop(); err != nil {
			t.Error(err)
		}
	})
	// screen waits until the program has drawn every text; what it reads
	// is consumed, so each wait names all it needs of one stretch.
	screen := func(texts ...string) {
		t.Helper()
		teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
			for _, text := range texts {
				if !bytes.Contains(b, []byte(text)) {
					return false
				}
			}
			return true
		}, teatest.WithDuration(15*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
	}
	key := func(s string) { tm.Send(tea.KeyPressMsg{Code: []rune(s)[0], Text: s}) }
	screen("claude code team alpha", "alice", "bob", "plan-1@alice", "perm-2", "no deadline")

	key("2")
	for range 4 {
		key("k") // to the oldest pending request, the plan; a moved cursor has no grace
	}
	key("a")
	screen("✗ " + planRefusal) // whole, on one line

	key("j") // perm-2, alice's pending permission request
	// r acts once the footer offers it: past the grace of a request that
	// just arrived.
	testkit.WaitFor(t, 15*time.Second, "the footer offering perm-2", func() bool { return strings.Contains(drawn.screen(), "a allow alice once") })
	key("r")
	screen("why alice may not")
	for _, r := range "not in main" {
		key(string(r))
	}
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	screen("denied") // "denied perm-2 for alice (as huddle:…)"
	testkit.WaitFor(t, 15*time.Second, "the denial in alice's inbox", func() bool {
		b, _ := os.ReadFile(claudeteam.InboxPath(root, "alpha", "alice"))
		return bytes.Contains(b, []byte(`\"request_id\":\"perm-2\"`)) && bytes.Contains(b, []byte("not in main")) && bytes.Contains(b, []byte(`answeredBy`))
	})

	key("1")
	key("j") // alice, after team-lead
	// s, m and b are not offered, and say why at once: Claude Code would
	// not act on what they wrote, and nothing is written.
	testkit.WaitFor(t, 15*time.Second, "alice's row acted on", func() bool { return strings.Contains(drawn.screen(), "next member") })
	if s := drawn.screen(); strings.Contains(s, "s shut down") || strings.Contains(s, "m message") || strings.Contains(s, "b broadcast") {
		t.Errorf("the footer offers what a Claude Code team refuses:\n%s", s)
	}
	key("s")
	testkit.WaitFor(t, 15*time.Second, "the shutdown refused on screen", func() bool {
		return strings.Contains(drawn.screen(), "✗ "+shutdownRefusal)
	})
	key("m")
	testkit.WaitFor(t, 15*time.Second, "the message refused on screen", func() bool {
		return strings.Contains(drawn.screen(), "✗ "+sendRefusal)
	})
	if b, _ := os.ReadFile(claudeteam.InboxPath(root, "alpha", "alice")); bytes.Contains(b, []byte("shutdown_request")) {
		t.Errorf("a shutdown_request reached alice's inbox: %s", b)
	}
}

// lastDrawn is a program's model that keeps the screen it last drew: the
// renderer's output carries only the cells that changed.
type lastDrawn struct {
	tea.Model
	mu   sync.Mutex
	last string
}

func (d *lastDrawn) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	m, cmd := d.Model.Update(msg)
	d.Model = m
	return d, cmd
}

func (d *lastDrawn) View() tea.View {
	v := d.Model.View()
	d.mu.Lock()
	d.last = v.Content
	d.mu.Unlock()
	return v
}

func (d *lastDrawn) screen() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return ansi.Strip(d.last)
}

// Without --experimental-permissions, a and r refuse a permission request.
func TestClaudeActionsWithoutPermissions(t *testing.T) {
	root := t.TempDir()
	alphaTeam(t, root)
	a := claudeRunOptions(root, "alpha", "", false).Actions.(claudeActions)
	plan := &protocol.Request{ID: "plan-1@alice", Kind: protocol.KindPlan}
	perm := &protocol.Request{ID: "perm-9", Kind: protocol.KindPermission}
	if why := a.Refuses(plan); why != planRefusal || len(why) > 76 {
		t.Errorf("plan: %q", why)
	}
	if why := a.Refuses(perm); !strings.Contains(why, "--experimental-permissions") {
		t.Errorf("permission: %q", why)
	}
	if _, err := a.Approve("perm-9"); err == nil {
		t.Error("approved without the flag")
	}
	if _, err := a.Send("alice", "hi"); err == nil {
		t.Error("sent a message to a Claude Code team")
	}
	if b, _ := os.ReadFile(claudeteam.InboxPath(root, "alpha", "alice")); b != nil {
		t.Errorf("alice's inbox written: %s", b)
	}
}

// `huddle claude attach` through tui.Run itself: the observer's first fold
// is handed to a program that is not running yet, without a deadlock.
func TestClaudeAttachRunsTheUI(t *testing.T) {
	root := t.TempDir()
	alphaTeam(t, root)
	in, inW := io.Pipe()
	defer inW.Close()
	var out lockedBuffer
	ctx, cancel := context.WithCancel(t.Context())
	opts := claudeRunOptions(root, "alpha", "", false)
	opts.Input, opts.Output = in, &out
	done := make(chan error, 1)
	go func() { done <- tui.Run(ctx, opts) }()
	// Without a terminal the program learns no size and draws no panes;
	// the window title says the first fold reached it.
	testkit.WaitFor(t, 15*time.Second, "the team's snapshot in the program", func() bool {
		return strings.Contains(out.String(), "huddle (1 pending)")
	})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("tui.Run: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("tui.Run did not return after its context ended")
	}
}

// lockedBuffer is an io.Writer the test reads while the program writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
