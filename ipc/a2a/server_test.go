package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/ipc"
	"huddle/ipc/blueprint"
	"huddle/protocol"
)

// gated is a backend whose one skill, "m.act", runs until the test lets
// it: it tells the plan it waits on, then working, then answers.
type gated struct {
	policy *ipc.Policy
	steps  chan Progress // each one told, in order
	answer chan string   // the summary to answer with
	mu     sync.Mutex
	got    []protocol.InvocationRequest
}

func newGated() *gated {
	return &gated{policy: &ipc.Policy{Enabled: true, MaxHops: 2, DefaultTimeoutSec: 30, AllowedTargets: []string{"m"}},
		steps: make(chan Progress), answer: make(chan string)}
}

func (g *gated) Skills() []Skill {
	return []Skill{{ID: "m.act", Name: "act", Description: "m acts"}}
}
func (g *gated) Has(id string) bool { return id == "m.act" }
func (g *gated) Check(id string, hop int) *ipc.Denial {
	return g.policy.Check("m", "act", hop)
}
func (g *gated) Run(ctx context.Context, req protocol.InvocationRequest, tell func(Progress)) protocol.InvocationResult {
	g.mu.Lock()
	g.got = append(g.got, req)
	g.mu.Unlock()
	for {
		select {
		case p := <-g.steps:
			tell(p)
		case s := <-g.answer:
			res, _ := protocol.OK(&req, 1, map[string]any{"summary": s})
			return res
		case <-ctx.Done():
			return protocol.Fail(&req, 0, protocol.ErrIPC, "cancelled", nil)
		}
	}
}

func serve(t *testing.T, b Backend, keys *blueprint.Keys) (*Server, string) {
	t.Helper()
	srv, err := NewServer(ServerConfig{Backend: b, Keys: keys, Name: "test-team"})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { hs.Close(); srv.Close() })
	return srv, hs.URL
}

func userMessage(text string, md map[string]any) SendMessageRequest {
	return SendMessageRequest{Message: &Message{MessageID: "m-1", Role: RoleUser, Parts: []Part{TextPart(text)}}, Metadata: md}
}

// TestStreamFollowsThePlanToTheEnd: a streamed task goes SUBMITTED →
// WORKING → INPUT_REQUIRED (the plan as data, the extension named) →
// WORKING → the artifact → COMPLETED, in that order, on one stream that
// INPUT_REQUIRED does not close.
func TestStreamFollowsThePlanToTheEnd(t *testing.T) {
	g := newGated()
	_, url := serve(t, g, nil)
	c := &Client{URL: url}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var mu sync.Mutex
	var states []string
	var plan *Plan
	var artifact string
	done := make(chan error, 1)
	go func() {
		done <- c.Stream(ctx, MethodStream, userMessage("do it", map[string]any{MetaSkill: "m.act"}), Trace{}, func(ev StreamResponse) error {
			mu.Lock()
			defer mu.Unlock()
			switch {
			case ev.Task != nil:
				states = append(states, string(ev.Task.Status.State))
			case ev.StatusUpdate != nil:
				st := ev.StatusUpdate.Status
				states = append(states, string(st.State))
				if st.State == StateInputRequired {
					if !has(st.Message.Extensions, PlanApprovalExtension) || st.Message.Metadata[PendingApprovalKey] != true {
						t.Errorf("the INPUT_REQUIRED message does not name the extension: %+v", st.Message)
					}
					for _, p := range st.Message.Parts {
						if len(p.Data) > 0 {
							plan = &Plan{}
							json.Unmarshal(p.Data, plan)
						}
					}
				}
			case ev.ArtifactUpdate != nil:
				states = append(states, "artifact")
				artifact = ev.ArtifactUpdate.Artifact.Parts[0].Text
			}
			return nil
		})
	}()
	g.steps <- Progress{Plan: &Plan{RequestID: "pl-000000000001", Member: "m", Plan: "first do A"}}
	g.steps <- Progress{Note: "approved by lead"}
	g.answer <- "did A"
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := "TASK_STATE_SUBMITTED TASK_STATE_WORKING TASK_STATE_INPUT_REQUIRED TASK_STATE_WORKING artifact TASK_STATE_COMPLETED"
	if got := strings.Join(states, " "); got != want {
		t.Errorf("events:\n got %s\nwant %s", got, want)
	}
	if plan == nil || plan.RequestID != "pl-000000000001" || plan.Plan != "first do A" {
		t.Errorf("plan part = %+v", plan)
	}
	if artifact != "did A" {
		t.Errorf("artifact text = %q", artifact)
	}
}

// TestBlockingSendReturnsAtInputRequired: a blocking SendMessage returns
// once the task waits on a plan; a follow-up that tries to decide is
// refused, one that does not is kept; GetTask and ListTasks see it; a
// cancel ends it CANCELED and a second cancel is refused.
func TestBlockingSendReturnsAtInputRequired(t *testing.T) {
	g := newGated()
	_, url := serve(t, g, nil)
	c := &Client{URL: url}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	type sent struct {
		resp SendMessageResponse
		err  error
	}
	out := make(chan sent, 1)
	go func() {
		r, err := c.Send(ctx, userMessage("do it", nil), Trace{}) // the only skill: no skill_id needed
		out <- sent{r, err}
	}()
	g.steps <- Progress{Plan: &Plan{RequestID: "pl-000000000002", Member: "m", Plan: "plan"}}
	s := <-out
	if s.err != nil {
		t.Fatal(s.err)
	}
	task := s.resp.Task
	if task == nil || task.Status.State != StateInputRequired {
		t.Fatalf("blocking send answered %+v", s.resp)
	}
	decide := userMessage("approve", nil)
	decide.Message.TaskID = task.ID
	decide.Message.Metadata = map[string]any{MetaDecision: map[string]any{"action": "accept"}}
	_, err := c.Send(ctx, decide, Trace{})
	var rpc *Error
	if !errors.As(err, &rpc) || rpc.Code != CodeUnsupportedOperation || rpc.Reason() != "DENIED" {
		t.Errorf("a decision from the caller: %v", err)
	}
	note := userMessage("any news?", nil)
	note.Message.TaskID = task.ID
	note.Configuration = &SendMessageConfiguration{ReturnImmediately: true}
	r, err := c.Send(ctx, note, Trace{})
	if err != nil || r.Task.Status.State != StateInputRequired || len(r.Task.History) != 2 {
		t.Errorf("a note to a waiting task: %+v %v", r.Task, err)
	}
	got, err := c.GetTask(ctx, task.ID)
	if err != nil || got.Status.State != StateInputRequired {
		t.Errorf("GetTask: %+v %v", got, err)
	}
	list, err := c.ListTasks(ctx, ListTasksRequest{Status: StateInputRequired})
	if err != nil || list.TotalSize != 1 || list.Tasks[0].ID != task.ID || list.Tasks[0].Artifacts != nil {
		t.Errorf("ListTasks: %+v %v", list, err)
	}
	canceled, err := c.CancelTask(ctx, task.ID)
	if err != nil || canceled.Status.State != StateCanceled {
		t.Fatalf("CancelTask: %+v %v", canceled, err)
	}
	_, err = c.CancelTask(ctx, task.ID)
	if !errors.As(err, &rpc) || rpc.Code != CodeTaskNotCancelable {
		t.Errorf("a second cancel: %v", err)
	}
	// The backend saw its context end: the task's run is over.
	srvTasks := func() int {
		l, _ := c.ListTasks(ctx, ListTasksRequest{Status: StateCanceled})
		return l.TotalSize
	}
	testkit.WaitFor(t, 10*time.Second, "the canceled task listed", func() bool { return srvTasks() == 1 })
}

// TestRefusals: max_hops gives a REJECTED task carrying DENIED; a skill
// that is not there, a missing message id, an old version, an unknown
// method and push notifications are errors of their own.
func TestRefusals(t *testing.T) {
	g := newGated()
	g.policy.AllowedTargets = []string{"m", "other"}
	_, url := serve(t, g, nil)
	c := &Client{URL: url}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := c.Send(ctx, userMessage("deep", map[string]any{MetaSkill: "m.act", MetaHop: 2}), Trace{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Task.Status.State != StateRejected || r.Task.Status.Message.Metadata[PurutoErrorKey] != "DENIED" ||
		!strings.Contains(r.Task.Status.Message.Parts[0].Text, "max_hops") {
		t.Errorf("hop 2 of 2: %+v", r.Task.Status)
	}
	_, err = c.Send(ctx, userMessage("x", map[string]any{MetaSkill: "nobody.act"}), Trace{})
	var rpc *Error
	if !errors.As(err, &rpc) || rpc.Code != CodeInvalidParams || rpc.Reason() != "TARGET_NOT_FOUND" {
		t.Errorf("an unknown skill: %v", err)
	}
	bad := userMessage("x", nil)
	bad.Message.MessageID = ""
	if _, err = c.Send(ctx, bad, Trace{}); !errors.As(err, &rpc) || rpc.Code != CodeInvalidParams {
		t.Errorf("no message id: %v", err)
	}
	post := func(version, body string) map[string]any {
		req, _ := http.NewRequest("POST", url+"/a2a", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if version != "" {
			req.Header.Set(VersionHeader, version)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var out map[string]any
		json.Unmarshal(b, &out)
		return out
	}
	code := func(out map[string]any) float64 {
		e, _ := out["error"].(map[string]any)
		c, _ := e["code"].(float64)
		return c
	}
	if got := code(post("", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{}}`)); got != CodeVersionNotSupported {
		t.Errorf("no A2A-Version (0.3) without a legacy handler: code %v", got)
	}
	if got := code(post("1.0", `{"jsonrpc":"2.0","id":1,"method":"Nope","params":{}}`)); got != CodeMethodNotFound {
		t.Errorf("an unknown method: code %v", got)
	}
	if got := code(post("1.0", `{"jsonrpc":"2.0","id":1,"method":"CreateTaskPushNotificationConfig","params":{"url":"http://x"}}`)); got != CodePushNotSupported {
		t.Errorf("push: code %v", got)
	}
	if got := code(post("1.0", `{"jsonrpc":"2.0","id":1,"method":`)); got != CodeParse {
		t.Errorf("bad JSON: code %v", got)
	}
}

// TestKeys: with keys the card is public and says how to send the key;
// a call without one is 401, with a wrong one 403; a caller sees only its
// own tasks.
func TestKeys(t *testing.T) {
	keys, err := blueprint.ParseKeys([]byte("key-alice alice\nkey-bob bob\n"))
	if err != nil {
		t.Fatal(err)
	}
	g := newGated()
	_, url := serve(t, g, keys)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	anon := &Client{URL: url}
	card, err := anon.Card(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if card.SecuritySchemes["apiKey"].APIKey.Name != "X-API-Key" {
		t.Errorf("card security: %+v", card.SecuritySchemes)
	}
	_, err = anon.Send(ctx, userMessage("x", nil), Trace{})
	if err == nil || !strings.Contains(err.Error(), "API key is required") {
		t.Errorf("no key: %v", err)
	}
	wrong := &Client{URL: url, APIKey: "key-eve"}
	if _, err = wrong.Send(ctx, userMessage("x", nil), Trace{}); err == nil || strings.Contains(err.Error(), "key-eve") {
		t.Errorf("a wrong key: %v", err)
	}
	alice := &Client{URL: url, APIKey: "key-alice"}
	done := make(chan SendMessageResponse, 1)
	go func() {
		r, err := alice.Send(ctx, userMessage("x", nil), Trace{})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	g.answer <- "ok"
	r := <-done
	if r.Task == nil || r.Task.Status.State != StateCompleted || r.Task.Metadata["huddle"].(map[string]any)["caller"] != "alice" {
		t.Fatalf("alice's task: %+v", r.Task)
	}
	bob := &Client{URL: url, APIKey: "key-bob"}
	var rpc *Error
	if _, err := bob.GetTask(ctx, r.Task.ID); !errors.As(err, &rpc) || rpc.Code != CodeTaskNotFound {
		t.Errorf("bob reads alice's task: %v", err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.got) != 1 || g.got[0].Caller != "alice" {
		t.Errorf("the invocation's caller: %+v", g.got)
	}
}

// TestTaskContinuesTheCallersTrace: a message with no contextId, sent
// with a W3C traceparent, is a task in the chain of that trace (its
// contextId corr-TRACEID), its invocation's parent the caller's span.
func TestTaskContinuesTheCallersTrace(t *testing.T) {
	g := newGated()
	_, url := serve(t, g, nil)
	const tid, sid = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	body := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}]},"configuration":{"returnImmediately":true}}}`
	req, _ := http.NewRequest("POST", url+"/a2a", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(VersionHeader, Version)
	req.Header.Set("traceparent", "00-"+tid+"-"+sid+"-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Result SendMessageResponse `json:"result"`
	}
	json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	if out.Result.Task == nil || out.Result.Task.ContextID != "corr-"+tid {
		t.Fatalf("the task: %+v", out.Result.Task)
	}
	testkit.WaitFor(t, 10*time.Second, "the invocation", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return len(g.got) == 1
	})
	g.mu.Lock()
	inv := g.got[0]
	g.mu.Unlock()
	if inv.CorrelationID != "corr-"+tid || inv.ParentRequestID != "req-"+sid || inv.RequestID != out.Result.Task.ID {
		t.Errorf("the invocation: %+v", inv)
	}
	g.answer <- "done"
}
