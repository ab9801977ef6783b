package cli

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"huddle/internal/testkit/natsteam"
	"huddle/ipc/trace"
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

// actionsTeam is natsteam.Crew with actions: alice greets and notes, bob
// looks up.
func actionsTeam() team.Team {
	tm := natsteam.Crew
	tm.Members = slices.Clone(natsteam.Crew.Members)
	tm.Members[0].Actions = map[string]team.ActionSpec{"note": {Reply: "noted"}, "greet": {Reply: "hello from alice"}}
	tm.Members[1].Actions = map[string]team.ActionSpec{"lookup": {Reply: "found"}}
	return tm
}

// TestCallFromAnotherProcess: on both kinds of store, `huddle call` from
// a second process against a team that `huddle up` runs: as ops (a
// policy, not a member) it gets bob's answer, and the call shows in the
// team's traces with ops as the caller; an action bob does not have is an
// error result; a target ops's allowlist does not name is DENIED, a
// member or not; without a policy every call gets an IPC_ERROR naming
// it; as alice (a running member, whose inbox her runtime consumes) it
// still gets its answer. On NATS the answer ops took leaves the store.
func TestCallFromAnotherProcess(t *testing.T) {
	b, _ := json.Marshal(actionsTeam())
	onEachStore(t, map[string]string{
		store.ConfigTeam:                  string(b),
		store.MemberPolicyConfig("ops"):   `{"owner":"ops","allowed_targets":["bob"]}`,
		store.MemberPolicyConfig("alice"): `{"allowed_targets":["bob","alice"]}`,
	}, func(t *testing.T, tm *teamOn) {
		tm.up(t, "lead,alice,bob")
		call := func(caller string, args ...string) cliResult {
			return tm.huddle(t, slices.Concat([]string{"call", "--timeout", "30"}, tm.policy(caller), args)...)
		}

		ok := call("ops", "--target", "bob", "--action", "lookup", "--prompt", "q")
		if ok.code != ExitOK {
			t.Fatalf("call to bob: exit %d\n%s\n%s", ok.code, ok.stdout, ok.stderr)
		}
		answered := parseCall(t, ok)
		if answered.Response.Status != protocol.ResultOK || !strings.Contains(string(answered.Response.Result), "found") ||
			answered.Request.Caller != "ops" || answered.Response.RequestID != answered.Request.RequestID {
			t.Fatalf("call to bob: %s", ok.stdout)
		}
		if tm.kind == "nats" {
			// ops is no member: the answer it took left the store before call exited.
			if n := inboxHolds(t, tm.st, "ops"); n != 0 {
				t.Fatalf("ops's inbox holds %d messages after its call, want none", n)
			}
		}
		if tm.dir != "" {
			spans, err := trace.NewTraceReader(tm.dir).Read()
			if err != nil {
				t.Fatal(err)
			}
			var start, end bool
			for _, s := range spans {
				if s.RequestID == answered.Request.RequestID && s.Caller == "ops" && s.Target == "bob" {
					start = start || s.Span == trace.SpanStart
					end = end || (s.Span == trace.SpanEnd && s.Status == protocol.ResultOK)
				}
			}
			if !start || !end {
				t.Fatalf("the call is not in the team's traces: %+v", spans)
			}
		}
		out := tm.must(t, "traces", "--correlation", answered.Request.CorrelationID, "--json").stdout
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

		// An action bob does not have: exit 1, with the error result.
		r := call("ops", "--target", "bob", "--action", "fly", "--prompt", "hi")
		if r.code != ExitFail || !strings.Contains(r.stdout, `bob has no action \"fly\"`) {
			t.Fatalf("unknown action: exit %d, %s", r.code, r.stdout)
		}
		// DENIED by the allowlist, for a member and for a stranger: exit 1.
		denied := call("ops", "--target", "alice", "--action", "note", "--prompt", "q")
		if denied.code != ExitFail {
			t.Fatalf("denied call: exit %d, want %d\n%s\n%s", denied.code, ExitFail, denied.stdout, denied.stderr)
		}
		refused := parseCall(t, denied)
		if refused.Response.Status != protocol.ResultError || refused.Response.Error == nil || !strings.Contains(refused.Response.Error.Message, "DENIED: target `alice` is not in allowed_targets") {
			t.Fatalf("denied call: %s", denied.stdout)
		}
		r = call("ops", "--target", "carol", "--action", "x", "--prompt", "hi")
		if r.code != ExitFail || !strings.Contains(r.stdout, `"DENIED"`) || !strings.Contains(r.stdout, "not_allowed_target") {
			t.Fatalf("denied: exit %d, %s", r.code, r.stdout)
		}

		nobody := call("nobody", "--target", "bob", "--action", "lookup", "--prompt", "q")
		if nobody.code != ExitFail {
			t.Fatalf("call without a policy: exit %d, want %d\n%s\n%s", nobody.code, ExitFail, nobody.stdout, nobody.stderr)
		}
		want := "ipc/nobody.puruto-ipc.json"
		if tm.kind == "nats" {
			want = "holds no ipc/nobody.puruto-ipc.json"
		}
		if r := parseCall(t, nobody).Response; r.Error == nil || r.Error.Code != protocol.ErrIPC || !strings.Contains(r.Error.Message, want) {
			t.Fatalf("call without a policy: %s", nobody.stdout)
		}

		asAlice := call("alice", "--target", "bob", "--action", "lookup", "--prompt", "q")
		if asAlice.code != ExitOK || parseCall(t, asAlice).Response.Status != protocol.ResultOK {
			t.Fatalf("call as alice: exit %d\n%s\n%s", asAlice.code, asAlice.stdout, asAlice.stderr)
		}
	})
}

func TestCallArgumentsAndMissingConfig(t *testing.T) {
	cwd := t.TempDir()
	for _, args := range [][]string{
		{"call", "--action", "a", "--prompt", "p"},
		{"call", "--target", "t", "--prompt", "p"},
		{"call", "--target", "t", "--action", "a"},
		{"call", "--target", "t", "--action", "a", "--prompt", "p", "--hop", "-1"},
		{"call", "--target", "t", "--action", "a", "--prompt", "p", "--caller", "Not Valid"},
	} {
		r := huddleIn(t, cwd, nil, args...)
		r.wantError(t, ExitUsage, "", args...)
	}
	// No config: an IPC_ERROR result on stdout, exit 1, and no file written.
	r := huddleIn(t, cwd, nil, "call", "--target", "t", "--action", "a", "--prompt", "p")
	if r.code != ExitFail || !strings.Contains(r.stdout, `"IPC_ERROR"`) || !strings.Contains(r.stdout, ".puruto-ipc.json") {
		t.Fatalf("missing config: exit %d, %s", r.code, r.stdout)
	}
	if entries, _ := os.ReadDir(cwd); len(entries) != 0 {
		t.Fatalf("huddle call wrote %v into the working directory", entries)
	}
}
