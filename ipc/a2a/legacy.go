package a2a

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"

	sdk "github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
)

// The v0.3 binding is served by the official Go SDK (a2a-go v0.3.3, the
// newest there is, which speaks only v0.3): its JSON-RPC handler decodes
// and encodes, and legacy answers each method from the same tasks as v1.0
// does, translating the data model (lower-case states, kind-tagged parts,
// Final on a status update that ends the stream).

// legacy is the SDK's RequestHandler over a Server.
type legacy struct{ s *Server }

// ServeLegacy makes the server answer v0.3 requests (no A2A-Version, or
// 0.3) through the Go SDK's JSON-RPC handler.
func (s *Server) ServeLegacy() {
	h := a2asrv.NewJSONRPCHandler(legacy{s})
	s.cfg.Legacy = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		unlimited(w) // a stream lasts as long as its task
		h.ServeHTTP(w, r)
	})
}

// callerKey carries an authenticated caller and the request's header (for
// its traceparent) into the SDK's handler.
type callerKey struct{}

type legacyCall struct {
	caller string
	header http.Header
}

func withCaller(ctx context.Context, caller string, h http.Header) context.Context {
	return context.WithValue(ctx, callerKey{}, legacyCall{caller, h})
}

func callOf(ctx context.Context) legacyCall {
	c, _ := ctx.Value(callerKey{}).(legacyCall)
	return c
}

// sdkError is an error of the v1.0 core as the SDK maps it to a code: the
// sentinel of the same code wraps the message.
func sdkError(e *Error) error {
	sentinel := map[int]error{
		CodeTaskNotFound: sdk.ErrTaskNotFound, CodeTaskNotCancelable: sdk.ErrTaskNotCancelable,
		CodePushNotSupported: sdk.ErrPushNotificationNotSupported, CodeUnsupportedOperation: sdk.ErrUnsupportedOperation,
		CodeInvalidParams: sdk.ErrInvalidParams, CodeInvalidRequest: sdk.ErrInvalidRequest, CodeMethodNotFound: sdk.ErrMethodNotFound,
	}[e.Code]
	if sentinel == nil {
		sentinel = sdk.ErrInternalError
	}
	if r := e.Reason(); r != "" {
		return fmt.Errorf("%s: %s: %w", r, e.Message, sentinel)
	}
	return fmt.Errorf("%s: %w", e.Message, sentinel)
}

func (l legacy) OnSendMessage(ctx context.Context, p *sdk.MessageSendParams) (sdk.SendMessageResult, error) {
	req, err := fromLegacySend(p)
	if err != nil {
		return nil, err
	}
	c := callOf(ctx)
	t, e := l.s.send(c.caller, req, c.header)
	if e != nil {
		return nil, sdkError(e)
	}
	if p.Config == nil || p.Config.Blocking == nil || *p.Config.Blocking {
		t.settled(ctx)
	}
	var hl *int
	if p.Config != nil {
		hl = p.Config.HistoryLength
	}
	snap := t.snapshot(hl, true)
	return toLegacyTask(&snap), nil
}

func (l legacy) OnSendMessageStream(ctx context.Context, p *sdk.MessageSendParams) iter.Seq2[sdk.Event, error] {
	return func(yield func(sdk.Event, error) bool) {
		req, err := fromLegacySend(p)
		if err != nil {
			yield(nil, err)
			return
		}
		c := callOf(ctx)
		t, e := l.s.send(c.caller, req, c.header)
		if e != nil {
			yield(nil, sdkError(e))
			return
		}
		l.events(ctx, t, nil, 0, yield)
	}
}

func (l legacy) OnResubscribeToTask(ctx context.Context, id *sdk.TaskIDParams) iter.Seq2[sdk.Event, error] {
	return func(yield func(sdk.Event, error) bool) {
		t, e := l.s.lookup(callOf(ctx).caller, string(id.ID))
		if e != nil {
			yield(nil, sdkError(e))
			return
		}
		if st := t.state(); st.Terminal() {
			yield(nil, fmt.Errorf("task %s is %s: %w", id.ID, st, sdk.ErrUnsupportedOperation))
			return
		}
		snap, next := t.follow()
		l.events(ctx, t, &snap, next, yield)
	}
}

// events yields a task's events from index next on (first, when set,
// before them) until it ends; the status update that ends it is Final.
func (l legacy) events(ctx context.Context, t *entry, first *Task, next int, yield func(sdk.Event, error) bool) {
	if first != nil && !yield(toLegacyTask(first), nil) {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(l.s.ctx, cancel)
	defer stop()
	for {
		evs, _, err := t.next(ctx, next)
		if err != nil {
			return
		}
		next += len(evs)
		for _, ev := range evs {
			out, final := toLegacyEvent(ev)
			if !yield(out, nil) || final {
				return
			}
		}
	}
}

func (l legacy) OnGetTask(ctx context.Context, q *sdk.TaskQueryParams) (*sdk.Task, error) {
	t, e := l.s.lookup(callOf(ctx).caller, string(q.ID))
	if e != nil {
		return nil, sdkError(e)
	}
	snap := t.snapshot(q.HistoryLength, true)
	return toLegacyTask(&snap), nil
}

func (l legacy) OnCancelTask(ctx context.Context, id *sdk.TaskIDParams) (*sdk.Task, error) {
	out, e := l.s.cancelTask(callOf(ctx).caller, string(id.ID))
	if e != nil {
		return nil, sdkError(e)
	}
	return toLegacyTask(out.(*Task)), nil
}

func (legacy) OnGetTaskPushConfig(context.Context, *sdk.GetTaskPushConfigParams) (*sdk.TaskPushConfig, error) {
	return nil, sdk.ErrPushNotificationNotSupported
}

func (legacy) OnListTaskPushConfig(context.Context, *sdk.ListTaskPushConfigParams) ([]*sdk.TaskPushConfig, error) {
	return nil, sdk.ErrPushNotificationNotSupported
}

func (legacy) OnSetTaskPushConfig(context.Context, *sdk.TaskPushConfig) (*sdk.TaskPushConfig, error) {
	return nil, sdk.ErrPushNotificationNotSupported
}

func (legacy) OnDeleteTaskPushConfig(context.Context, *sdk.DeleteTaskPushConfigParams) error {
	return sdk.ErrPushNotificationNotSupported
}

func (legacy) OnGetExtendedAgentCard(context.Context) (*sdk.AgentCard, error) {
	return nil, fmt.Errorf("this agent has no extended Agent Card: %w", sdk.ErrUnsupportedOperation)
}

var _ a2asrv.RequestHandler = legacy{}

// fromLegacySend is a v0.3 send as the v1.0 core takes it.
func fromLegacySend(p *sdk.MessageSendParams) (*SendMessageRequest, error) {
	if p == nil || p.Message == nil {
		return nil, fmt.Errorf("message is required: %w", sdk.ErrInvalidParams)
	}
	m := p.Message
	role := Role("")
	switch m.Role {
	case sdk.MessageRoleUser:
		role = RoleUser
	case sdk.MessageRoleAgent:
		role = RoleAgent
	}
	msg := &Message{MessageID: m.ID, ContextID: m.ContextID, TaskID: string(m.TaskID), Role: role,
		Metadata: m.Metadata, Extensions: m.Extensions}
	for _, r := range m.ReferenceTasks {
		msg.ReferenceTaskIDs = append(msg.ReferenceTaskIDs, string(r))
	}
	for _, part := range m.Parts {
		msg.Parts = append(msg.Parts, fromLegacyPart(part))
	}
	req := &SendMessageRequest{Message: msg, Metadata: p.Metadata}
	if p.Config != nil {
		req.Configuration = &SendMessageConfiguration{AcceptedOutputModes: p.Config.AcceptedOutputModes,
			HistoryLength: p.Config.HistoryLength, ReturnImmediately: p.Config.Blocking != nil && !*p.Config.Blocking}
	}
	return req, nil
}

func fromLegacyPart(p sdk.Part) Part {
	switch v := p.(type) {
	case sdk.TextPart:
		return Part{Text: v.Text, Metadata: v.Metadata}
	case sdk.DataPart:
		b, _ := json.Marshal(v.Data)
		return Part{Data: b, Metadata: v.Metadata, MediaType: "application/json"}
	case sdk.FilePart:
		switch f := v.File.(type) {
		case sdk.FileURI:
			return Part{URL: f.URI, Filename: f.Name, MediaType: f.MimeType, Metadata: v.Metadata}
		case sdk.FileBytes:
			raw, _ := base64.StdEncoding.DecodeString(f.Bytes)
			return Part{Raw: raw, Filename: f.Name, MediaType: f.MimeType, Metadata: v.Metadata}
		}
	}
	return Part{}
}

func toLegacyPart(p Part) sdk.Part {
	switch {
	case p.Text != "":
		return sdk.TextPart{Text: p.Text, Metadata: p.Metadata}
	case len(p.Data) > 0:
		var obj map[string]any
		if json.Unmarshal(p.Data, &obj) != nil {
			// v0.3's data is an object: anything else is wrapped.
			var v any
			_ = json.Unmarshal(p.Data, &v)
			obj = map[string]any{"value": v}
		}
		return sdk.DataPart{Data: obj, Metadata: p.Metadata}
	case p.URL != "":
		return sdk.FilePart{File: sdk.FileURI{FileMeta: sdk.FileMeta{Name: p.Filename, MimeType: p.MediaType}, URI: p.URL}, Metadata: p.Metadata}
	}
	return sdk.FilePart{File: sdk.FileBytes{FileMeta: sdk.FileMeta{Name: p.Filename, MimeType: p.MediaType},
		Bytes: base64.StdEncoding.EncodeToString(p.Raw)}, Metadata: p.Metadata}
}

func toLegacyParts(ps []Part) sdk.ContentParts {
	out := sdk.ContentParts{}
	for _, p := range ps {
		out = append(out, toLegacyPart(p))
	}
	return out
}

// legacyStates maps the v1.0 states to v0.3's names.
var legacyStates = map[TaskState]sdk.TaskState{
	StateSubmitted: sdk.TaskStateSubmitted, StateWorking: sdk.TaskStateWorking, StateCompleted: sdk.TaskStateCompleted,
	StateFailed: sdk.TaskStateFailed, StateCanceled: sdk.TaskStateCanceled, StateInputRequired: sdk.TaskStateInputRequired,
	StateRejected: sdk.TaskStateRejected, StateAuthRequired: sdk.TaskStateAuthRequired,
}

func toLegacyMessage(m *Message) *sdk.Message {
	if m == nil {
		return nil
	}
	role := sdk.MessageRoleUser
	if m.Role == RoleAgent {
		role = sdk.MessageRoleAgent
	}
	out := &sdk.Message{ID: m.MessageID, ContextID: m.ContextID, TaskID: sdk.TaskID(m.TaskID), Role: role,
		Parts: toLegacyParts(m.Parts), Metadata: m.Metadata, Extensions: m.Extensions}
	for _, r := range m.ReferenceTaskIDs {
		out.ReferenceTasks = append(out.ReferenceTasks, sdk.TaskID(r))
	}
	return out
}

func toLegacyStatus(st TaskStatus) sdk.TaskStatus {
	return sdk.TaskStatus{State: legacyStates[st.State], Message: toLegacyMessage(st.Message)}
}

func toLegacyArtifact(a Artifact) *sdk.Artifact {
	return &sdk.Artifact{ID: sdk.ArtifactID(a.ArtifactID), Name: a.Name, Description: a.Description,
		Parts: toLegacyParts(a.Parts), Metadata: a.Metadata, Extensions: a.Extensions}
}

func toLegacyTask(t *Task) *sdk.Task {
	out := &sdk.Task{ID: sdk.TaskID(t.ID), ContextID: t.ContextID, Status: toLegacyStatus(t.Status), Metadata: t.Metadata}
	for _, a := range t.Artifacts {
		out.Artifacts = append(out.Artifacts, toLegacyArtifact(a))
	}
	for i := range t.History {
		out.History = append(out.History, toLegacyMessage(&t.History[i]))
	}
	return out
}

// toLegacyEvent is a stream event in v0.3, and whether it ends the
// stream.
func toLegacyEvent(ev StreamResponse) (sdk.Event, bool) {
	switch {
	case ev.Task != nil:
		return toLegacyTask(ev.Task), ev.Task.Status.State.Terminal()
	case ev.StatusUpdate != nil:
		u := ev.StatusUpdate
		final := u.Status.State.Terminal()
		return &sdk.TaskStatusUpdateEvent{TaskID: sdk.TaskID(u.TaskID), ContextID: u.ContextID, Status: toLegacyStatus(u.Status),
			Final: final, Metadata: u.Metadata}, final
	case ev.ArtifactUpdate != nil:
		u := ev.ArtifactUpdate
		return &sdk.TaskArtifactUpdateEvent{TaskID: sdk.TaskID(u.TaskID), ContextID: u.ContextID, Artifact: toLegacyArtifact(u.Artifact),
			Append: u.Append, LastChunk: u.LastChunk, Metadata: u.Metadata}, false
	}
	return toLegacyMessage(ev.Message), true
}
