package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"huddle/ipc/a2a"
	"huddle/ipc/trace"
	"huddle/protocol"
	"huddle/store"
	"huddle/team"
	"huddle/team/serve"
)

// Config sets up a Door.
type Config struct {
	// Store keeps the team; Backend runs the calls (the team's HTTP
	// callers' policy governs them, as huddle serve's).
	Store   store.Store
	Backend *serve.A2ABackend
	// Deciders are the callers the lead lets approve and reject plans and
	// permissions through the door: none by default.
	Deciders []string
	// Version is huddle's, as the server names itself.
	Version string
	// Keep is how long an ended task stays answerable, unless the client
	// asks for less; default 1h.
	Keep time.Duration
	// Log gets what the SDK logs.
	Log *slog.Logger
}

// Door is the team as MCP tools: one MCP server per caller, so that a
// caller the lead lets decide sees approve and reject and no other does.
type Door struct {
	cfg   Config
	team  *team.Team
	ctx   context.Context
	end   context.CancelFunc
	wg    sync.WaitGroup
	tasks tasks

	mu      sync.Mutex
	servers map[string]*mcp.Server
}

// New makes a door on the team cfg.Store keeps; Close it when done.
func New(ctx context.Context, cfg Config) (*Door, error) {
	if cfg.Store == nil || cfg.Backend == nil {
		return nil, errors.New("mcp: a door needs a store and a backend")
	}
	t, err := team.LoadFrom(ctx, cfg.Store)
	if err != nil {
		return nil, err
	}
	if cfg.Keep <= 0 {
		cfg.Keep = time.Hour
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	dctx, end := context.WithCancel(context.Background())
	d := &Door{cfg: cfg, team: t, ctx: dctx, end: end, servers: map[string]*mcp.Server{}}
	d.wg.Add(1)
	go d.janitor()
	return d, nil
}

// Close cancels the tasks under way and waits for them.
func (d *Door) Close() error {
	d.end()
	d.wg.Wait()
	return nil
}

func (d *Door) janitor() {
	defer d.wg.Done()
	tick := time.NewTicker(max(d.cfg.Keep/10, time.Second))
	defer tick.Stop()
	for {
		select {
		case <-d.ctx.Done():
			return
		case now := <-tick.C:
			d.tasks.forget(now)
		}
	}
}

// mayDecide reports whether the lead lets caller decide.
func (d *Door) mayDecide(caller string) bool { return slices.Contains(d.cfg.Deciders, caller) }

// Server is caller's MCP server, made once.
func (d *Door) Server(caller string) *mcp.Server {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.servers[caller]; ok {
		return s
	}
	instructions := "The huddle team " + d.team.Name + ": call_action delegates to a member's action (a long call may be an MCP task; " +
		"it is input_required while the member's plan waits for huddle's lead). members, requests and request read the team; send_message writes to a member."
	if d.mayDecide(caller) {
		instructions += " approve and reject decide a pending plan or permission as the lead allowed this caller to."
	} else {
		instructions += " Only huddle's lead decides plans: this caller may not."
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "huddle", Title: "huddle team " + d.team.Name, Version: d.cfg.Version},
		&mcp.ServerOptions{Instructions: instructions, Logger: d.cfg.Log})
	d.addTools(s, caller)
	d.addTaskMethods(s, caller)
	s.AddReceivingMiddleware(d.middleware(caller))
	d.servers[caller] = s
	return s
}

// The tools' names.
const (
	toolMembers = "members"
	toolSend    = "send_message"
	toolCall    = "call_action"
	toolList    = "requests"
	toolRead    = "request"
	toolApprove = "approve"
	toolReject  = "reject"
)

type (
	noArgs   struct{}
	sendArgs struct {
		To   string `json:"to" jsonschema:"the member to write to"`
		Text string `json:"text" jsonschema:"what to say"`
	}
	callArgs struct {
		Member        string `json:"member" jsonschema:"the member whose action to call"`
		Action        string `json:"action" jsonschema:"the action (members lists each member's)"`
		Prompt        string `json:"prompt" jsonschema:"what to ask"`
		TimeoutSec    int    `json:"timeout_sec,omitempty" jsonschema:"seconds the call may take once it runs (default: the policy's)"`
		CorrelationID string `json:"correlation_id,omitempty" jsonschema:"a chain to join (default: a new one)"`
		Hop           int    `json:"hop,omitempty" jsonschema:"the chain's depth of this call (0: the first)"`
	}
	listArgs struct {
		All bool `json:"all,omitempty" jsonschema:"every request not archived, decided ones too (default: pending only)"`
	}
	idArgs struct {
		ID string `json:"id" jsonschema:"the request's id (pl-…, pm-…, sd-…, su-…, rv-…)"`
	}
	decideArgs struct {
		ID       string `json:"id" jsonschema:"the pending request's id"`
		Feedback string `json:"feedback,omitempty" jsonschema:"what to change, or why (required to reject)"`
	}
)

func ptr[T any](v T) *T { return &v }

func (d *Door) addTools(s *mcp.Server, caller string) {
	mcp.AddTool(s, &mcp.Tool{Name: toolMembers, Title: "Members",
		Description: "The team's members: role, status, what each is doing, and the actions a caller may call.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
			out, err := d.members(ctx)
			return jsonResult(out, err)
		})
	mcp.AddTool(s, &mcp.Tool{Name: toolSend, Title: "Send a message",
		Description: "Write a message to a member's inbox (or the lead's, to: lead), from this caller.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(false)}},
		func(ctx context.Context, _ *mcp.CallToolRequest, a sendArgs) (*mcp.CallToolResult, any, error) {
			if err := team.SendFromOutside(ctx, d.cfg.Store, d.team, caller, a.To, a.Text); err != nil {
				return errorResult(err.Error()), nil, nil
			}
			return jsonResult(map[string]any{"sent": true, "from": caller, "to": a.To}, nil)
		})
	mcp.AddTool(s, &mcp.Tool{Name: toolCall, Title: "Call a member's action",
		Description: "Delegate to a member's action (as huddle call does): the answer is its result. The call waits while the member's plan waits for huddle's lead; " +
			"as an MCP task it is input_required then, with the plan in its status message. The team's policy decides who may be called, at what hop.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(true)}},
		func(ctx context.Context, req *mcp.CallToolRequest, a callArgs) (*mcp.CallToolResult, any, error) {
			inv, err := d.invocation(caller, a, req)
			if err != nil {
				return errorResult(err.Error()), nil, nil
			}
			return d.runCall(ctx, inv, req, func(string, string) {}), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: toolList, Title: "Requests",
		Description: "The team's pending requests (plans, permissions, shutdowns, setups, reviews), oldest first; all: decided ones not archived too.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}},
		func(ctx context.Context, _ *mcp.CallToolRequest, a listArgs) (*mcp.CallToolResult, any, error) {
			out, err := d.requests(ctx, a.All)
			return jsonResult(out, err)
		})
	mcp.AddTool(s, &mcp.Tool{Name: toolRead, Title: "A request",
		Description: "One request's record: what it asks (a plan's text, a permission's use), its status, its history.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}},
		func(ctx context.Context, _ *mcp.CallToolRequest, a idArgs) (*mcp.CallToolResult, any, error) {
			if err := protocol.ValidateID(a.ID); err != nil {
				return jsonResult(nil, fmt.Errorf("id: %w", err))
			}
			r, err := d.cfg.Store.Request(ctx, a.ID)
			return jsonResult(r, err)
		})
	if !d.mayDecide(caller) {
		return
	}
	decide := func(ev protocol.RequestEvent) func(context.Context, *mcp.CallToolRequest, decideArgs) (*mcp.CallToolResult, any, error) {
		return func(ctx context.Context, _ *mcp.CallToolRequest, a decideArgs) (*mcp.CallToolResult, any, error) {
			if ev == protocol.EventReject && a.Feedback == "" {
				return errorResult("feedback: say what to change or why not"), nil, nil
			}
			r, err := team.Decide(ctx, d.cfg.Store, a.ID, ev, a.Feedback, "mcp:"+caller)
			return jsonResult(r, err)
		}
	}
	mcp.AddTool(s, &mcp.Tool{Name: toolApprove, Title: "Approve",
		Description: "Approve a pending plan, or allow a pending permission, as the lead let this caller do (the record says mcp:" + caller + " decided).",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(false)}}, decide(protocol.EventApprove))
	mcp.AddTool(s, &mcp.Tool{Name: toolReject, Title: "Reject",
		Description: "Reject a pending plan (the member revises it with the feedback), or deny a permission, as the lead let this caller do.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(false)}}, decide(protocol.EventReject))
}

// jsonResult is v as the tool's answer: JSON text and structured content;
// an error is a tool error (isError) saying it.
func jsonResult(v any, err error) (*mcp.CallToolResult, any, error) {
	if err != nil {
		return errorResult(err.Error()), nil, nil
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return errorResult(err.Error()), nil, nil
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: structured(v)}, nil, nil
}

// structured is v as an object, as structuredContent must be.
func structured(v any) any {
	b, _ := json.Marshal(v)
	var obj map[string]any
	if json.Unmarshal(b, &obj) == nil {
		return obj
	}
	return map[string]any{"items": json.RawMessage(b)}
}

func errorResult(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}

// member is one member as the members tool shows it.
type member struct {
	Name     string   `json:"name"`
	Role     string   `json:"role,omitempty"`
	Kind     string   `json:"kind"`
	Status   string   `json:"status"`
	Activity string   `json:"activity,omitempty"`
	Since    string   `json:"since,omitempty"`
	Actions  []string `json:"actions,omitempty"`
}

func (d *Door) members(ctx context.Context) (map[string]any, error) {
	states, _, err := d.cfg.Store.Members(ctx, 15*time.Second)
	if err != nil {
		return nil, err
	}
	byName := map[string]store.MemberState{}
	for _, s := range states {
		byName[s.Name] = s
	}
	skills := map[string][]string{}
	for _, sk := range d.cfg.Backend.Skills() {
		m, a, _ := cutSkill(sk.ID)
		skills[m] = append(skills[m], a)
	}
	var out []member
	for _, spec := range d.team.Members {
		m := member{Name: spec.Name, Role: spec.Role, Kind: spec.Runtime.Kind, Status: "not started", Actions: skills[spec.Name]}
		if spec.Target != nil {
			m.Kind, m.Status = "target:"+spec.Target.Kind, "called, not run"
		}
		if s, ok := byName[spec.Name]; ok {
			m.Status, m.Activity, m.Since = string(s.Status), s.Activity, stamp(s.Since)
			if s.Lost {
				m.Status = "lost"
			}
		}
		out = append(out, m)
	}
	return map[string]any{"team": d.team.Name, "members": out}, nil
}

func cutSkill(id string) (string, string, bool) {
	for i := range len(id) {
		if id[i] == '.' {
			return id[:i], id[i+1:], true
		}
	}
	return id, "", false
}

func (d *Door) requests(ctx context.Context, all bool) (map[string]any, error) {
	live, _, err := d.cfg.Store.LiveRequests(ctx)
	if err != nil {
		return nil, err
	}
	out := []map[string]any{}
	for _, r := range live {
		if !all && r.Status != protocol.RequestPending {
			continue
		}
		row := map[string]any{"id": r.ID, "kind": r.Kind, "from": r.From, "to": r.To, "status": r.Status,
			"created": stamp(r.Created), "deadline": stamp(r.Deadline)}
		switch {
		case r.Plan != "":
			row["plan"] = r.Plan
		case r.Permission != nil:
			row["permission"] = r.Permission.Summary
		case r.Reason != "":
			row["reason"] = r.Reason
		}
		out = append(out, row)
	}
	return map[string]any{"requests": out}, nil
}

// invocation is the call a call_action asks for, as caller; its chain
// continues the HTTP request's traceparent where the arguments are silent.
func (d *Door) invocation(caller string, a callArgs, req *mcp.CallToolRequest) (protocol.InvocationRequest, error) {
	inv := protocol.InvocationRequest{RequestID: protocol.NewInvocationID(), CorrelationID: a.CorrelationID, Caller: caller,
		Target: a.Member, Action: a.Action, Prompt: a.Prompt, TimeoutSec: a.TimeoutSec, Hop: a.Hop}
	switch {
	case a.Member == "" || a.Action == "":
		return inv, errors.New("member and action are required (the members tool lists each member's actions)")
	case a.Prompt == "":
		return inv, errors.New("prompt is required")
	case a.TimeoutSec < 0 || a.Hop < 0:
		return inv, errors.New("timeout_sec and hop must not be negative")
	}
	if inv.CorrelationID != "" {
		if err := protocol.ValidateID(inv.CorrelationID); err != nil {
			return inv, fmt.Errorf("correlation_id: %w", err)
		}
	}
	if h := traceHeader(req); h != nil {
		if sc, ok := trace.Traceparent(h); ok {
			if inv.CorrelationID == "" {
				inv.CorrelationID = trace.CorrelationIDFor(sc.TraceID())
			}
			if trace.TraceID(inv.CorrelationID) == sc.TraceID() {
				inv.ParentRequestID = trace.RequestIDFor(sc.SpanID())
			}
		}
	}
	if inv.CorrelationID == "" {
		inv.CorrelationID = protocol.NewCorrelationID()
	}
	return inv, nil
}

// traceHeader is where a call's W3C trace context is: the HTTP request's
// traceparent, else the _meta's (the way MCP carries it over stdio).
func traceHeader(req *mcp.CallToolRequest) http.Header {
	if req == nil {
		return nil
	}
	if req.Extra != nil && req.Extra.Header.Get("traceparent") != "" {
		return req.Extra.Header
	}
	if req.Params == nil {
		return nil
	}
	h := http.Header{}
	for _, k := range []string{"traceparent", "tracestate"} {
		if v, ok := req.Params.Meta[k].(string); ok {
			h.Set(k, v)
		}
	}
	if h.Get("traceparent") == "" {
		return nil
	}
	return h
}

// runCall runs inv behind its member's plan gate: the policy first (a
// refusal is DENIED at once), then the backend, telling where the call
// stands (waiting on a plan, working) and, with a progress token, the
// client. The answer is the result's summary and the result itself, or
// the Puruto error (isError).
func (d *Door) runCall(ctx context.Context, inv protocol.InvocationRequest, req *mcp.CallToolRequest, tell func(status, message string)) *mcp.CallToolResult {
	skill := inv.Target + "." + inv.Action
	if !d.cfg.Backend.Has(skill) {
		return errorResult(fmt.Sprintf("TARGET_NOT_FOUND: no action %s here (the members tool lists them)", skill))
	}
	if den := d.cfg.Backend.Check(skill, inv.Hop); den != nil {
		return callResult(protocol.Fail(&inv, 0, protocol.ErrDenied, den.Message, map[string]any{"reason": den.Reason, "hop": inv.Hop}))
	}
	var token any
	if req != nil && req.Params != nil {
		token = req.Params.GetProgressToken()
	}
	step := 0.0
	progress := func(p a2a.Progress) {
		status, msg := statusWorking, p.Note
		if p.Plan != nil {
			status = statusInputRequired
			msg = fmt.Sprintf("waiting for huddle's lead to decide %s's plan %s (huddle approve %s): %s", p.Plan.Member, p.Plan.RequestID, p.Plan.RequestID, p.Plan.Plan)
		}
		tell(status, msg)
		if token != nil && req.Session != nil {
			step++
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: step, Message: msg}) // a client gone: nobody to tell
		}
	}
	return callResult(d.cfg.Backend.Run(ctx, inv, progress))
}

// callResult is an invocation's result as a tool's: ok is its summary and
// the result; an error is isError with the Puruto code first.
func callResult(res protocol.InvocationResult) *mcp.CallToolResult {
	out := map[string]any{"status": res.Status, "request_id": res.RequestID, "correlation_id": res.CorrelationID}
	if res.Status == protocol.ResultOK {
		var v any
		_ = json.Unmarshal(res.Result, &v)
		out["result"] = v
		text := string(res.Result)
		if obj, ok := v.(map[string]any); ok {
			if s, ok := obj["summary"].(string); ok && s != "" {
				text = s
			}
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: out}
	}
	e := res.Error
	if e == nil {
		e = &protocol.InvocationError{Code: protocol.ErrIPC, Message: "the call failed without an error"}
	}
	var details any
	_ = json.Unmarshal(e.Details, &details)
	out["error"] = map[string]any{"code": e.Code, "message": e.Message, "details": details}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(e.Code) + ": " + e.Message}}, StructuredContent: out}
}

// addTaskMethods serves tasks/get, tasks/result, tasks/list and
// tasks/cancel, for caller's tasks only.
func (d *Door) addTaskMethods(s *mcp.Server, caller string) {
	must := func(err error) {
		if err != nil {
			panic(err) // a method name the SDK calls standard: a bug here
		}
	}
	must(mcp.AddReceivingCustomMethod(s, "tasks/get", func(_ context.Context, _ *mcp.ServerSession, p *taskIDParams) (*taskResult, error) {
		t, err := d.tasks.get(caller, p)
		if err != nil {
			return nil, err
		}
		return &taskResult{wireTask: t.wire()}, nil
	}))
	must(mcp.AddReceivingCustomMethod(s, "tasks/result", func(ctx context.Context, _ *mcp.ServerSession, p *taskIDParams) (*mcp.CallToolResult, error) {
		t, err := d.tasks.get(caller, p)
		if err != nil {
			return nil, err
		}
		select {
		case <-t.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		t.mu.Lock()
		res := *t.result
		t.mu.Unlock()
		res.Meta = mcp.Meta{relatedTaskKey: map[string]any{"taskId": t.id}}
		return &res, nil
	}))
	must(mcp.AddReceivingCustomMethod(s, "tasks/list", func(_ context.Context, _ *mcp.ServerSession, p *listParams) (*listResult, error) {
		cursor := ""
		if p != nil { // params are optional
			cursor = p.Cursor
		}
		list, next, err := d.tasks.list(caller, cursor)
		if err != nil {
			return nil, err
		}
		return &listResult{Tasks: list, NextCursor: next}, nil
	}))
	must(mcp.AddReceivingCustomMethod(s, "tasks/cancel", func(_ context.Context, _ *mcp.ServerSession, p *taskIDParams) (*taskResult, error) {
		t, err := d.tasks.get(caller, p)
		if err != nil {
			return nil, err
		}
		if !t.move(statusCancelled, "cancelled by "+caller, errorResult("IPC_ERROR: the task was cancelled by "+caller)) {
			return nil, invalidParams("task %s has ended: %s", t.id, t.wire().Status)
		}
		t.cancel()
		return &taskResult{wireTask: t.wire()}, nil
	}))
}

// middleware adds what the SDK lacks: the tasks capability on initialize,
// execution.taskSupport on tools/list, and a task for a tools/call that
// asks for one.
func (d *Door) middleware(caller string) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case "initialize":
				res, err := next(ctx, method, req)
				if ir, ok := res.(*mcp.InitializeResult); ok && err == nil {
					return &initResult{r: ir}, nil
				}
				return res, err
			case "tools/list":
				res, err := next(ctx, method, req)
				if lr, ok := res.(*mcp.ListToolsResult); ok && err == nil {
					return &toolsResult{r: lr, support: map[string]string{toolCall: "optional"}}, nil
				}
				return res, err
			case "tools/call":
				if cr, ok := req.(*mcp.CallToolRequest); ok {
					if spec, asked := cr.Params.Meta[taskKey]; asked {
						return d.startTask(caller, cr, spec)
					}
				}
			}
			return next(ctx, method, req)
		}
	}
}

// startTask makes a task of a call_action and answers its CreateTaskResult;
// another tool is not a task's (-32601, as the spec says).
func (d *Door) startTask(caller string, cr *mcp.CallToolRequest, spec any) (mcp.Result, error) {
	if cr.Params.Name != toolCall {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("tool %s does not run as a task (execution.taskSupport forbidden)", cr.Params.Name)}
	}
	var a callArgs
	if err := json.Unmarshal(cr.Params.Arguments, &a); err != nil {
		return nil, invalidParams("arguments: %v", err)
	}
	inv, err := d.invocation(caller, a, cr)
	if err != nil {
		return nil, invalidParams("%v", err)
	}
	ttl := d.cfg.Keep
	if m, ok := spec.(map[string]any); ok {
		if ms, ok := m["ttl"].(float64); ok && ms > 0 && time.Duration(ms)*time.Millisecond < ttl {
			ttl = time.Duration(ms) * time.Millisecond
		}
	}
	now := time.Now()
	ctx, cancel := context.WithCancel(d.ctx)
	t := &task{id: inv.RequestID, owner: caller, created: now, ttl: ttl, cancel: cancel, status: statusWorking, updated: now, done: make(chan struct{})}
	d.tasks.add(t)
	created := t.wire() // working: what a task begins as, whatever the run does next
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer cancel()
		res := d.runCall(ctx, inv, nil, func(status, msg string) { t.move(status, msg, nil) })
		status, msg := statusCompleted, ""
		if res.IsError {
			status = statusFailed
			if tc, ok := res.Content[0].(*mcp.TextContent); ok {
				msg = tc.Text
			}
		}
		t.move(status, msg, res)
	}()
	return &createTaskResult{Task: created,
		ResultBase: mcp.ResultBase{Meta: mcp.Meta{"io.modelcontextprotocol/model-immediate-response": fmt.Sprintf(
			"The call of %s.%s runs as task %s; it waits while %s's plan waits for huddle's lead.", inv.Target, inv.Action, t.id, inv.Target)}}}, nil
}
