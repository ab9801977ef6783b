package cli

import (
	"context"
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/protocol"
	"huddle/store"
	"huddle/team"
	"huddle/tui"
)

// putRestartTeam puts restartTeam's members, and ghost, a scripted member
// no runtime of the test runs, in the store at url.
func putRestartTeam(t *testing.T, url string) store.Store {
	t.Helper()
	st := openTeamStore(t, url, false)
	b, _ := json.Marshal(team.Team{Name: "restarts", Members: []team.MemberSpec{
		{Name: "echo", Role: "echoes", Runtime: team.RuntimeSpec{Kind: team.RuntimeExec, Command: []string{"huddle", "agent", "echo"}}},
		{Name: "idler", Role: "waits", Runtime: team.RuntimeSpec{Kind: team.RuntimeScript, Steps: []team.Step{{Wait: team.Duration(time.Hour)}}}},
		{Name: "ghost", Role: "waits", Runtime: team.RuntimeSpec{Kind: team.RuntimeScript, Steps: []team.Step{{Wait: team.Duration(time.Hour)}}}},
		{Name: "outside", Role: "runs elsewhere", Runtime: team.RuntimeSpec{Kind: team.RuntimeExternal}},
	}})
	putConfigs(t, st, map[string]string{store.ConfigTeam: string(b)})
	return st
}

// memberOn waits until member's record in st satisfies ok and returns it.
func memberOn(t *testing.T, st store.Store, member, what string, ok func(*protocol.Member) bool) *protocol.Member {
	t.Helper()
	var m *protocol.Member
	testkit.WaitFor(t, 30*time.Second, what, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ms, err := st.Member(ctx, member, team.LostAfter)
		if err == nil && ok(&ms.Member) {
			m = &ms.Member
		}
		return m != nil
	})
	return m
}

func statusIs(s protocol.MemberStatus) func(*protocol.Member) bool {
	return func(m *protocol.Member) bool { return m.Status == s }
}

// TestRestartOnNATSACrashedMember: a `huddle up --store` process runs
// echo (exec) and idler (scripted); echo's process is killed -9, a message
// sent to it meanwhile, and `huddle restart --store`, another process,
// asks for it: the runtime holding echo's lease runs a new process, which
// gets the message. A stopped idler runs again too.
func TestRestartOnNATSACrashedMember(t *testing.T) {
	url := natsTeam(t)
	st := putRestartTeam(t, url)
	up := startUpOnWhenFree(t, url, "lead,echo,idler")
	first := memberOn(t, st, "echo", "echo idle", statusIs(protocol.MemberIdle))
	if err := syscall.Kill(first.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	memberOn(t, st, "echo", "echo crashed", statusIs(protocol.MemberCrashed))
	mustHuddle(t, "send", "echo", "while down", "--store", url)

	r := mustHuddle(t, "restart", "echo", "--store", url)
	if !strings.HasPrefix(r.stdout, "restarted echo, which was crashed (process exited: signal: killed): now ") {
		t.Fatalf("restart echo: %q", r.stdout)
	}
	second := memberOn(t, st, "echo", "echo's new run", func(m *protocol.Member) bool { return m.RunID != first.RunID })
	if second.PID == first.PID || second.Status.IsTerminal() {
		t.Fatalf("after the restart: %+v (before %+v)", second, first)
	}
	testkit.WaitFor(t, 30*time.Second, "the runtime to say it restarted echo", func() bool {
		return up.saw(func(e map[string]any) bool { return e["event"] == "member_restarted" && e["member"] == "echo" })
	})
	testkit.WaitFor(t, 30*time.Second, "echo's answer to the message sent while it was down", func() bool {
		return up.saw(func(e map[string]any) bool {
			return e["event"] == "message_delivered" && e["member"] == protocol.Lead && e["from"] == "echo"
		})
	})

	r = huddle(t, "shutdown", "idler", "--wait", "--timeout", "20s", "--store", url)
	if r.code != exitOK {
		t.Fatalf("shutdown idler: %d %q %q", r.code, r.stdout, r.stderr)
	}
	memberOn(t, st, "idler", "idler stopped", statusIs(protocol.MemberStopped))
	if r := mustHuddle(t, "restart", "idler", "--store", url); !strings.HasPrefix(r.stdout, "restarted idler, which was stopped: now ") {
		t.Fatalf("restart idler: %q", r.stdout)
	}
	memberOn(t, st, "idler", "idler idle again", statusIs(protocol.MemberIdle))
}

// TestRestartOnNATSRefusals: no runtime, a member that runs, one huddle
// does not run, one not in the team: one line, exit 1; a bad name, exit
// 2. An ask no runtime takes times out, and a second one while it waits
// is refused. A restart asked behind the CLI's back of a running member
// is refused by the runtime as a dead letter, and the ask is gone.
func TestRestartOnNATSRefusals(t *testing.T) {
	url := natsTeam(t)
	st := putRestartTeam(t, url)
	huddle(t, "restart", "echo", "--store", url).wantError(t, exitFail, "no runtime runs the team restarts: no runtime holds the lease of echo ('huddle up --store' starts it)", "restart without a runtime")
	up := startUpOnWhenFree(t, url, "lead,echo,idler")
	memberOn(t, st, "echo", "echo idle", statusIs(protocol.MemberIdle))
	memberOn(t, st, "idler", "idler idle", statusIs(protocol.MemberIdle))
	huddle(t, "restart", "echo", "--store", url).wantError(t, exitFail, "echo is idle; only a stopped or crashed member is restarted", "restart a running member")
	huddle(t, "restart", "outside", "--store", url).wantError(t, exitFail, `outside is not run by huddle (runtime "external")`, "restart an external member")
	huddle(t, "restart", "nobody", "--store", url).wantError(t, exitFail, `no member "nobody" in team restarts`, "restart nobody")
	huddle(t, "restart", "../x", "--store", url).wantError(t, exitUsage, "invalid name", "restart ../x")
	huddle(t, "restart", "echo", "--store", url, "--dir", t.TempDir()).wantError(t, exitUsage, "--dir and --store", "restart --dir --store")

	// ghost's lease is held by a runtime that never looks (this test): the
	// ask waits, and a second one is refused while it does.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := st.AcquireLease(ctx, "ghost", "test", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := st.PutMember(ctx, &protocol.Member{Name: "ghost", Status: protocol.MemberCrashed, RunID: "r1", Error: "gone"}); err != nil {
		t.Fatal(err)
	}
	huddle(t, "restart", "ghost", "--timeout", "1s", "--store", url).wantError(t, exitFail, "asked the runtime to restart ghost; not restarted after 1s (is the runtime stuck?", "restart ghost, not taken")
	huddle(t, "restart", "ghost", "--store", url).wantError(t, exitFail, "a restart of ghost is asked already, and the runtime that runs it has not taken it yet", "restart ghost again")

	if err := st.AskRestart(ctx, "idler", protocol.Lead); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 30*time.Second, "the runtime to refuse restarting a running member", func() bool {
		return up.saw(func(e map[string]any) bool {
			return e["event"] == "dead_letter" && e["member"] == "idler" && strings.Contains(e["reason"].(string), "only a stopped or crashed member")
		})
	})
	letters := decodeDeadLetters(t, mustHuddle(t, "deadletters", "--json", "--member", "idler", "--store", url).stdout)
	if len(letters) != 1 || letters[0].Source != "restart/idler" || letters[0].By != protocol.Lead {
		t.Fatalf("dead letters of idler: %+v", letters)
	}
	if ask, err := st.TakeRestart(ctx, "idler"); err != nil || ask != nil {
		t.Fatalf("the ask the runtime refused is still there: %q %v", ask, err)
	}

	// The runtime stops: its leases go, and no one would take an ask.
	if err := up.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-up.exited; err != nil {
		t.Fatalf("huddle up: %v", err)
	}
	huddle(t, "restart", "idler", "--store", url).wantError(t, exitFail, "no runtime runs the team restarts: no runtime holds the lease of idler", "restart after the runtime stopped")
}

// TestUIRestartOnNATS: the UI's R on a store (storeLead's Restart) asks
// the holder of the member's lease, through the store, as huddle restart
// --store does: a crashed member's ask is there for the holder to take,
// a running member's is refused in one line.
func TestUIRestartOnNATS(t *testing.T) {
	url := natsTeam(t)
	st := putRestartTeam(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	restart := tui.LeadActions(tui.StoreLead(ctx, st)).(tui.Restarter).Restart
	if _, err := restart("ghost"); err == nil || !strings.Contains(err.Error(), "no runtime holds the lease of ghost") {
		t.Fatalf("R with no runtime: %v", err)
	}
	if _, err := st.AcquireLease(ctx, "ghost", "test", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := st.PutMember(ctx, &protocol.Member{Name: "ghost", Status: protocol.MemberIdle, RunID: "r1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := restart("ghost"); err == nil || err.Error() != "ghost is idle; only a stopped or crashed member is restarted" {
		t.Fatalf("R on a running member: %v", err)
	}
	if err := st.PutMember(ctx, &protocol.Member{Name: "ghost", Status: protocol.MemberCrashed, RunID: "r1"}); err != nil {
		t.Fatal(err)
	}
	said, err := restart("ghost")
	if err != nil || said != "asked the runtime to run ghost again" {
		t.Fatalf("R on a crashed member: %q %v", said, err)
	}
	if ask, err := st.TakeRestart(ctx, "ghost"); err != nil || ask == nil {
		t.Fatalf("the ask of R is not in the store: %q %v", ask, err)
	}
}
