package cli

import (
	"context"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/internal/testkit/natsteam"
	"huddle/protocol"
	"huddle/store"
	"huddle/team"
	"huddle/tui"
)

// restartSpec has an exec member running huddle's echo agent, a scripted
// one, and an external one.
var restartSpec = team.Team{Name: "restarts", Members: []team.MemberSpec{
	{Name: "echo", Role: "echoes", Runtime: team.RuntimeSpec{Kind: team.RuntimeExec, Command: []string{"huddle", "agent", "echo"}}},
	{Name: "idler", Role: "waits", Runtime: team.RuntimeSpec{Kind: team.RuntimeScript, Steps: []team.Step{{Wait: team.Duration(time.Hour)}}}},
	{Name: "outside", Role: "runs elsewhere", Runtime: team.RuntimeSpec{Kind: team.RuntimeExternal}},
}}

// TestRestartACrashedMember: on both kinds of store, a `huddle up`
// process runs echo (exec) and idler (scripted); echo's process is killed
// -9 (crashed), a message sent to it meanwhile, and `huddle restart`,
// another process, asks for it: the runtime runs a new process, which
// gets that message and the next. A stopped idler runs again too.
func TestRestartACrashedMember(t *testing.T) {
	onEachStore(t, teamConfig(restartSpec), func(t *testing.T, on *teamOn) {
		up := on.up(t, "lead,echo,idler")
		first := memberOn(t, on.st, "echo", "echo idle", statusIs(protocol.MemberIdle))
		if err := syscall.Kill(first.PID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		memberOn(t, on.st, "echo", "echo crashed", statusIs(protocol.MemberCrashed))
		on.must(t, "send", "echo", "while down")

		r := on.must(t, "restart", "echo")
		if !strings.HasPrefix(r.stdout, "restarted echo, which was crashed (process exited: signal: killed): now ") {
			t.Fatalf("restart echo: %q", r.stdout)
		}
		second := memberOn(t, on.st, "echo", "echo's new run", func(m *protocol.Member) bool { return m.RunID != first.RunID })
		if second.PID == first.PID || second.Status.IsTerminal() {
			t.Fatalf("after the restart: %+v (before %+v)", second, first)
		}
		testkit.WaitFor(t, 30*time.Second, "the runtime to say it restarted echo", func() bool {
			return up.saw(func(e map[string]any) bool { return e["event"] == "member_restarted" && e["member"] == "echo" })
		})
		on.leadHears(t, "echo", "echo: while down")
		testkit.WaitFor(t, 30*time.Second, "echo's answer delivered to the lead", func() bool {
			return up.saw(func(e map[string]any) bool {
				return e["event"] == "message_delivered" && e["member"] == protocol.Lead && e["from"] == "echo"
			})
		})
		on.must(t, "send", "echo", "after")
		on.leadHears(t, "echo", "echo: after")

		r = on.huddle(t, "shutdown", "idler", "--wait", "--timeout", "20s")
		if r.code != ExitOK {
			t.Fatalf("shutdown idler: %d %q %q", r.code, r.stdout, r.stderr)
		}
		memberOn(t, on.st, "idler", "idler stopped", statusIs(protocol.MemberStopped))
		if r := on.must(t, "restart", "idler"); !strings.HasPrefix(r.stdout, "restarted idler, which was stopped: now ") {
			t.Fatalf("restart idler: %q", r.stdout)
		}
		memberOn(t, on.st, "idler", "idler idle again", statusIs(protocol.MemberIdle))
	})
}

// TestRestartRefusals: on both kinds of store, with no runtime, a member
// that runs, one huddle does not run, one not in the team: one line, exit
// 1; a bad name or --timeout, exit 2. A restart asked behind the CLI's
// back of a running member is refused by the runtime as a dead letter,
// and the ask is gone. Who says that no runtime runs the team differs: a
// directory's runtime.lock, for every member, or no runtime holding the
// member's lease in a store.
func TestRestartRefusals(t *testing.T) {
	onEachStore(t, teamConfig(restartSpec), func(t *testing.T, on *teamOn) {
		notRunning := func(member string) string {
			if on.kind == "nats" {
				return "no runtime runs the team restarts: no runtime holds the lease of " + member + " ('huddle up --store' starts it)"
			}
			return "no runtime runs the team restarts ('huddle up' starts every member)"
		}
		on.huddle(t, "restart", "echo").wantError(t, ExitFail, notRunning("echo"), "restart without a runtime")
		up := on.up(t, "lead,echo,idler")
		memberOn(t, on.st, "echo", "echo idle", statusIs(protocol.MemberIdle))
		memberOn(t, on.st, "idler", "idler idle", statusIs(protocol.MemberIdle))
		on.huddle(t, "restart", "echo").wantError(t, ExitFail, "echo is idle; only a stopped or crashed member is restarted", "restart a running member")
		on.huddle(t, "restart", "outside").wantError(t, ExitFail, `outside is not run by huddle (runtime "external")`, "restart an external member")
		on.huddle(t, "restart", "nobody").wantError(t, ExitFail, `no member "nobody" in team restarts`, "restart nobody")
		on.huddle(t, "restart", "../x").wantError(t, ExitUsage, "invalid name", "restart ../x")
		on.huddle(t, "restart", "echo", "--timeout", "0s").wantError(t, ExitUsage, "--timeout must be more than 0", "restart --timeout 0s")

		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := on.st.AskRestart(ctx, "idler", protocol.Lead); err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, 30*time.Second, "the runtime to refuse restarting a running member", func() bool {
			return up.saw(func(e map[string]any) bool {
				return e["event"] == "dead_letter" && e["member"] == "idler" && strings.Contains(e["reason"].(string), "only a stopped or crashed member")
			})
		})
		letters := decodeDeadLetters(t, on.must(t, "deadletters", "--json", "--member", "idler").stdout)
		if len(letters) != 1 || letters[0].Source != "restart/idler" || letters[0].By != protocol.Lead {
			t.Fatalf("dead letters of idler: %+v", letters)
		}
		// On a directory the ask is restart/idler, which is gone.
		if ask, err := on.st.TakeRestart(ctx, "idler"); err != nil || ask != nil {
			t.Fatalf("the ask the runtime refused is still there: %q %v", ask, err)
		}

		// The runtime stops: none runs the team, and no one would take an ask.
		if err := up.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := <-up.exited; err != nil {
			t.Fatalf("huddle up: %v", err)
		}
		on.huddle(t, "restart", "idler").wantError(t, ExitFail, notRunning("idler"), "restart after the runtime stopped")
	})
}

// TestRestartOnNATSWaitsForTheLeaseHolder: on NATS a restart is asked of
// the runtime that holds the member's lease, which may be another
// machine's: ghost's lease is held by one that never looks (this test),
// so the ask waits until --timeout, and a second one is refused while the
// first waits. A team directory has no leases: its one runtime runs every
// member, under runtime.lock.
func TestRestartOnNATSWaitsForTheLeaseHolder(t *testing.T) {
	url := natsteam.New(t, "")
	st := putRestartTeam(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := st.AcquireLease(ctx, "ghost", "test", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := st.PutMember(ctx, &protocol.Member{Name: "ghost", Status: protocol.MemberCrashed, RunID: "r1", Error: "gone"}); err != nil {
		t.Fatal(err)
	}
	huddle(t, "restart", "ghost", "--timeout", "1s", "--store", url).wantError(t, ExitFail, "asked the runtime to restart ghost; not restarted after 1s (is the runtime stuck?", "restart ghost, not taken")
	huddle(t, "restart", "ghost", "--store", url).wantError(t, ExitFail, "a restart of ghost is asked already, and the runtime that runs it has not taken it yet", "restart ghost again")
	huddle(t, "restart", "echo", "--store", url, "--dir", t.TempDir()).wantError(t, ExitUsage, "--dir and --store", "restart --dir --store")
}

// putRestartTeam puts restartSpec's members, and ghost, a scripted member
// no runtime of the test runs, in the store at url.
func putRestartTeam(t *testing.T, url string) store.Store {
	t.Helper()
	st := natsteam.Open(t, url)
	tm := restartSpec
	tm.Members = append(slices.Clone(tm.Members), team.MemberSpec{Name: "ghost", Role: "waits", Runtime: team.RuntimeSpec{Kind: team.RuntimeScript, Steps: []team.Step{{Wait: team.Duration(time.Hour)}}}})
	natsteam.PutConfigs(t, st, teamConfig(tm))
	return st
}

// TestUIRestartOnNATS: the UI's R on a store (storeLead's Restart) asks
// the holder of the member's lease, through the store, as huddle restart
// --store does: a crashed member's ask is there for the holder to take,
// a running member's is refused in one line. Leases are a store's alone,
// as in TestRestartOnNATSWaitsForTheLeaseHolder.
func TestUIRestartOnNATS(t *testing.T) {
	url := natsteam.New(t, "")
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
