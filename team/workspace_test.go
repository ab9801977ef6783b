package team_test

import (
	"strings"
	"testing"

	"huddle/team"
)

// TestWorkspaceValidation: what team.json cannot use of a workspace is
// one error naming the member and the field; a member's fields override
// the team's.
func TestWorkspaceValidation(t *testing.T) {
	member := `{"name":"ana","role":"r","runtime":{"kind":"exec","command":["true"]}%s}`
	for _, tc := range []struct{ name, team, ws, member, want string }{
		{"merge mode", "crew", `{"repo":".","worktree":true,"merge":"squash"}`, "", `workspace.merge "squash": want merge, ff or rebase`},
		{"no repo", "crew", `{"worktree":true}`, "", `member "ana": workspace.repo is required`},
		{"include out of the repository", "crew", `{"repo":".","worktree":true,"include":["../secrets"]}`, "", `include[0]`},
		{"bad base", "crew", `{"repo":".","worktree":true,"base":"a..b"}`, "", `workspace.base "a..b"`},
		{"empty setup", "crew", `{"repo":".","worktree":true,"setup":[" "]}`, "", `setup[0]: an empty command`},
		{"bad max_disk", "crew", `{"repo":".","max_disk":"lots"}`, "", `workspace.max_disk`},
		{"member max_disk", "crew", `{"repo":"."}`, `,"workspace":{"max_disk":"1G"}`, `set it in the team's workspace`},
		{"team name unfit for a branch", "crew.lock", `{"repo":".","worktree":true}`, "", `cannot name a branch`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := `{"name":"` + tc.team + `","workspace":` + tc.ws + `,"members":[` + strings.Replace(member, "%s", tc.member, 1) + `]}`
			_, err := team.Parse([]byte(doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse: %v, want %q", err, tc.want)
			}
		})
	}
	tm, err := team.Parse([]byte(`{"name":"crew","workspace":{"repo":"/r","worktree":true,"merge":"ff","include":[".env"]},
"members":[{"name":"ana","role":"r","runtime":{"kind":"exec","command":["true"]},"workspace":{"merge":"rebase","base":"dev"}},
{"name":"bo","role":"r","runtime":{"kind":"exec","command":["true"]},"workspace":{"worktree":false}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	ws, ok := tm.Workspace("/team", "ana")
	if !ok || ws.Merge != "rebase" || ws.Base != "dev" || ws.Repo != "/r" || ws.Path != "/team/worktrees/crew/ana" || ws.Branch != "huddle/crew/ana" || len(ws.Include) != 1 {
		t.Fatalf("ana's workspace: %+v", ws)
	}
	if _, ok := tm.Workspace("/team", "bo"); ok {
		t.Fatal("bo turned its worktree off and still has one")
	}
	for in, want := range map[string]int64{"": 0, "512": 512, "20GiB": 20 << 30, "500MB": 500e6, "1.5G": 3 << 29} {
		if got, err := team.ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
}
