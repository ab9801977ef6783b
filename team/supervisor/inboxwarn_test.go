package supervisor

import (
	"os"
	"strings"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/internal/testkit/teamkit"
	"huddle/protocol"
	"huddle/team"
	"huddle/teamdir"
)

// TestDamagedCursorJournalIsAnEvent: the runtime turns the warning of a
// consumer whose cursor journal is garbage into a "warning" event.
func TestDamagedCursorJournalIsAnEvent(t *testing.T) {
	dir := t.TempDir()
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: []team.MemberSpec{teamkit.Scripted("alice", "", team.Step{Wait: team.Duration(time.Hour)})}})
	p, err := teamdir.CursorPath(dir, protocol.Lead)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(teamdir.CursorsDirPath(dir), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("garbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ev := startTeam(t, dir, Options{})
	testkit.WaitFor(t, 10*time.Second, "a warning event about the lead's cursor journal", func() bool {
		return ev.has(func(e Event) bool {
			w, _ := e["warning"].(string)
			return e["event"] == "warning" && e["member"] == protocol.Lead && strings.Contains(w, "cursor journal")
		})
	})
}
