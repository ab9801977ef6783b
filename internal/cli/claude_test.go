package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"huddle/claudeteam"
	"huddle/internal/testkit/claudefix"
	"huddle/protocol"
)

func TestClaudeTeams(t *testing.T) {
	root := t.TempDir()
	r := huddle(t, "claude", "teams", "--root", root).wantOK(t)
	if !strings.Contains(r.stdout, "no Claude Code team under "+root) {
		t.Errorf("no teams: %q", r.stdout)
	}
	claudefix.Alpha(t, root)
	claudefix.Team(t, root, "beta", nil, nil)
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
	if r.code != ExitOK || !strings.Contains(r.stdout, "alpha") || !strings.Contains(r.stdout, "beta") {
		t.Errorf("with CLAUDE_CONFIG_DIR: %+v", r)
	}
}

func TestClaudeStatus(t *testing.T) {
	root := t.TempDir()
	claudefix.Alpha(t, root)
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
	claudefix.Team(t, root, "beta", nil, nil)
	huddle(t, "claude", "status", "--root", root).wantError(t, ExitFail, "2 Claude Code teams under "+root+", name one: alpha, beta")
	huddle(t, "claude", "status", "gamma", "--root", root).wantError(t, ExitFail, `no Claude Code team "gamma"`)
	huddle(t, "claude", "status", "a", "b", "--root", root).wantError(t, ExitUsage, `unexpected argument "b"`)
}

func TestClaudeRequests(t *testing.T) {
	root := t.TempDir()
	claudefix.Alpha(t, root)
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
	claudefix.Alpha(t, root)
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
	if r.code != ExitOK || !strings.Contains(r.stdout, "alice") || !strings.Contains(r.stderr, "removed this team") {
		t.Errorf("status:\n%s\n%s", r.stdout, r.stderr)
	}
}

// TestClaudeShutdownIsRefused: huddle asks no Claude Code teammate to shut
// down, since the real CLI refuses a request that did not come from its
// own lead: the command says so and writes nothing.
func TestClaudeShutdownIsRefused(t *testing.T) {
	root := t.TempDir()
	claudefix.Alpha(t, root)
	inbox := claudeteam.InboxPath(root, "alpha", "alice")
	before, _ := os.ReadFile(inbox)
	huddle(t, "claude", "shutdown", "alpha", "alice", "--root", root).wantError(t, ExitFail, `verified="false"`)
	if after, _ := os.ReadFile(inbox); string(after) != string(before) {
		t.Errorf("alice's inbox changed: %s", after)
	}
	if r := huddle(t, "claude", "--help"); strings.Contains(r.stdout+r.stderr, "shutdown TEAM") {
		t.Errorf("the help still offers shutdown:\n%s%s", r.stdout, r.stderr)
	}
	huddle(t, "claude", "frobnicate", "--root", root).wantError(t, ExitUsage, `no subcommand "frobnicate"`)
	huddle(t, "claude", "--root", root).wantError(t, ExitUsage, "a subcommand")
	huddle(t, "claude", "attach", "--root", root).wantError(t, ExitUsage, "stdout is not a terminal")
	huddle(t, "claude", "status", "--experimental-permissions", "--root", root).wantError(t, ExitUsage, "--experimental-permissions does not go with status")
}
