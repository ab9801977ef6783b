package serve

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"

	"huddle/internal/testkit"
	"huddle/internal/testkit/teamkit"
	"huddle/ipc"
	"huddle/ipc/a2a"
	"huddle/ipc/trace"
	"huddle/ipc/trace/otelexport"
	"huddle/protocol"
	"huddle/team"
	"huddle/team/supervisor"
)

// a2aTeam is a planner that must have its plan approved before it works,
// and a helper that needs no plan; both answer "act".
func a2aTeam() team.Team {
	planner := teamkit.Scripted("planner", "", team.Step{Plan: "read the ledger, then answer"}, team.Step{Wait: team.Duration(time.Hour)})
	planner.Actions = map[string]team.ActionSpec{"act": {Reply: "planner acted"}}
	helper := teamkit.Scripted("helper", "", team.Step{Wait: team.Duration(time.Hour)})
	helper.Actions = map[string]team.ActionSpec{"act": {Reply: "helper acted"}}
	return team.Team{Name: "doors", Members: []team.MemberSpec{planner, helper}}
}

// a2aServer serves k's team over A2A on loopback, its HTTP callers
// allowed both members at hops below 2.
func a2aServer(t *testing.T, k *teamkit.Kept) *a2a.Client {
	t.Helper()
	return &a2a.Client{URL: a2aURL(t, k)}
}

// a2aURL serves k's team over A2A (v1.0, and v0.3 through the Go SDK) and
// returns its base URL.
func a2aURL(t *testing.T, k *teamkit.Kept) string {
	t.Helper()
	return a2aURLWith(t, k, []string{"planner", "helper"})
}

// a2aURLWith is a2aURL with HTTP callers allowed the members allowed.
func a2aURLWith(t *testing.T, k *teamkit.Kept, allowed []string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	policy := &ipc.Policy{Enabled: true, MaxHops: 2, DefaultTimeoutSec: 60, AllowedTargets: allowed}
	backend, err := NewServeBackend(ctx, k.St, policy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { backend.Close() })
	srv, err := a2a.NewServer(a2a.ServerConfig{Backend: NewA2ABackend(backend, k.St), Name: "doors"})
	if err != nil {
		t.Fatal(err)
	}
	srv.ServeLegacy()
	hs := httptestServer(t, srv.Handler())
	t.Cleanup(func() { srv.Close() })
	return hs
}

// follower streams one task and keeps what it saw, in order.
type follower struct {
	mu     sync.Mutex
	seen   []string
	plans  []a2a.Plan
	notes  []string // the WORKING updates' messages
	task   string
	result string
	done   chan error
}

func (f *follower) states() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.seen, " ")
}

func (f *follower) plan(i int) *a2a.Plan {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i < len(f.plans) {
		p := f.plans[i]
		return &p
	}
	return nil
}

func stream(ctx context.Context, c *a2a.Client, skill string) *follower {
	f := &follower{done: make(chan error, 1)}
	msg := a2a.Message{MessageID: "m-" + skill, Role: a2a.RoleUser, Parts: []a2a.Part{a2a.TextPart("please act")}}
	go func() {
		f.done <- c.Stream(ctx, a2a.MethodStream, a2a.SendMessageRequest{Message: &msg, Metadata: map[string]any{a2a.MetaSkill: skill}}, a2a.Trace{},
			func(ev a2a.StreamResponse) error {
				f.mu.Lock()
				defer f.mu.Unlock()
				switch {
				case ev.Task != nil:
					f.task = ev.Task.ID
					f.seen = append(f.seen, short(ev.Task.Status.State))
				case ev.StatusUpdate != nil:
					st := ev.StatusUpdate.Status
					f.seen = append(f.seen, short(st.State))
					if st.State == a2a.StateWorking && st.Message != nil {
						f.notes = append(f.notes, st.Message.Parts[0].Text)
					}
					if st.State == a2a.StateInputRequired {
						for _, p := range st.Message.Parts {
							var pl a2a.Plan
							if len(p.Data) > 0 && json.Unmarshal(p.Data, &pl) == nil {
								f.plans = append(f.plans, pl)
							}
						}
					}
				case ev.ArtifactUpdate != nil:
					f.seen = append(f.seen, "artifact")
					f.result = ev.ArtifactUpdate.Artifact.Parts[0].Text
				}
				return nil
			})
	}()
	return f
}

func short(s a2a.TaskState) string { return strings.TrimPrefix(string(s), "TASK_STATE_") }

// TestA2ATaskWaitsOnThePlan: on each store, a task sent to a member whose
// plan waits for the lead is INPUT_REQUIRED with that plan; the lead's
// rejection makes it WORKING, then INPUT_REQUIRED on the revised plan
// (revises, feedback); the approval sends the invocation, and the task
// completes with the member's answer as its artifact, all on one stream.
// A member that needs no plan completes without one.
func TestA2ATaskWaitsOnThePlan(t *testing.T) {
	teamkit.OnEachStore(t, a2aTeam(), func(t *testing.T, k *teamkit.Kept) {
		teamkit.Run(t, func(ctx context.Context) error {
			return supervisor.Run(ctx, k.St, k.Dir, supervisor.Options{Tick: 20 * time.Millisecond})
		})
		testkit.WaitFor(t, 20*time.Second, "the planner's plan to wait", func() bool { return k.PendingPlan("planner") != nil })
		c := a2aServer(t, k)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()

		free := stream(ctx, c, "helper.act")
		if err := <-free.done; err != nil {
			t.Fatal(err)
		}
		if got := free.states(); got != "SUBMITTED WORKING artifact COMPLETED" || free.result != "helper acted" {
			t.Errorf("helper's task: %s, result %q", got, free.result)
		}

		f := stream(ctx, c, "planner.act")
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("the planner's task saw: %s; records: %+v", f.states(), k.Requests())
			}
		})
		testkit.WaitFor(t, 20*time.Second, "the task INPUT_REQUIRED on the plan", func() bool { return f.plan(0) != nil })
		first := f.plan(0)
		if pending := k.PendingPlan("planner"); pending == nil || first.RequestID != pending.ID || !strings.Contains(first.Plan, "read the ledger") {
			t.Fatalf("the task's plan %+v is not the pending one %+v", first, pending)
		}
		if _, err := k.Decide(first.RequestID, protocol.EventReject, "check the totals too"); err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, 20*time.Second, "the revised plan", func() bool { return f.plan(1) != nil })
		second := f.plan(1)
		if second.Revises != first.RequestID || second.Feedback != "check the totals too" || !strings.Contains(second.Plan, "check the totals too") {
			t.Errorf("revised plan: %+v", second)
		}
		if _, err := k.Decide(second.RequestID, protocol.EventApprove, ""); err != nil {
			t.Fatal(err)
		}
		if err := <-f.done; err != nil {
			t.Fatal(err)
		}
		want := "SUBMITTED WORKING INPUT_REQUIRED WORKING INPUT_REQUIRED WORKING artifact COMPLETED"
		if got := f.states(); got != want || f.result != "planner acted" {
			t.Errorf("planner's task:\n got %s\nwant %s\nresult %q", got, want, f.result)
		}
		task, err := c.GetTask(ctx, f.task)
		if err != nil || task.Status.State != a2a.StateCompleted || task.ContextID == "" {
			t.Fatalf("GetTask: %+v %v", task, err)
		}
		// The invocation is in the team's traces, under the task's context.
		testkit.WaitFor(t, 10*time.Second, "the call in the traces", func() bool {
			for _, ch := range k.Chains(t) {
				if ch.CorrelationID == task.ContextID {
					for _, r := range ch.Rows {
						if r.Call.Caller == a2a.DefaultCaller && r.Call.Target == "planner" && r.Call.Status == protocol.ResultOK {
							return true
						}
					}
				}
			}
			return false
		})
	})
}

// httptestServer serves h on loopback until the test ends.
func httptestServer(t *testing.T, h http.Handler) string {
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs.URL
}

// TestA2AWithTheGoSDK: the official Go SDK's client (a2a-go v0.3.3, which
// speaks A2A 0.3 and sends no A2A-Version) reads the card, finds its v0.3
// interface, and streams a task to the planner: submitted, working,
// input-required with the plan as a data part, then, once the lead
// approves, working, the artifact and completed (Final). GetTask reads it
// back; a second task is cancelled.
func TestA2AWithTheGoSDK(t *testing.T) {
	teamkit.OnEachStore(t, a2aTeam(), func(t *testing.T, k *teamkit.Kept) {
		teamkit.Run(t, func(ctx context.Context) error {
			return supervisor.Run(ctx, k.St, k.Dir, supervisor.Options{Tick: 20 * time.Millisecond})
		})
		testkit.WaitFor(t, 20*time.Second, "the planner's plan to wait", func() bool { return k.PendingPlan("planner") != nil })
		url := a2aURL(t, k)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		card, err := agentcard.DefaultResolver.Resolve(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		if card.ProtocolVersion != "0.3.0" || len(card.Skills) != 2 || card.Skills[0].ID != "planner.act" {
			t.Fatalf("the card as the Go SDK reads it: %+v", card)
		}
		client, err := a2aclient.NewFromCard(ctx, card)
		if err != nil {
			t.Fatal(err)
		}
		msg := sdk.NewMessage(sdk.MessageRoleUser, sdk.TextPart{Text: "please act"})
		params := &sdk.MessageSendParams{Message: msg, Metadata: map[string]any{a2a.MetaSkill: "planner.act"}}
		var seen []string
		var taskID sdk.TaskID
		var result string
		for ev, err := range client.SendStreamingMessage(ctx, params) {
			if err != nil {
				t.Fatal(err)
			}
			switch e := ev.(type) {
			case *sdk.Task:
				taskID = e.ID
				seen = append(seen, string(e.Status.State))
			case *sdk.TaskStatusUpdateEvent:
				seen = append(seen, string(e.Status.State))
				if e.Status.State == sdk.TaskStateInputRequired {
					var plan map[string]any
					for _, p := range e.Status.Message.Parts {
						if d, ok := p.(sdk.DataPart); ok {
							plan = d.Data
						}
					}
					pending := k.PendingPlan("planner")
					if pending == nil || plan["request_id"] != pending.ID {
						t.Fatalf("input-required on %v, the pending plan is %+v", plan, pending)
					}
					if _, err := k.Decide(pending.ID, protocol.EventApprove, ""); err != nil {
						t.Fatal(err)
					}
				}
				if e.Final {
					seen = append(seen, "final")
				}
			case *sdk.TaskArtifactUpdateEvent:
				seen = append(seen, "artifact")
				if tp, ok := e.Artifact.Parts[0].(sdk.TextPart); ok {
					result = tp.Text
				}
			}
		}
		if got := strings.Join(seen, " "); got != "submitted working input-required working artifact completed final" || result != "planner acted" {
			t.Errorf("the Go SDK's stream: %s, result %q", got, result)
		}
		got, err := client.GetTask(ctx, &sdk.TaskQueryParams{ID: taskID})
		if err != nil || got.Status.State != sdk.TaskStateCompleted || len(got.Artifacts) != 1 {
			t.Fatalf("GetTask: %+v %v", got, err)
		}

		// A task the Go SDK sends without blocking, then cancels.
		noWait := false
		r, err := client.SendMessage(ctx, &sdk.MessageSendParams{Message: sdk.NewMessage(sdk.MessageRoleUser, sdk.TextPart{Text: "again"}),
			Config: &sdk.MessageSendConfig{Blocking: &noWait}, Metadata: map[string]any{a2a.MetaSkill: "helper.act", a2a.MetaHop: 2}})
		if err != nil {
			t.Fatal(err)
		}
		if task, ok := r.(*sdk.Task); !ok || task.Status.State != sdk.TaskStateRejected {
			t.Errorf("hop 2 of max_hops 2 through the Go SDK: %+v", r)
		}
		if _, err := client.CancelTask(ctx, &sdk.TaskIDParams{ID: taskID}); !errors.Is(err, sdk.ErrTaskNotCancelable) {
			t.Errorf("cancelling an ended task: %v", err)
		}
	})
}

// TestA2AChainAcrossTwoHuddles: in team A, asker calls remote, a member
// that stands for team B's A2A door (an http target, protocol a2a); in B
// the task waits on worker's plan until B's lead approves it, then worker
// answers. The chain is in both teams' traces under A's correlation id,
// B's call the child of A's, and in one OpenTelemetry trace: invoke_agent
// remote (A's client span) the parent of invoke_agent worker (B's).
func TestA2AChainAcrossTwoHuddles(t *testing.T) {
	mem := tracetest.NewInMemoryExporter()
	ex, err := otelexport.Start(context.Background(), otelexport.Options{Exporter: mem})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ex.Shutdown(context.Background()) })

	dirB := t.TempDir()
	worker := teamkit.Scripted("worker", "", team.Step{Plan: "do the remote work"}, team.Step{Wait: team.Duration(time.Hour)})
	worker.Actions = map[string]team.ActionSpec{"act": {Reply: "worker in B did it"}}
	teamkit.WriteTeam(t, dirB, team.Team{Name: "team-b", Members: []team.MemberSpec{worker}})
	kb := teamkit.FilesKept(t, dirB)
	teamkit.Run(t, func(ctx context.Context) error {
		return supervisor.Run(ctx, kb.St, dirB, supervisor.Options{Tick: 20 * time.Millisecond})
	})
	urlB := a2aURLWith(t, kb, []string{"worker"})

	dirA := t.TempDir()
	asker := teamkit.Scripted("asker", "", team.Step{Call: "remote", Action: "act", Prompt: "from A", TimeoutSec: 60},
		team.Step{Wait: team.Duration(time.Hour)})
	asker.IPC = "asker.json"
	remote := team.MemberSpec{Name: "remote", Role: "team B's worker",
		Target: &team.TargetSpec{Kind: team.TargetHTTP, Protocol: team.ProtocolA2A, URL: urlB, Skill: "worker.act"}}
	teamkit.WriteTeam(t, dirA, team.Team{Name: "team-a", Members: []team.MemberSpec{asker, remote}})
	os.WriteFile(filepath.Join(dirA, "asker.json"), []byte(`{"allowed_targets":["remote"]}`), 0o600)
	ka := teamkit.FilesKept(t, dirA)
	teamkit.Run(t, func(ctx context.Context) error {
		return supervisor.Run(ctx, ka.St, dirA, supervisor.Options{Tick: 20 * time.Millisecond})
	})

	// B's worker waits on its plan; A's call waits with it.
	var plan *protocol.Request
	testkit.WaitFor(t, 20*time.Second, "worker's plan in B", func() bool { plan = kb.PendingPlan("worker"); return plan != nil })
	chainOf := func(k *teamkit.Kept, from string) (c trace.Chain) {
		for _, ch := range k.Chains(t) {
			for _, r := range ch.Rows {
				if r.Call.Caller == from {
					c = ch
				}
			}
		}
		return c
	}
	testkit.WaitFor(t, 20*time.Second, "A's call under way", func() bool { return len(chainOf(ka, "asker").Rows) == 1 })
	if _, err := kb.Decide(plan.ID, protocol.EventApprove, ""); err != nil {
		t.Fatal(err)
	}
	var inA, inB trace.Chain
	testkit.WaitFor(t, 30*time.Second, "the call done in both teams", func() bool {
		inA, inB = chainOf(ka, "asker"), chainOf(kb, "asker")
		return len(inA.Rows) == 1 && inA.Rows[0].Call.Status == protocol.ResultOK && len(inB.Rows) == 1 && inB.Rows[0].Call.Status == protocol.ResultOK
	})
	a, b := inA.Rows[0].Call, inB.Rows[0].Call
	if inA.CorrelationID != inB.CorrelationID || b.ParentRequestID != a.RequestID || a.Remote == "" || b.Target != "worker" {
		t.Fatalf("the chain across the doors: A %+v, B %+v", a, b)
	}
	if !strings.Contains(a.Result, "worker in B did it") {
		t.Errorf("A's result: %s", a.Result)
	}
	var clientSpan, serverSpan tracetest.SpanStub
	testkit.WaitFor(t, 10*time.Second, "both spans exported", func() bool {
		ex.Flush(context.Background())
		for _, s := range mem.GetSpans() {
			switch s.Name {
			case "invoke_agent remote":
				clientSpan = s
			case "invoke_agent worker":
				serverSpan = s
			}
		}
		return clientSpan.Name != "" && serverSpan.Name != ""
	})
	want := trace.TraceID(inA.CorrelationID)
	if clientSpan.SpanContext.TraceID() != want || serverSpan.SpanContext.TraceID() != want ||
		serverSpan.Parent.SpanID() != clientSpan.SpanContext.SpanID() || clientSpan.SpanKind != oteltrace.SpanKindClient {
		t.Errorf("one trace: client %v kind %v, server %v parent %v", clientSpan.SpanContext, clientSpan.SpanKind, serverSpan.SpanContext, serverSpan.Parent)
	}
}

// TestA2APlanExpiryMovesTheTaskOn: a plan that expires unanswered (the
// approval deadline) moves the waiting task on as a decision does:
// WORKING, saying it expired, then INPUT_REQUIRED on the plan the member
// revised; the caller then cancels the task.
func TestA2APlanExpiryMovesTheTaskOn(t *testing.T) {
	tm := a2aTeam()
	tm.Settings.ApprovalDeadline = team.Duration(300 * time.Millisecond)
	teamkit.OnEachStore(t, tm, func(t *testing.T, k *teamkit.Kept) {
		teamkit.Run(t, func(ctx context.Context) error {
			return supervisor.Run(ctx, k.St, k.Dir, supervisor.Options{Tick: 20 * time.Millisecond})
		})
		// From its first plan on, the planner is always waiting for the lead
		// or revising: a task sent now waits, whichever plan is pending.
		testkit.WaitFor(t, 20*time.Second, "the planner's first plan", func() bool { return len(k.Requests()) > 0 })
		c := a2aServer(t, k)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		f := stream(ctx, c, "planner.act")
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("the task saw %s; notes %v; records %+v", f.states(), f.notes, k.Requests())
			}
		})
		testkit.WaitFor(t, 20*time.Second, "a plan that revises an expired one", func() bool {
			p := f.plan(1)
			return p != nil
		})
		first, second := f.plan(0), f.plan(1)
		if second.Revises != first.RequestID {
			t.Errorf("the second plan %+v does not revise the first %s", second, first.RequestID)
		}
		if r := k.Request(first.RequestID); r == nil || r.Status != protocol.RequestExpired {
			t.Errorf("the first plan the task waited on: %+v", r)
		}
		f.mu.Lock()
		notes := strings.Join(f.notes, " | ")
		f.mu.Unlock()
		if !strings.Contains(notes, first.RequestID+" expired") {
			t.Errorf("the WORKING update after the first plan: %q", notes)
		}
		if _, err := c.CancelTask(ctx, f.task); err != nil {
			t.Fatal(err)
		}
		if err := <-f.done; err != nil {
			t.Fatal(err)
		}
		if got := f.states(); !strings.HasPrefix(got, "SUBMITTED WORKING INPUT_REQUIRED WORKING INPUT_REQUIRED") || !strings.HasSuffix(got, "CANCELED") {
			t.Errorf("the task: %s", got)
		}
	})
}
