package mcpserve

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"huddle/internal/testkit"
	"huddle/internal/testkit/teamkit"
	"huddle/ipc"
	"huddle/protocol"
	"huddle/team"
	"huddle/team/serve"
	"huddle/team/supervisor"
)

// doorTeam: planner must have its plan approved before it works; helper
// needs none; both answer "act".
func doorTeam() team.Team {
	planner := teamkit.Scripted("planner", "", team.Step{Plan: "read the ledger, then answer"}, team.Step{Wait: team.Duration(time.Hour)})
	planner.Actions = map[string]team.ActionSpec{"act": {Reply: "planner acted"}}
	helper := teamkit.Scripted("helper", "", team.Step{Wait: team.Duration(time.Hour)})
	helper.Actions = map[string]team.ActionSpec{"act": {Reply: "helper acted"}}
	return team.Team{Name: "doors", Members: []team.MemberSpec{planner, helper}}
}

// door runs k's team and opens a door on it, deciders allowed to decide.
func door(t *testing.T, k *teamkit.Kept, deciders ...string) *Door {
	t.Helper()
	var started atomic.Bool
	teamkit.Run(t, func(ctx context.Context) error {
		return supervisor.Run(ctx, k.St, k.Dir, supervisor.Options{Tick: 20 * time.Millisecond, OnEvent: func(e supervisor.Event) {
			if e["event"] == "team_started" {
				started.Store(true)
			}
		}})
	})
	// Every member's consumer is in place: a test that ends at once stops
	// a runtime that has started, not one still starting.
	testkit.WaitFor(t, 20*time.Second, "the team started", started.Load)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	policy := &ipc.Policy{Enabled: true, MaxHops: 2, DefaultTimeoutSec: 60, AllowedTargets: []string{"planner", "helper"}}
	b, err := serve.NewServeBackend(ctx, k.St, policy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	d, err := New(ctx, Config{Store: k.St, Backend: serve.NewA2ABackend(b, k.St), Deciders: deciders, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// connect is the Go SDK's client connected in memory to caller's server.
func connect(t *testing.T, d *Door, caller string, onProgress func(string)) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := d.Server(caller).Connect(ctx, lifting{st}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	c := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { onProgress(r.Params.Message) },
	})
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func text(r *mcp.CallToolResult) string {
	var s []string
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			s = append(s, tc.Text)
		}
	}
	return strings.Join(s, "\n")
}

// TestMCPWithTheGoSDK: on each store, the Go SDK's own client lists the
// tools (no approve or reject for a caller the lead did not allow), reads
// the members and the pending plan, and calls the planner's action: the
// call waits, its progress saying the plan waits for the lead, until the
// lead approves; then it answers the planner's result. A call at max_hops
// is DENIED. An allowed caller approves through the door, recorded as
// mcp:CALLER.
func TestMCPWithTheGoSDK(t *testing.T) {
	teamkit.OnEachStore(t, doorTeam(), func(t *testing.T, k *teamkit.Kept) {
		d := door(t, k, "boss")
		testkit.WaitFor(t, 20*time.Second, "the planner's plan to wait", func() bool { return k.PendingPlan("planner") != nil })
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var mu sync.Mutex
		var progress []string
		cs := connect(t, d, "claude", func(m string) { mu.Lock(); progress = append(progress, m); mu.Unlock() })

		tools, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range tools.Tools {
			names = append(names, tl.Name)
		}
		if got := strings.Join(names, " "); got != "call_action members request requests send_message" {
			t.Errorf("tools of a caller that may not decide: %s", got)
		}
		members, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "members"})
		if err != nil || members.IsError || !strings.Contains(text(members), `"awaiting_approval"`) || !strings.Contains(text(members), `"act"`) {
			t.Errorf("members: %v %s", err, text(members))
		}
		pending := k.PendingPlan("planner")
		reqs, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "requests"})
		if err != nil || !strings.Contains(text(reqs), pending.ID) || !strings.Contains(text(reqs), "read the ledger") {
			t.Errorf("requests: %v %s", err, text(reqs))
		}
		one, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "request", Arguments: map[string]any{"id": pending.ID}})
		if err != nil || !strings.Contains(text(one), `"status": "pending"`) {
			t.Errorf("request: %v %s", err, text(one))
		}

		type answer struct {
			r   *mcp.CallToolResult
			err error
		}
		out := make(chan answer, 1)
		go func() {
			p := &mcp.CallToolParams{Name: "call_action", Arguments: map[string]any{"member": "planner", "action": "act", "prompt": "please act"}}
			p.SetProgressToken("tok-1")
			r, err := cs.CallTool(ctx, p)
			out <- answer{r, err}
		}()
		testkit.WaitFor(t, 20*time.Second, "progress saying the plan waits", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(progress) > 0 && strings.Contains(progress[0], pending.ID)
		})
		if _, err := k.Decide(pending.ID, protocol.EventApprove, ""); err != nil {
			t.Fatal(err)
		}
		a := <-out
		if a.err != nil || a.r.IsError || text(a.r) != "planner acted" {
			t.Fatalf("call_action after the approval: %v %+v", a.err, a.r)
		}

		deep, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "call_action", Arguments: map[string]any{"member": "helper", "action": "act", "prompt": "x", "hop": 2}})
		if err != nil || !deep.IsError || !strings.HasPrefix(text(deep), "DENIED") {
			t.Errorf("hop 2: %v %s", err, text(deep))
		}
		var sc map[string]any
		b, _ := json.Marshal(deep.StructuredContent)
		json.Unmarshal(b, &sc)
		if e, _ := sc["error"].(map[string]any); e["code"] != "DENIED" {
			t.Errorf("hop 2's structured error: %v", sc)
		}

		// A caller's W3C trace context in _meta (MCP over stdio has no
		// headers): the call continues that trace.
		const tid, sid = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
		traced := &mcp.CallToolParams{Name: "call_action", Arguments: map[string]any{"member": "helper", "action": "act", "prompt": "traced"},
			Meta: mcp.Meta{"traceparent": "00-" + tid + "-" + sid + "-01"}}
		if r, err := cs.CallTool(ctx, traced); err != nil || r.IsError {
			t.Fatalf("a traced call: %v %s", err, text(r))
		}
		testkit.WaitFor(t, 10*time.Second, "the traced call in the chain of the caller's trace", func() bool {
			for _, ch := range k.Chains(t) {
				if ch.CorrelationID == "corr-"+tid {
					return len(ch.Rows) == 1 && ch.Rows[0].Call.ParentRequestID == "req-"+sid && ch.Rows[0].Call.Caller == "claude"
				}
			}
			return false
		})

		sent, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "send_message", Arguments: map[string]any{"to": "helper", "text": "hello from mcp"}})
		if err != nil || sent.IsError {
			t.Fatalf("send_message: %v %s", err, text(sent))
		}
		testkit.WaitFor(t, 10*time.Second, "the message in helper's inbox", func() bool {
			for _, m := range k.MessagesTo(t, "helper") {
				if m.From == "claude" && m.Content == "hello from mcp" {
					return true
				}
			}
			return false
		})

		// The caller the lead allowed approves a plan through the door.
		boss := connect(t, d, "boss", func(string) {})
		bt, err := boss.ListTools(ctx, nil)
		if err != nil || len(bt.Tools) != 7 {
			t.Fatalf("an allowed caller's tools: %v %d", err, len(bt.Tools))
		}
		plan := teamkit.NewPlan(t, ctx, k.St, "helper")
		r, err := boss.CallTool(ctx, &mcp.CallToolParams{Name: "approve", Arguments: map[string]any{"id": plan.ID}})
		if err != nil || r.IsError {
			t.Fatalf("approve: %v %s", err, text(r))
		}
		if got := k.Request(plan.ID); got.Status != protocol.RequestApproved || got.ResolvedBy != "mcp:boss" {
			t.Errorf("the decision: %s by %s", got.Status, got.ResolvedBy)
		}
		// claude may not: the tool is not there.
		if r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "approve", Arguments: map[string]any{"id": plan.ID}}); err == nil && !r.IsError {
			t.Errorf("a caller the lead did not allow approved: %s", text(r))
		}
	})
}
