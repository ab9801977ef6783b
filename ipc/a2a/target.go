package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"huddle/ipc"
	"huddle/protocol"
)

// Target is an A2A agent a member stands for: an ipc.Target whose calls
// are tasks of that agent. The call's correlation id is the task's
// contextId and its request id the parent of what the agent records, so a
// chain through a huddle agent continues there under the same id.
type Target struct {
	Client *Client
	// Skill, when set, is sent as metadata skill_id (huddle's agents, and
	// any that choose by it).
	Skill string
}

// Remote names the endpoint in this call's spans.
func (t Target) Remote() string { return redactURL(t.Client.URL) }

// Invoke sends the prompt as a message and follows the task to its end:
// a stream, then SubscribeToTask or GetTask polls if the stream closed
// before the task ended (an agent may close it at INPUT_REQUIRED).
func (t Target) Invoke(ctx context.Context, req protocol.InvocationRequest) (protocol.InvocationResult, error) {
	md := map[string]any{MetaHop: req.Hop, MetaParent: req.RequestID, MetaCaller: req.Caller}
	if dl, ok := ctx.Deadline(); ok {
		md[MetaTimeout] = max(int(time.Until(dl).Seconds()), 1)
	}
	if t.Skill != "" {
		md[MetaSkill] = t.Skill
	}
	msg := Message{MessageID: "msg-" + req.RequestID, ContextID: req.CorrelationID, Role: RoleUser,
		Parts: []Part{TextPart(req.Prompt)}}
	params := SendMessageRequest{Message: &msg, Metadata: md}
	tr := Trace{CorrelationID: req.CorrelationID, RequestID: req.RequestID}
	var last *Task
	follow := func(ev StreamResponse) error {
		switch {
		case ev.Task != nil:
			last = ev.Task
		case ev.StatusUpdate != nil && last != nil:
			last.Status = ev.StatusUpdate.Status
		case ev.ArtifactUpdate != nil && last != nil:
			last.Artifacts = mergeArtifact(last.Artifacts, ev.ArtifactUpdate)
		case ev.Message != nil:
			// An answer without a task: the agent's message is the result.
			last = &Task{Status: TaskStatus{State: StateCompleted, Message: ev.Message}}
		}
		if last != nil && last.Status.State.Terminal() {
			return errEnded
		}
		return nil
	}
	ended := func() bool { return last != nil && last.Status.State.Terminal() }
	err := t.Client.Stream(ctx, MethodStream, params, tr, follow)
	if (err == nil || errors.Is(err, errEnded)) && !ended() {
		if last == nil || last.ID == "" {
			return protocol.InvocationResult{}, &ipc.InvalidResponse{Reason: "the agent's stream ended without a task"}
		}
		// The stream closed before the task ended: follow it again, by a
		// new stream, else by polling.
		err = t.Client.Stream(ctx, MethodSubscribe, TaskIDRequest{ID: last.ID}, Trace{}, follow)
		var rpc *Error
		if (err == nil || errors.Is(err, errEnded) || errors.As(err, &rpc)) && !ended() {
			err = t.poll(ctx, last)
		}
	}
	if (err == nil || errors.Is(err, errEnded)) && ended() {
		return t.result(req, last), nil
	}
	if ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.Canceled) && last != nil && last.ID != "" {
			// The caller gave up: so does the agent (best effort).
			cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, _ = t.Client.CancelTask(cctx, last.ID)
			cancel()
		}
		return protocol.InvocationResult{}, ctx.Err()
	}
	var rpc *Error
	if errors.As(err, &rpc) {
		return t.refused(req, rpc), nil
	}
	return protocol.InvocationResult{}, err
}

// errEnded stops a stream once its task has ended.
var errEnded = errors.New("the task ended")

// poll reads the task until it ends, every second at most.
func (t Target) poll(ctx context.Context, last *Task) error {
	for delay := 100 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		got, err := t.Client.GetTask(ctx, last.ID)
		if err != nil {
			return err
		}
		*last = got
		if got.Status.State.Terminal() {
			return nil
		}
		if err := sleepCtx(ctx, delay); err != nil {
			return err
		}
	}
}

// mergeArtifact adds or extends an artifact as an update says.
func mergeArtifact(arts []Artifact, u *TaskArtifactUpdateEvent) []Artifact {
	for i := range arts {
		if arts[i].ArtifactID == u.Artifact.ArtifactID && u.Append {
			arts[i].Parts = append(arts[i].Parts, u.Artifact.Parts...)
			return arts
		}
		if arts[i].ArtifactID == u.Artifact.ArtifactID {
			arts[i] = u.Artifact
			return arts
		}
	}
	return append(arts, u.Artifact)
}

// result is an ended task as the call's answer: COMPLETED is ok, its
// artifacts' text the summary; any other end is an error, with the
// agent's Puruto code when it says one (a huddle agent does).
func (t Target) result(req protocol.InvocationRequest, task *Task) protocol.InvocationResult {
	if task.Status.State == StateCompleted {
		out := map[string]any{"summary": textOf(task), "task_id": task.ID, "state": string(task.Status.State)}
		if data := dataOf(task); data != nil {
			out["data"] = data
		}
		res, err := protocol.OK(&req, 0, out)
		if err != nil {
			return protocol.Fail(&req, 0, protocol.ErrInvalidResponse, "INVALID_RESPONSE: "+err.Error(), nil)
		}
		return res
	}
	code := protocol.ErrIPC
	text := string(task.Status.State)
	details := map[string]any{"remote": t.Remote(), "task_id": task.ID, "state": string(task.Status.State)}
	if m := task.Status.Message; m != nil {
		if c, ok := m.Metadata[PurutoErrorKey].(string); ok && protocol.ErrorCode(c).Known() {
			code = protocol.ErrorCode(c)
		}
		for _, p := range m.Parts {
			if p.Text != "" {
				text = p.Text
				break
			}
		}
		for _, p := range m.Parts {
			var e struct {
				Details map[string]any `json:"details"`
			}
			if len(p.Data) > 0 && json.Unmarshal(p.Data, &e) == nil {
				if r, ok := e.Details["reason"]; ok {
					details["reason"] = r
				}
			}
		}
	}
	if code == protocol.ErrIPC && task.Status.State == StateRejected {
		code = protocol.ErrDenied
	}
	return protocol.Fail(&req, 0, code, fmt.Sprintf("%s (task %s %s at %s)", text, task.ID, task.Status.State, t.Remote()), details)
}

// refused is an error the agent answered the request with.
func (t Target) refused(req protocol.InvocationRequest, e *Error) protocol.InvocationResult {
	code := protocol.ErrIPC
	if r := protocol.ErrorCode(e.Reason()); r.Known() {
		code = r
	}
	if e.Code == CodeTaskNotFound || e.Code == CodeMethodNotFound {
		code = protocol.ErrTargetNotFound
	}
	return protocol.Fail(&req, 0, code, fmt.Sprintf("%s (from %s)", e.Message, t.Remote()),
		map[string]any{"remote": t.Remote(), "remote_code": e.Code, "remote_reason": e.Reason()})
}

// textOf is the text of a task's artifacts, else of its last status
// message.
func textOf(task *Task) string {
	var lines []string
	for _, a := range task.Artifacts {
		for _, p := range a.Parts {
			if p.Text != "" {
				lines = append(lines, p.Text)
			}
		}
	}
	if len(lines) == 0 && task.Status.Message != nil {
		for _, p := range task.Status.Message.Parts {
			if p.Text != "" {
				lines = append(lines, p.Text)
			}
		}
	}
	return strings.Join(lines, "\n")
}

// dataOf is the data parts of a task's artifacts: the one, or a list.
func dataOf(task *Task) any {
	var out []any
	for _, a := range task.Artifacts {
		for _, p := range a.Parts {
			var v any
			if len(p.Data) > 0 && json.Unmarshal(p.Data, &v) == nil {
				out = append(out, v)
			}
		}
	}
	switch len(out) {
	case 0:
		return nil
	case 1:
		return out[0]
	}
	return out
}

var _ ipc.Target = Target{}
var _ ipc.Remote = Target{}
