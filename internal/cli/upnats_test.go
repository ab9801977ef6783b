package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/internal/testkit/natsteam"
	"huddle/protocol"
	"huddle/store"
	"huddle/store/storetest"
	"huddle/team"
)

// upOn is a `huddle up --headless` process, its events and its exit.
type upOn struct {
	*upProcess
	exited chan error
}

// startUpOn starts huddle up on the store at url running members, with a
// local directory of its own.
func startUpOn(t *testing.T, url, members string) *upOn {
	t.Helper()
	return startUpWith(t, "up", "--headless", "--store", url, "--members", members, "--dir", t.TempDir())
}

// startUpWith starts huddle with args, a `huddle up --headless`: every
// line it prints is an event, in JSON.
func startUpWith(t *testing.T, args ...string) *upOn {
	t.Helper()
	return startUpWithIn(t, "", args...)
}

// startUpWithIn is startUpWith in the working directory cwd ("": the test's).
func startUpWithIn(t *testing.T, cwd string, args ...string) *upOn {
	t.Helper()
	cmd := exec.Command(huddleBinary(t), args...)
	cmd.Dir = cwd
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &upOn{upProcess: &upProcess{cmd: cmd, done: make(chan struct{})}, exited: make(chan error, 1)}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var e map[string]any
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Errorf("event line is not JSON: %q", sc.Text())
				continue
			}
			p.mu.Lock()
			p.events = append(p.events, e)
			p.mu.Unlock()
		}
	}()
	go func() {
		<-p.done
		err := cmd.Wait()
		if err != nil {
			err = fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
		}
		p.exited <- err
	}()
	t.Cleanup(func() { cmd.Process.Kill(); <-p.done })
	return p
}

// started waits until p has started the team (true) or exited (false,
// with why).
func (p *upOn) started(t *testing.T) (bool, error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if p.saw(func(e map[string]any) bool { return e["event"] == "team_started" }) {
			return true, nil
		}
		select {
		case err := <-p.exited:
			return false, err
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatal("huddle up neither started nor exited within 30s")
	return false, nil
}

// startUpOnWhenFree starts huddle up for members until it starts: again
// while its first connection times out (a test machine loaded by parallel
// -race runs answers a connect slower than the client's 2 s), or a member
// runs elsewhere. (It waits on its own for the leases of a killed one.)
func startUpOnWhenFree(t *testing.T, url, members string) *upOn {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	for {
		p := startUpOn(t, url, members)
		ok, err := p.started(t)
		if ok {
			return p
		}
		if err == nil || !strings.Contains(err.Error(), " runs elsewhere (holder ") && !strings.Contains(err.Error(), ": connect: ") {
			t.Fatalf("huddle up: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the killed runtime's leases did not expire: %v", err)
		}
	}
}

// delivered are the ids of the messages p's runtime delivered to member.
func (p *upOn) delivered(member string) map[string]bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	ids := map[string]bool{}
	for _, e := range p.events {
		if e["event"] == "message_delivered" && e["member"] == member {
			id, _ := e["id"].(string)
			ids[id] = true
		}
	}
	return ids
}

func missing(ids []string, got ...map[string]bool) []string {
	var out []string
	for _, id := range ids {
		found := false
		for _, g := range got {
			found = found || g[id]
		}
		if !found {
			out = append(out, id)
		}
	}
	return out
}

// TestUpOnNATSKill9LosesNothing: two huddle up processes share one team
// on NATS; the one that runs bob is killed (-9) while messages to bob are
// in flight and started again: every message reaches bob, in one run or
// the other.
func TestUpOnNATSKill9LosesNothing(t *testing.T) {
	url := natsteam.New(t, "")
	st := natsteam.OpenCrew(t, url, true)
	first := startUpOnWhenFree(t, url, "lead,alice")
	bob := startUpOnWhenFree(t, url, "bob")
	ids := storetest.AppendN(t, st, "alice", "bob", "before", 30)
	testkit.WaitFor(t, 30*time.Second, "bob's first deliveries", func() bool { return len(bob.delivered("bob")) > 0 })
	if err := bob.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-bob.exited
	ids = append(ids, storetest.AppendN(t, st, "alice", "bob", "while down", 10)...)
	again := startUpOnWhenFree(t, url, "bob")
	testkit.WaitFor(t, 60*time.Second, "every message delivered to bob", func() bool {
		return len(missing(ids, bob.delivered("bob"), again.delivered("bob"))) == 0
	})
	if first.saw(func(e map[string]any) bool { return e["event"] == "message_delivered" && e["member"] == "bob" }) {
		t.Fatal("the runtime that does not run bob consumed his inbox")
	}
}

// TestUpOnNATSBrokerRestarted: the broker under two huddle up processes
// stops and starts again on the same address and data; both reconnect and
// go on: messages sent before and after reach their members.
func TestUpOnNATSBrokerRestarted(t *testing.T) {
	addr, data := freePort(t), t.TempDir()
	broker, _, _, _ := startBroker(t, "--addr", addr, "--data", data)
	url := "nats://" + addr + "/crew"
	st := natsteam.OpenCrew(t, url, true)
	alice := startUpOnWhenFree(t, url, "lead,alice")
	bob := startUpOnWhenFree(t, url, "bob")
	toBob := storetest.AppendN(t, st, "alice", "bob", "before", 5)
	toAlice := storetest.AppendN(t, st, "alice", "alice", "before", 5)
	testkit.WaitFor(t, 30*time.Second, "the first messages delivered", func() bool {
		return len(missing(toBob, bob.delivered("bob"))) == 0 && len(missing(toAlice, alice.delivered("alice"))) == 0
	})
	if err := broker.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := broker.Wait(); err != nil {
		t.Fatalf("broker stop: %v", err)
	}
	startBroker(t, "--addr", addr, "--data", data)
	toBob = append(toBob, storetest.AppendN(t, st, "alice", "bob", "after", 5)...)
	toAlice = append(toAlice, storetest.AppendN(t, st, "alice", "alice", "after", 5)...)
	testkit.WaitFor(t, 60*time.Second, "the messages sent after the restart delivered", func() bool {
		return len(missing(toBob, bob.delivered("bob"))) == 0 && len(missing(toAlice, alice.delivered("alice"))) == 0
	})
	for _, p := range []*upOn{alice, bob} {
		select {
		case err := <-p.exited:
			t.Fatalf("a huddle up exited under the restart: %v", err)
		default:
		}
	}
}

// TestUpOnNATSRefusals: what huddle up --store refuses, in one line, and
// never with the URL's token; a member another process runs is named with
// its holder.
func TestUpOnNATSRefusals(t *testing.T) {
	const secret = "s3cr3t-token"
	closed := "nats://" + secret + "@" + freePort(t) + "/crew"
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"up", "--headless", "--members", "bob"}, ExitUsage, "--members goes with --store"},
		{[]string{"up", "--headless", "--store", "nats://" + secret + "@127.0.0.1:1/a.b"}, ExitUsage, "a team name holds no dot"},
		{[]string{"up", "--store", closed}, ExitUsage, "stdout is not a terminal"},
		{[]string{"attach", "--store", closed}, ExitUsage, "stdout is not a terminal"},
		{[]string{"up", "--headless", "--store", closed, "--members", "../bob"}, ExitUsage, "--members: invalid name"},
		{[]string{"up", "--headless", "--store", closed}, ExitFail, "connect"},
	} {
		r := huddle(t, c.args...)
		r.wantError(t, c.code, c.want, c.args...)
		if strings.Contains(r.stderr, secret) {
			t.Errorf("huddle %v printed the token: %q", c.args, r.stderr)
		}
	}
	url := natsteam.New(t, "")
	natsteam.OpenCrew(t, url, true)
	startUpOnWhenFree(t, url, "bob")
	args := []string{"up", "--headless", "--store", url, "--members", "alice,bob", "--dir", t.TempDir()}
	// Its stdout holds the events of the start it gave up (the lead runs
	// elsewhere too); its error is one line.
	r := huddle(t, args...)
	if r.code != ExitFail || strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "huddle: up: bob runs elsewhere (holder ") {
		t.Fatalf("huddle %v: exit %d, stderr %q", args, r.code, r.stderr)
	}
}

// TestUpOnNATSPlanApprovedFromTheCLIAndACallAcross: two huddle up
// processes share a team; alice (the second) plans, `huddle approve
// --store` approves it, and she goes on: she calls bob (the first), whose
// action calls alice back, and `huddle traces --store` shows the two calls
// as one chain.
func TestUpOnNATSPlanApprovedFromTheCLIAndACallAcross(t *testing.T) {
	url := natsteam.New(t, "")
	alice := team.MemberSpec{Name: "alice", Role: "test", Runtime: team.RuntimeSpec{Kind: team.RuntimeScript, Steps: []team.Step{
		{Plan: "ask bob"}, {Say: "lead", Text: "asking"}, {Call: "bob", Action: "lookup", Prompt: "q", TimeoutSec: 30}, {Wait: team.Duration(time.Hour)},
	}}, Actions: map[string]team.ActionSpec{"note": {Reply: "noted"}}}
	bob := team.MemberSpec{Name: "bob", Role: "test", Runtime: team.RuntimeSpec{Kind: team.RuntimeScript, Steps: []team.Step{{Wait: team.Duration(time.Hour)}}},
		Actions: map[string]team.ActionSpec{"lookup": {Reply: "found", Call: &team.CallSpec{Target: "alice", Action: "note"}}}}
	b, _ := json.Marshal(team.Team{Name: "crew", Members: []team.MemberSpec{alice, bob}})
	st := natsteam.OpenCrew(t, url, false)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	natsteam.PutConfigs(t, st, map[string]string{
		store.ConfigTeam:                  string(b),
		store.MemberPolicyConfig("alice"): `{"allowed_targets":["bob"]}`,
		store.MemberPolicyConfig("bob"):   `{"allowed_targets":["alice"]}`,
	})
	first := startUpOnWhenFree(t, url, "lead,bob")
	second := startUpOnWhenFree(t, url, "alice")
	var plan string
	testkit.WaitFor(t, 30*time.Second, "alice's plan in the store", func() bool {
		all, _, err := st.Requests(ctx)
		if err == nil && len(all) == 1 && all[0].Status == protocol.RequestPending {
			plan = all[0].ID
		}
		return plan != ""
	})
	if first.saw(func(e map[string]any) bool {
		return e["event"] == "message_delivered" && e["from"] == "alice" && e["type"] == "message"
	}) {
		t.Fatal("alice went on before her plan was approved")
	}
	mustHuddle(t, "approve", plan, "--store", url)
	testkit.WaitFor(t, 30*time.Second, "alice's message to the lead, in the other process", func() bool {
		return first.saw(func(e map[string]any) bool {
			return e["event"] == "message_delivered" && e["from"] == "alice" && e["type"] == "message"
		})
	})
	testkit.WaitFor(t, 30*time.Second, "alice's call to end", func() bool {
		return second.saw(func(e map[string]any) bool { return e["event"] == "call" && e["member"] == "alice" })
	})
	if !second.saw(func(e map[string]any) bool {
		return e["event"] == "call" && e["member"] == "alice" && e["status"] == "ok"
	}) {
		t.Fatal("alice's call to bob did not succeed")
	}
	var chains []struct {
		Calls []struct {
			Caller, Target, Status string
			Hop                    int
		} `json:"calls"`
	}
	out := mustHuddle(t, "traces", "--store", url, "--json").stdout
	if err := json.Unmarshal([]byte(out), &chains); err != nil {
		t.Fatalf("traces --json: %v\n%s", err, out)
	}
	if len(chains) != 1 || len(chains[0].Calls) != 2 {
		t.Fatalf("want one chain of two calls:\n%s", out)
	}
	c := chains[0].Calls
	if c[0].Caller != "alice" || c[0].Target != "bob" || c[1].Caller != "bob" || c[1].Target != "alice" || c[1].Hop != 1 || c[0].Status != "ok" || c[1].Status != "ok" {
		t.Fatalf("the chain:\n%s", out)
	}
}

// TestUpOnNATSRestartedEarlyAfterKill9TakesItsMembers: huddle up --store,
// running the whole team, is killed -9 and started again at once, in the
// same directory, while the leases of the killed one still run. It takes
// the lead and each member as their leases expire, with no help: messages
// to all three are delivered by it.
func TestUpOnNATSRestartedEarlyAfterKill9TakesItsMembers(t *testing.T) {
	url := natsteam.New(t, "")
	st := natsteam.OpenCrew(t, url, true)
	dir := t.TempDir()
	first := startUpWith(t, "up", "--headless", "--store", url, "--dir", dir)
	if ok, err := first.started(t); !ok {
		t.Fatalf("huddle up: %v", err)
	}
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-first.exited
	again := startUpWith(t, "up", "--headless", "--store", url, "--dir", dir)
	if ok, err := again.started(t); !ok {
		t.Fatalf("huddle up again: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			select {
			case err := <-again.exited:
				t.Logf("the restarted runtime exited: %v", err)
			default:
			}
			again.mu.Lock()
			defer again.mu.Unlock()
			for _, e := range again.events {
				if e["event"] != "member_status" {
					t.Logf("the restarted runtime: %v", e)
				}
			}
		}
	})
	want := map[string][]string{}
	for _, to := range []string{protocol.Lead, "alice", "bob"} {
		want[to] = storetest.AppendN(t, st, "alice", to, "after the restart", 3)
	}
	testkit.WaitFor(t, 60*time.Second, "the messages to the lead, alice and bob delivered by the restarted runtime", func() bool {
		for to, ids := range want {
			if len(missing(ids, again.delivered(to))) > 0 {
				return false
			}
		}
		return true
	})
}

// TestUpOnNATSTwoRuntimesInOneDirectory: two huddle up --store --members
// processes in one working directory (both keep this machine's files in
// its .huddle) run side by side, each its own members, as on two
// machines; a team directory's runtime is refused there meanwhile, in one
// line that says why.
func TestUpOnNATSTwoRuntimesInOneDirectory(t *testing.T) {
	url := natsteam.New(t, "")
	st := natsteam.OpenCrew(t, url, true)
	cwd := t.TempDir()
	first := startUpWithIn(t, cwd, "up", "--headless", "--store", url, "--members", "lead,alice")
	if ok, err := first.started(t); !ok {
		t.Fatalf("the first huddle up: %v", err)
	}
	second := startUpWithIn(t, cwd, "up", "--headless", "--store", url, "--members", "bob")
	if ok, err := second.started(t); !ok {
		t.Fatalf("the second huddle up, in the same directory: %v", err)
	}
	toAlice := storetest.AppendN(t, st, "bob", "alice", "hello", 3)
	toBob := storetest.AppendN(t, st, "alice", "bob", "hello", 3)
	testkit.WaitFor(t, 30*time.Second, "alice's messages delivered by the first, bob's by the second", func() bool {
		return len(missing(toAlice, first.delivered("alice"))) == 0 && len(missing(toBob, second.delivered("bob"))) == 0
	})
	if len(first.delivered("bob")) > 0 || len(second.delivered("alice")) > 0 {
		t.Fatal("a runtime consumed the inbox of a member the other runs")
	}

	local := filepath.Join(cwd, ".huddle")
	b, _ := json.Marshal(natsteam.Crew)
	if err := os.WriteFile(team.ConfigPath(local), b, 0o600); err != nil {
		t.Fatal(err)
	}
	before := testkit.Tree(t, local)
	args := []string{"up", "--headless", "--dir", local}
	r := huddle(t, args...)
	r.wantError(t, ExitFail, "a team in a store", args...)
	if after := testkit.Tree(t, local); !maps.Equal(before, after) {
		t.Fatalf("the refused runtime changed %s:\nbefore %v\nafter  %v", local, before, after)
	}
}
