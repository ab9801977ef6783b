package supervisor

import (
	"fmt"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/internal/testkit/teamkit"
	"huddle/protocol"
	"huddle/team"
)

// TestStatusHistoryHasEveryMove: a replay reads a member's moves from its
// history alone, so the moves made outside setStatusIf are there too: a
// started member's first status, an external member's first record and
// the statuses it reports (a new activity alone is no move).
func TestStatusHistoryHasEveryMove(t *testing.T) {
	dir := t.TempDir()
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: []team.MemberSpec{
		teamkit.Scripted("alice", team.OnShutdownApprove, team.Step{Wait: team.Duration(time.Hour)}),
		{Name: "ext", Role: "crawler", Runtime: team.RuntimeSpec{Kind: team.RuntimeExternal}},
	}})
	startTeam(t, dir, Options{})
	statuses := func(name string) []protocol.MemberStatus {
		h, err := team.ReadStatusHistory(dir, name, 0)
		if err != nil {
			t.Fatal(err)
		}
		var out []protocol.MemberStatus
		for _, c := range h {
			out = append(out, c.Status)
		}
		return out
	}
	testkit.WaitFor(t, 5*time.Second, "alice's first moves", func() bool { return len(statuses("alice")) >= 2 })
	if got := statuses("alice"); got[0] != protocol.MemberStarting {
		t.Fatalf("alice's history starts with %v, want starting", got)
	}
	if got := statuses("ext"); len(got) != 1 || got[0] != protocol.MemberIdle {
		t.Fatalf("ext's history %v, want its first record: idle", got)
	}
	report := func(status protocol.MemberStatus, activity string) {
		appendLine(t, dir, protocol.Lead, fmt.Sprintf(`{"type":"status","from":"ext","to":"lead","status":%q,"content":%q,"ts":%q}`+"\n",
			status, activity, time.Now().UTC().Format(time.RFC3339Nano)))
	}
	report(protocol.MemberWorking, "crawling")
	testkit.WaitFor(t, 5*time.Second, "ext's reported move", func() bool { return len(statuses("ext")) == 2 })
	report(protocol.MemberWorking, "crawling page 2") // the same status: no move
	report(protocol.MemberIdle, "done")
	testkit.WaitFor(t, 5*time.Second, "ext idle again", func() bool { return len(statuses("ext")) >= 3 })
	want := []protocol.MemberStatus{protocol.MemberIdle, protocol.MemberWorking, protocol.MemberIdle}
	if got := statuses("ext"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ext's history %v, want %v", got, want)
	}
}
