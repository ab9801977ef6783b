package supervisor

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"huddle/internal/testkit/dirrecords"
	"huddle/internal/testkit/teamkit"
	"huddle/protocol"
	"huddle/team"
	"huddle/teamdir"
)

// TestStartSweepsLeftovers: the temp files a crashed run left are gone once
// the team has started; the records and a temp file too young to be a
// leftover stay.
func TestStartSweepsLeftovers(t *testing.T) {
	dir := t.TempDir()
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: []team.MemberSpec{teamkit.Scripted("alice", "", team.Step{Wait: team.Duration(time.Hour)})}})
	plan := protocol.NewRequest(protocol.KindPlan, "pl-000000000001", "alice", protocol.Lead, time.Now(), time.Hour)
	plan.Plan = "plan of alice"
	if err := dirrecords.CreateRequest(dir, &plan); err != nil {
		t.Fatal(err)
	}
	plant := func(rel string, age time.Duration) string {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(-age)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
		return p
	}
	old := 2 * teamdir.SweepAge
	leftovers := []string{
		plant("inbox/.tmp-alice.cursor-1", old), plant("inbox/.tmp-alice.jsonl.prev-2", old), plant("inbox/.prev-3", old),
		plant("members/.tmp-alice.json-4", old), plant("requests/.tmp-pl-000000000001.json-5", old),
		plant("requests/.tmp-pl-000000000001.decision-6", old), plant("requests/.decision-7", old),
		plant(".tmp-executions.jsonl-8", old),
	}
	young := plant("requests/.tmp-pl-000000000002.json-9", 0)
	record, _ := teamdir.RequestPath(dir, "pl-000000000001")

	startTeam(t, dir, Options{})
	for _, p := range leftovers {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("leftover %s survived the start (%v)", p, err)
		}
	}
	for _, p := range []string{young, record, teamdir.ConfigPath(dir)} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}
