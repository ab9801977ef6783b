package supervisor

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/internal/testkit/dirrecords"
	"huddle/internal/testkit/teamkit"
	"huddle/protocol"
	"huddle/team"
	"huddle/teamdir"
)

func init() { testRoles["usage"] = runUsage }

// runUsage reports what its model spent in two usage lines, then two that
// are refused, then idles until stdin closes.
func runUsage() int {
	for _, l := range []string{
		`{"action":"usage","tokens_in":100,"tokens_out":20,"cost_usd":0.5}`,
		`{"action":"usage","tokens_in":50,"tokens_out":5,"cost_usd":0.25}`,
		`{"action":"usage","tokens_in":-1}`,
		`{"action":"usage"}`,
		`{"action":"status","status":"idle","activity":"reported"}`,
	} {
		fmt.Println(l)
	}
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
	}
	return 0
}

// TestExecUsageAddsToCounters: an exec teammate's usage lines add their
// tokens and cost to the member's counters; a negative or empty one is
// dead-lettered with the reason and adds nothing.
func TestExecUsageAddsToCounters(t *testing.T) {
	dir := t.TempDir()
	exe, _ := os.Executable()
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: []team.MemberSpec{
		{Name: "spender", Runtime: team.RuntimeSpec{Kind: team.RuntimeExec, Command: []string{"/usr/bin/env", teamkit.RoleEnv + "=usage", exe}}},
	}})
	startTeam(t, dir, Options{})
	testkit.WaitFor(t, 10*time.Second, "spender idle after its usage lines", func() bool {
		m, err := dirrecords.LoadMember(dir, "spender")
		return err == nil && m.Status == protocol.MemberIdle && m.Activity == "reported"
	})
	c := memberRecord(t, dir, "spender").Counters
	if c.TokensIn != 150 || c.TokensOut != 25 || c.CostUSD != 0.75 {
		t.Errorf("counters = in %d out %d cost %v; want 150, 25, 0.75", c.TokensIn, c.TokensOut, c.CostUSD)
	}
	b, _ := os.ReadFile(teamdir.DeadLetterPath(dir))
	for _, want := range []string{"usage: tokens_in, tokens_out and cost_usd cannot be negative", "usage: tokens_in, tokens_out or cost_usd is required"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("dead letters lack %q:\n%s", want, b)
		}
	}
}
