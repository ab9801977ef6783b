package cli

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/ipc/blueprint"
	"huddle/protocol"
	"huddle/store"
	"huddle/store/natsstore"
	"huddle/team"
)

// callResult is what huddle call prints.
type callResult struct {
	Request  protocol.InvocationRequest `json:"request"`
	Response protocol.InvocationResult  `json:"response"`
}

func parseCall(t *testing.T, r cliResult) callResult {
	t.Helper()
	var c callResult
	if err := json.Unmarshal([]byte(r.stdout), &c); err != nil {
		t.Fatalf("call output: %v\n%s\nstderr: %s", err, r.stdout, r.stderr)
	}
	return c
}

// inboxHolds is how many messages member's subject holds in the NATS
// store st, from the server's state (natsstore.Store.Held).
func inboxHolds(t *testing.T, st store.Store, member string) uint64 {
	t.Helper()
	ns, ok := st.(*natsstore.Store)
	if !ok {
		t.Fatal("not a NATS store")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := ns.Held(ctx, member)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// actionsTeam is storeTeam with an action each: alice notes, bob looks up.
func actionsTeam() team.Team {
	tm := storeTeam
	tm.Members = slices.Clone(storeTeam.Members)
	tm.Members[0].Actions = map[string]team.ActionSpec{"note": {Reply: "noted"}}
	tm.Members[1].Actions = map[string]team.ActionSpec{"lookup": {Reply: "found"}}
	return tm
}

// TestCallOnStore: a team on NATS run by a `huddle up --headless --store`
// process; `huddle call --store` as ops (a policy in the store, not a
// member) gets bob's answer, is refused a target its allowlist does not
// name as on a directory, gets an IPC_ERROR without a policy in the
// store (the answer ops took leaves the store), and as alice (a running member, whose inbox her
// runtime consumes) still gets its answer; `huddle traces --store` shows
// the calls.
func TestCallOnStore(t *testing.T) {
	url := natsTeam(t)
	b, _ := json.Marshal(actionsTeam())
	st := openTeamStore(t, url, false)
	putConfigs(t, st, map[string]string{
		store.ConfigTeam:                  string(b),
		store.MemberPolicyConfig("ops"):   `{"owner":"ops","allowed_targets":["bob"]}`,
		store.MemberPolicyConfig("alice"): `{"allowed_targets":["bob"]}`,
	})
	startUpOnWhenFree(t, url, "lead,alice,bob")

	ok := huddle(t, "call", "--store", url, "--caller", "ops", "--target", "bob", "--action", "lookup", "--prompt", "q", "--timeout", "30")
	if ok.code != exitOK {
		t.Fatalf("call to bob: exit %d\n%s\n%s", ok.code, ok.stdout, ok.stderr)
	}
	answered := parseCall(t, ok)
	if answered.Response.Status != protocol.ResultOK || !strings.Contains(string(answered.Response.Result), "found") {
		t.Fatalf("call to bob: %s", ok.stdout)
	}
	// ops is no member: the answer it took left the store before call exited.
	if n := inboxHolds(t, st, "ops"); n != 0 {
		t.Fatalf("ops's inbox holds %d messages after its call, want none", n)
	}

	denied := huddle(t, "call", "--store", url, "--caller", "ops", "--target", "alice", "--action", "note", "--prompt", "q")
	if denied.code != exitFail {
		t.Fatalf("denied call: exit %d, want %d\n%s\n%s", denied.code, exitFail, denied.stdout, denied.stderr)
	}
	refused := parseCall(t, denied)
	if refused.Response.Status != protocol.ResultError || refused.Response.Error == nil || !strings.Contains(refused.Response.Error.Message, "DENIED: target `alice` is not in allowed_targets") {
		t.Fatalf("denied call: %s", denied.stdout)
	}

	nobody := huddle(t, "call", "--store", url, "--caller", "nobody", "--target", "bob", "--action", "lookup", "--prompt", "q")
	if nobody.code != exitFail {
		t.Fatalf("call without a policy: exit %d, want %d\n%s\n%s", nobody.code, exitFail, nobody.stdout, nobody.stderr)
	}
	if r := parseCall(t, nobody).Response; r.Error == nil || !strings.Contains(r.Error.Message, "holds no ipc/nobody.puruto-ipc.json") {
		t.Fatalf("call without a policy: %s", nobody.stdout)
	}

	asAlice := huddle(t, "call", "--store", url, "--caller", "alice", "--target", "bob", "--action", "lookup", "--prompt", "q", "--timeout", "30")
	if asAlice.code != exitOK || parseCall(t, asAlice).Response.Status != protocol.ResultOK {
		t.Fatalf("call as alice: exit %d\n%s\n%s", asAlice.code, asAlice.stdout, asAlice.stderr)
	}

	out := mustHuddle(t, "traces", "--store", url, "--correlation", answered.Request.CorrelationID, "--json").stdout
	var chains []struct {
		Calls []struct{ Caller, Target, Action, Status string } `json:"calls"`
	}
	if err := json.Unmarshal([]byte(out), &chains); err != nil {
		t.Fatalf("traces --json: %v\n%s", err, out)
	}
	if len(chains) != 1 || len(chains[0].Calls) != 1 {
		t.Fatalf("want the call's chain of one call:\n%s", out)
	}
	if c := chains[0].Calls[0]; c.Caller != "ops" || c.Target != "bob" || c.Action != "lookup" || c.Status != "ok" {
		t.Fatalf("the chain:\n%s", out)
	}
}

// TestServeOnStore: `huddle serve --store` on real loopback HTTP serves
// the skills of a team on NATS that a `huddle up --store` process runs: a
// skill the store's policy allows is answered by the member, one it does
// not is refused, the answer serve took leaves the store, and the call
// is in `huddle traces --store`.
func TestServeOnStore(t *testing.T) {
	url := natsTeam(t)
	b, _ := json.Marshal(actionsTeam())
	st := openTeamStore(t, url, false)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	putConfigs(t, st, map[string]string{
		store.ConfigTeam:   string(b),
		store.ConfigPolicy: `{"allowed_targets":["bob"]}`,
	})
	startUpOnWhenFree(t, url, "lead,alice,bob")
	addr := freePort(t)
	startServe(t, t.TempDir(), addr, "--store", url)
	c := &blueprint.Client{BaseURL: "http://" + addr}
	ask := func(skill string) (blueprint.Result, error) {
		return c.Call(ctx, blueprint.InvokeRequest{Caller: blueprint.Caller{ID: "web", Type: "agent"}, SkillID: skill,
			Inputs: map[string]any{"prompt": "q"}, Context: blueprint.Context{TimeoutMS: 30000}}, "")
	}
	res, err := ask("bob.lookup")
	if err != nil || res.Status != "completed" || !strings.Contains(string(res.Output), "found") {
		t.Fatalf("bob.lookup over HTTP: %v %+v %s", err, res, res.Output)
	}
	testkit.WaitFor(t, 20*time.Second, "the answer serve took removed from web's inbox", func() bool { return inboxHolds(t, st, "web") == 0 })
	if res, err := ask("alice.note"); err == nil && res.Status == "completed" {
		t.Fatalf("alice.note, which the store's policy does not allow, was answered: %s", res.Output)
	}
	out := mustHuddle(t, "traces", "--store", url, "--json").stdout
	var chains []struct {
		Calls []struct{ Caller, Target, Action, Status string } `json:"calls"`
	}
	if err := json.Unmarshal([]byte(out), &chains); err != nil {
		t.Fatalf("traces --json: %v\n%s", err, out)
	}
	found := false
	for _, ch := range chains {
		for _, call := range ch.Calls {
			found = found || call.Target == "bob" && call.Action == "lookup" && call.Status == "ok"
		}
	}
	if !found {
		t.Fatalf("the served call is not in the store's traces:\n%s", out)
	}
}
