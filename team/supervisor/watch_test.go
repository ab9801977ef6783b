package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"huddle/internal/testkit"
	"huddle/internal/testkit/dirlead"
	"huddle/internal/testkit/dirrecords"
	"huddle/internal/testkit/files"
	"huddle/internal/testkit/teamkit"
	"huddle/protocol"
	"huddle/store"
	"huddle/team"
	"huddle/teamdir"
)

// noTick is a Tick no test lasts: what these tests wait for comes from the
// runtime's watch and its deadline timer, never from a periodic look.
const noTick = time.Hour

// startUntickedTeam starts the team in dir with noTick and returns its
// events and its Runtime; the team stops when the test ends.
func startUntickedTeam(t *testing.T, dir string) (*events, *Runtime) {
	t.Helper()
	ev := &events{}
	ctx, cancel := context.WithCancel(context.Background())
	rt, err := Start(ctx, files.Open(t, dir), dir, Options{OnEvent: ev.add, Tick: noTick})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		if err := rt.Wait(); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return ev, rt
}

// stoppedSleeper runs a team with one scripted member that idles, and
// shuts it down: it is stopped, so a restart may be asked of it.
func stoppedSleeper(t *testing.T, dir string) *events {
	t.Helper()
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: []team.MemberSpec{teamkit.Scripted("sleeper", "", team.Step{Wait: team.Duration(time.Hour)})}})
	ev, _ := startUntickedTeam(t, dir)
	if _, err := dirlead.RequestShutdown(dir, "sleeper", "for the test"); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "sleeper stopped", func() bool { return memberStatus(dir, "sleeper") == protocol.MemberStopped })
	return ev
}

// TestRestartAskedWhileRunningIsSeenByTheWatch: with no tick at all, a
// restart asked of a stopped member runs it again: the watch on restart/
// tells the runtime.
func TestRestartAskedWhileRunningIsSeenByTheWatch(t *testing.T) {
	dir := t.TempDir()
	ev := stoppedSleeper(t, dir)
	before, err := dirlead.RequestRestart(dir, "sleeper")
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "member_restarted", func() bool {
		return ev.has(func(e Event) bool { return e["event"] == "member_restarted" && e["member"] == "sleeper" })
	})
	testkit.WaitFor(t, 10*time.Second, "sleeper running again", func() bool {
		m, err := dirrecords.LoadMember(dir, "sleeper")
		return err == nil && m.RunID != before.RunID && !m.Status.IsTerminal()
	})
	p, _ := teamdir.RestartPath(dir, "sleeper")
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatalf("restart/sleeper is still there: %v", err)
	}
}

// TestRestartAskedWhileDownIsHonouredAtStart: a restart written while no
// runtime ran is honoured by the next start, which runs every member: the
// member runs, the request is gone, and nothing is dead-lettered for it.
func TestRestartAskedWhileDownIsHonouredAtStart(t *testing.T) {
	dir := t.TempDir()
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: []team.MemberSpec{teamkit.Scripted("sleeper", "", team.Step{Wait: team.Duration(time.Hour)})}})
	ctx, cancel := context.WithCancel(context.Background())
	rt, err := Start(ctx, files.Open(t, dir), dir, Options{Tick: noTick})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := rt.Wait(); err != nil {
		t.Fatal(err)
	}
	last, err := dirrecords.LoadMember(dir, "sleeper")
	if err != nil {
		t.Fatal(err)
	}
	p, _ := teamdir.RestartPath(dir, "sleeper")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(`{"at":"`+protocol.FormatTime(time.Now())+`","by":"lead"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	ev, _ := startUntickedTeam(t, dir)
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatalf("restart/sleeper is still there after the start: %v", err)
	}
	testkit.WaitFor(t, 10*time.Second, "sleeper running in the new run", func() bool {
		m, err := dirrecords.LoadMember(dir, "sleeper")
		return err == nil && m.RunID != last.RunID && m.Status == protocol.MemberIdle && m.Activity == "waiting"
	})
	if ev.has(func(e Event) bool { return e["event"] == "dead_letter" || e["event"] == "error" }) {
		t.Fatalf("the start refused or failed something: %+v", ev.es)
	}
}

// TestDeadlineExpiresWithoutATick: with no tick at all, a request written
// by another process with a short deadline expires: its creation arms the
// runtime's timer.
func TestDeadlineExpiresWithoutATick(t *testing.T) {
	teamkit.OnEachStore(t, team.Team{Name: "t", Members: []team.MemberSpec{teamkit.Scripted("alice", "", team.Step{Wait: team.Duration(time.Hour)})}}, func(t *testing.T, k *teamkit.Kept) {
		ev := start(t, k, Options{Tick: noTick})
		r := protocol.NewRequest(protocol.KindShutdown, protocol.NewRequestID(protocol.KindShutdown), protocol.Lead, "alice", time.Now(), 200*time.Millisecond)
		if err := k.St.CreateRequest(t.Context(), &r); err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, 10*time.Second, "the request expired", func() bool {
			return ev.has(func(e Event) bool {
				return e["event"] == "request_resolved" && e["id"] == r.ID && e["status"] == string(protocol.RequestExpired)
			})
		})
		if got := k.Request(r.ID); got == nil || got.Status != protocol.RequestExpired {
			t.Fatalf("record: %+v", got)
		}
	})
}

// TestDecisionFileAloneWakesTheAwaitingTeammate: with no tick at all, a
// plan decided by writing only its decision (a resolver that died before
// its line) lets the scripted teammate go on: the watch on requests/ wakes
// it; nothing polls.
func TestDecisionFileAloneWakesTheAwaitingTeammate(t *testing.T) {
	teamkit.OnEachStore(t, team.Team{Name: "t", Members: []team.MemberSpec{teamkit.Scripted("alice", "", team.Step{Plan: "the plan"}, team.Step{Wait: team.Duration(time.Hour)})}}, func(t *testing.T, k *teamkit.Kept) {
		start(t, k, Options{Tick: noTick})
		var plan *protocol.Request
		testkit.WaitFor(t, 10*time.Second, "alice's plan pending", func() bool {
			plan = k.PendingPlan("alice")
			return plan != nil && k.Status("alice") == protocol.MemberAwaitingApproval
		})
		if _, err := k.St.Decide(t.Context(), plan.ID, store.Decision{Event: protocol.EventApprove, By: protocol.Lead, At: time.Now()}); err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, 10*time.Second, "alice past her plan", func() bool {
			m := k.Member("alice")
			return m != nil && m.Status == protocol.MemberIdle && m.Activity == "waiting"
		})
	})
}

// TestRuntimeWatchesARecreatedRestartDir: restart/ removed and made again
// under a running team is watched again: a restart asked in the new one
// runs the member again.
func TestRuntimeWatchesARecreatedRestartDir(t *testing.T) {
	dir := t.TempDir()
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: []team.MemberSpec{teamkit.Scripted("sleeper", "", team.Step{Wait: team.Duration(time.Hour)})}})
	ev := startTeam(t, dir, Options{})
	if _, err := dirlead.RequestShutdown(dir, "sleeper", "for the test"); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "sleeper stopped", func() bool { return memberStatus(dir, "sleeper") == protocol.MemberStopped })
	restart := teamdir.RestartDirPath(dir)
	if err := os.RemoveAll(restart); err != nil {
		t.Fatal(err)
	}
	// The store's watch may have made it again already: either way a
	// restart/ is there, watched or about to be.
	if err := os.MkdirAll(restart, teamdir.DirMode); err != nil {
		t.Fatal(err)
	}
	if _, err := dirlead.RequestRestart(dir, "sleeper"); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "member_restarted", func() bool {
		return ev.has(func(e Event) bool { return e["event"] == "member_restarted" && e["member"] == "sleeper" })
	})
}

// TestRuntimeWatchesARecreatedRequestsDir: requests/ replaced under a
// running team by a new directory holding the same pending record (the
// two swapped in one rename, so the record never goes missing) is watched
// again: a decision file written alone in it, with no line, wakes the
// teammate awaiting that plan.
func TestRuntimeWatchesARecreatedRequestsDir(t *testing.T) {
	dir := t.TempDir()
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: []team.MemberSpec{teamkit.Scripted("alice", "", team.Step{Plan: "the plan"}, team.Step{Wait: team.Duration(time.Hour)})}})
	startTeam(t, dir, Options{})
	var plan *protocol.Request
	testkit.WaitFor(t, 10*time.Second, "alice's plan pending", func() bool {
		plan = pendingPlan(dir, "alice")
		return plan != nil && memberStatus(dir, "alice") == protocol.MemberAwaitingApproval
	})
	requests := teamdir.RequestsDirPath(dir)
	fresh := filepath.Join(dir, "requests.new")
	if err := os.Mkdir(fresh, teamdir.DirMode); err != nil {
		t.Fatal(err)
	}
	record, _ := teamdir.RequestPath(dir, plan.ID)
	b, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fresh, filepath.Base(record)), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := unix.Renameat2(unix.AT_FDCWD, fresh, unix.AT_FDCWD, requests, unix.RENAME_EXCHANGE); err != nil {
		t.Fatal(err)
	}
	if _, err := dirrecords.Resolve(dir, plan.ID, team.Resolution{Event: protocol.EventApprove, By: protocol.Lead}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "alice past her plan", func() bool {
		m, err := dirrecords.LoadMember(dir, "alice")
		return err == nil && m.Status == protocol.MemberIdle && m.Activity == "waiting"
	})
}
