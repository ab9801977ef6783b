package a2a

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strings"
	"time"

	"huddle/ipc/trace"
	"huddle/protocol"
)

// The metadata keys huddle reads from a SendMessageRequest's metadata, or
// its message's (the request's win): which skill, who calls (without
// keys), the chain's depth and parent, the timeout.
const (
	MetaSkill   = "skill_id"
	MetaCaller  = "caller"
	MetaHop     = "hop"
	MetaParent  = "parent_request_id"
	MetaTimeout = "timeout_sec"
	// MetaDecision is the key a message would carry to decide a plan
	// (a2aproject/A2A#1976's shape): refused, the lead decides.
	MetaDecision = PlanApprovalExtension + "/decision"
)

// send starts a task for a new message, or adds a message to a task that
// has not ended (a follow-up: kept in its history, it changes nothing, for
// the plan it waits on is huddle's lead's to decide).
func (s *Server) send(caller string, p *SendMessageRequest, h http.Header) (*entry, *Error) {
	m := p.Message
	if m == nil {
		return nil, errInvalidParams("message", "is required")
	}
	if m.MessageID == "" {
		return nil, errInvalidParams("message.messageId", "is required")
	}
	if m.Role != RoleUser {
		return nil, errInvalidParams("message.role", fmt.Sprintf("want %s, got %q", RoleUser, m.Role))
	}
	if len(m.Parts) == 0 {
		return nil, errInvalidParams("message.parts", "at least one part is required")
	}
	if m.TaskID != "" {
		return s.followUp(caller, m)
	}
	return s.start(caller, p, h)
}

// followUp is a message sent to an existing task.
func (s *Server) followUp(caller string, m *Message) (*entry, *Error) {
	t, e := s.lookup(caller, m.TaskID)
	if e != nil {
		return nil, e
	}
	if m.ContextID != "" && m.ContextID != t.task.ContextID {
		return nil, errInvalidParams("message.contextId", fmt.Sprintf("task %s is in context %s, not %s", m.TaskID, t.task.ContextID, m.ContextID))
	}
	if st := t.state(); st.Terminal() {
		return nil, errUnsupported(fmt.Sprintf("task %s is %s: it takes no more messages", m.TaskID, st))
	}
	if _, ok := metaValue(nil, m, MetaDecision); ok {
		return nil, rpcError(CodeUnsupportedOperation, string(protocol.ErrDenied),
			"a plan is decided by huddle's lead (huddle approve, huddle reject, or the screen), never by the caller",
			map[string]any{"reason": "lead_decides"})
	}
	t.addHistory(*m)
	return t, nil
}

// start makes a task of a new message and runs its invocation.
func (s *Server) start(caller string, p *SendMessageRequest, h http.Header) (*entry, *Error) {
	m := p.Message
	skill, e := s.skillOf(p)
	if e != nil {
		return nil, e
	}
	inv, e := invocationOf(caller, p, skill)
	if e != nil {
		return nil, e
	}
	ctx, inv := continueTrace(s.ctx, h, inv)
	now := time.Now()
	task := Task{ID: inv.RequestID, ContextID: inv.CorrelationID,
		Status:   TaskStatus{State: StateSubmitted, Timestamp: timestamp(now)},
		History:  []Message{withIDs(*m, inv.RequestID, inv.CorrelationID)},
		Metadata: map[string]any{"huddle": invocationMeta(inv)}}
	if d := s.cfg.Backend.Check(skill, inv.Hop); d != nil {
		// Refused by the policy: the task is made REJECTED, so the answer
		// is a task like any other and carries Puruto's DENIED.
		res := protocol.Fail(&inv, 0, protocol.ErrDenied, d.Message, map[string]any{"reason": d.Reason, "hop": inv.Hop})
		t := newEntry(inv.Caller, task, now)
		t.setStatus(TaskStatus{State: StateRejected, Message: errorMessage(t, res.Error)}, now)
		s.remember(t)
		return t, nil
	}
	s.mu.Lock()
	if s.running >= s.cfg.MaxRunning {
		s.mu.Unlock()
		return nil, rpcError(CodeInternal, string(protocol.ErrIPC),
			fmt.Sprintf("busy: %d tasks are under way, the most this server runs; send again once one ends", s.cfg.MaxRunning),
			map[string]any{"busy": true})
	}
	if _, dup := s.tasks[inv.RequestID]; dup {
		s.mu.Unlock()
		return nil, errInvalidParams("metadata", "a task with this id exists")
	}
	t := newEntry(inv.Caller, task, now)
	ctx, cancel := context.WithCancel(ctx)
	t.cancel = cancel
	s.tasks[t.task.ID] = t
	s.running++
	s.mu.Unlock()
	s.wg.Add(1)
	go s.run(ctx, t, inv)
	return t, nil
}

func (s *Server) remember(t *entry) {
	s.mu.Lock()
	s.tasks[t.task.ID] = t
	s.mu.Unlock()
}

// withIDs is a client's message as the task's history keeps it.
func withIDs(m Message, taskID, contextID string) Message {
	m.TaskID, m.ContextID = taskID, contextID
	return m
}

// invocationMeta is what a task's metadata says of its invocation.
func invocationMeta(inv protocol.InvocationRequest) map[string]any {
	md := map[string]any{"request_id": inv.RequestID, "correlation_id": inv.CorrelationID, "caller": inv.Caller,
		"skill_id": inv.Target + "." + inv.Action, "hop": inv.Hop, "timeout_sec": inv.TimeoutSec}
	if inv.ParentRequestID != "" {
		md["parent_request_id"] = inv.ParentRequestID
	}
	return md
}

// skillOf is the skill a message asks for: metadata skill_id, else the
// only skill there is.
func (s *Server) skillOf(p *SendMessageRequest) (string, *Error) {
	v, ok := metaValue(p.Metadata, p.Message, MetaSkill)
	if !ok {
		skills := s.cfg.Backend.Skills()
		if len(skills) == 1 {
			return skills[0].ID, nil
		}
		return "", errInvalidParams("metadata."+MetaSkill, fmt.Sprintf("name the skill to run (one of %s: the Agent Card's skill ids)", skillList(skills)))
	}
	id, isString := v.(string)
	if !isString || id == "" {
		return "", errInvalidParams("metadata."+MetaSkill, "want a skill id, a string")
	}
	if !s.cfg.Backend.Has(id) {
		return "", rpcError(CodeInvalidParams, string(protocol.ErrTargetNotFound), fmt.Sprintf("no skill %q here (one of %s)", id, skillList(s.cfg.Backend.Skills())),
			map[string]any{"skill_id": id})
	}
	return id, nil
}

func skillList(skills []Skill) string {
	ids := make([]string, 0, len(skills))
	for _, sk := range skills {
		ids = append(ids, sk.ID)
	}
	sort.Strings(ids)
	if len(ids) == 0 {
		return "none: the policy allows no skill"
	}
	return strings.Join(ids, ", ")
}

// metaValue reads key from the request's metadata, else the message's.
func metaValue(reqMeta map[string]any, m *Message, key string) (any, bool) {
	if v, ok := reqMeta[key]; ok {
		return v, true
	}
	if m != nil {
		if v, ok := m.Metadata[key]; ok {
			return v, true
		}
	}
	return nil, false
}

// invocationOf is the invocation a new message asks for: the caller (the
// key's owner, or the metadata's caller without keys), the chain (the
// message's contextId), the hop, the parent, the timeout and the prompt.
func invocationOf(caller string, p *SendMessageRequest, skill string) (protocol.InvocationRequest, *Error) {
	m := p.Message
	member, action, _ := strings.Cut(skill, ".")
	inv := protocol.InvocationRequest{RequestID: protocol.NewInvocationID(), Target: member, Action: action, Caller: caller}
	if v, ok := metaValue(p.Metadata, m, MetaCaller); ok {
		named, _ := v.(string)
		if err := protocol.ValidateName(named); err != nil {
			return inv, errInvalidParams("metadata."+MetaCaller, err.Error())
		}
		if caller != "" && named != caller {
			return inv, rpcError(CodeInvalidParams, string(protocol.ErrDenied), "the API key belongs to another caller",
				map[string]any{"reason": "caller_mismatch"})
		}
		inv.Caller = named
	}
	if inv.Caller == "" {
		inv.Caller = DefaultCaller
	}
	if m.ContextID != "" {
		if err := protocol.ValidateID(m.ContextID); err != nil {
			return inv, errInvalidParams("message.contextId", err.Error()+" (huddle's correlation ids: letters, digits, . _ -)")
		}
		inv.CorrelationID = m.ContextID
	}
	for _, f := range []struct {
		key string
		dst *int
	}{{MetaHop, &inv.Hop}, {MetaTimeout, &inv.TimeoutSec}} {
		v, ok := metaValue(p.Metadata, m, f.key)
		if !ok {
			continue
		}
		n, isNum := v.(float64)
		if !isNum || n < 0 || n != math.Trunc(n) || n > math.MaxInt32 {
			return inv, errInvalidParams("metadata."+f.key, "want a whole number, not negative")
		}
		*f.dst = int(n)
	}
	if v, ok := metaValue(p.Metadata, m, MetaParent); ok {
		parent, _ := v.(string)
		if err := protocol.ValidateID(parent); err != nil {
			return inv, errInvalidParams("metadata."+MetaParent, err.Error())
		}
		inv.ParentRequestID = parent
	}
	inv.Prompt = promptOf(m.Parts)
	return inv, nil
}

// promptOf is what the parts ask: their text, and any data as JSON, a
// line each.
func promptOf(parts []Part) string {
	var lines []string
	for _, p := range parts {
		switch {
		case p.Text != "":
			lines = append(lines, p.Text)
		case len(p.Data) > 0:
			lines = append(lines, string(p.Data))
		case p.URL != "":
			lines = append(lines, p.URL)
		}
	}
	return strings.Join(lines, "\n")
}

// continueTrace continues the W3C traceparent the request came with where
// the message is silent: no contextId, the chain is the traceparent's
// trace; no parent, the traceparent's span is it (as huddle serve does,
// docs/ARCHITECTURE.md, "The HTTP protocol (Blueprint)").
func continueTrace(ctx context.Context, h http.Header, inv protocol.InvocationRequest) (context.Context, protocol.InvocationRequest) {
	sc, ok := trace.Traceparent(h)
	if !ok {
		if inv.CorrelationID == "" {
			inv.CorrelationID = protocol.NewCorrelationID()
		}
		return ctx, inv
	}
	if inv.CorrelationID == "" {
		inv.CorrelationID = trace.CorrelationIDFor(sc.TraceID())
	}
	if trace.TraceID(inv.CorrelationID) != sc.TraceID() {
		return ctx, inv
	}
	if inv.ParentRequestID == "" {
		inv.ParentRequestID = trace.RequestIDFor(sc.SpanID())
	}
	return trace.ContinueTrace(ctx, sc), inv
}

// run runs a task's invocation through the backend and ends the task with
// its result: COMPLETED with the result as an artifact, FAILED with
// Puruto's error, or CANCELED.
func (s *Server) run(ctx context.Context, t *entry, inv protocol.InvocationRequest) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		s.running--
		s.mu.Unlock()
		t.mu.Lock()
		cancel := t.cancel
		t.mu.Unlock()
		cancel()
	}()
	t.setStatus(TaskStatus{State: StateWorking}, time.Now())
	tell := func(p Progress) { s.progress(t, p) }
	res := s.cfg.Backend.Run(ctx, inv, tell)
	now := time.Now()
	switch {
	case res.Status == protocol.ResultOK:
		t.addArtifact(resultArtifact(t, res), now)
		t.setStatus(TaskStatus{State: StateCompleted}, now)
	case s.ctx.Err() != nil:
		t.setStatus(TaskStatus{State: StateFailed, Message: agentMessage(t, TextPart("the server stopped while the task ran"))}, now)
	default:
		t.setStatus(TaskStatus{State: StateFailed, Message: errorMessage(t, res.Error)}, now)
	}
}

// progress moves a running task as the backend tells: INPUT_REQUIRED on a
// plan, WORKING again once it is decided.
func (s *Server) progress(t *entry, p Progress) {
	now := time.Now()
	if p.Plan != nil {
		t.mu.Lock()
		same := t.waitingOn == p.Plan.RequestID && t.task.Status.State == StateInputRequired
		t.waitingOn = p.Plan.RequestID
		t.mu.Unlock()
		if same {
			return
		}
		text := fmt.Sprintf("%s's plan %s waits for huddle's lead (huddle approve %s, or the screen)", p.Plan.Member, p.Plan.RequestID, p.Plan.RequestID)
		msg := agentMessage(t, TextPart(text), DataPart(p.Plan))
		msg.Extensions = []string{PlanApprovalExtension}
		msg.Metadata = map[string]any{PendingApprovalKey: true}
		t.setStatus(TaskStatus{State: StateInputRequired, Message: msg}, now)
		return
	}
	t.mu.Lock()
	t.waitingOn = ""
	t.mu.Unlock()
	var msg *Message
	if p.Note != "" {
		msg = agentMessage(t, TextPart(p.Note))
	}
	t.setStatus(TaskStatus{State: StateWorking, Message: msg}, now)
}

// resultArtifact is an ok result as the task's artifact: its summary as
// text when it has one, and the whole result as data.
func resultArtifact(t *entry, res protocol.InvocationResult) Artifact {
	var parts []Part
	var obj map[string]any
	if json.Unmarshal(res.Result, &obj) == nil {
		if s, ok := obj["summary"].(string); ok && s != "" {
			parts = append(parts, TextPart(s))
		}
	}
	parts = append(parts, Part{Data: res.Result, MediaType: "application/json"})
	return Artifact{ArtifactID: "result-" + t.task.ID, Name: "result",
		Description: fmt.Sprintf("the answer of %s (request %s)", t.task.Metadata["huddle"].(map[string]any)["skill_id"], res.RequestID),
		Parts:       parts}
}

// errorMessage is Puruto's error as a task's status message: its text,
// and the error itself as data, its code in the metadata.
func errorMessage(t *entry, e *protocol.InvocationError) *Message {
	if e == nil {
		return agentMessage(t, TextPart("the call failed without an error"))
	}
	var details any
	_ = json.Unmarshal(e.Details, &details) // none: null
	msg := agentMessage(t, TextPart(string(e.Code)+": "+e.Message),
		DataPart(map[string]any{"code": e.Code, "message": e.Message, "details": details}))
	msg.Metadata = map[string]any{PurutoErrorKey: string(e.Code)}
	return msg
}
