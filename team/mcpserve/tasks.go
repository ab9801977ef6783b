package mcpserve

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCP tasks as the 2025-11-25 specification has them (basic/utilities/
// tasks): a task-augmented tools/call answers a CreateTaskResult at once,
// tasks/get reads the task, tasks/result blocks until it ends and answers
// the tool's result, tasks/list and tasks/cancel.

// Task statuses.
const (
	statusWorking       = "working"
	statusInputRequired = "input_required"
	statusCompleted     = "completed"
	statusFailed        = "failed"
	statusCancelled     = "cancelled"
)

func terminal(s string) bool {
	return s == statusCompleted || s == statusFailed || s == statusCancelled
}

// relatedTaskKey associates a message with its task in _meta.
const relatedTaskKey = "io.modelcontextprotocol/related-task"

// taskKey is where the door moves a tools/call's "task" field, which the
// SDK does not decode, into the call's _meta (liftTask).
const taskKey = "huddle/task"

// wireTask is a task as the protocol writes it.
type wireTask struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	TTL           *int64 `json:"ttl"`
	PollInterval  int64  `json:"pollInterval,omitempty"`
}

// task is one task the door runs.
type task struct {
	id, owner string
	created   time.Time
	ttl       time.Duration
	cancel    context.CancelFunc

	mu      sync.Mutex
	status  string
	message string
	updated time.Time
	result  *mcp.CallToolResult
	done    chan struct{} // closed when the task ends
}

// pollInterval is what a client is told to wait between tasks/get.
const pollInterval = 250 * time.Millisecond

func (t *task) wire() wireTask {
	t.mu.Lock()
	defer t.mu.Unlock()
	ttl := t.ttl.Milliseconds()
	return wireTask{TaskID: t.id, Status: t.status, StatusMessage: t.message, CreatedAt: stamp(t.created),
		LastUpdatedAt: stamp(t.updated), TTL: &ttl, PollInterval: pollInterval.Milliseconds()}
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// move sets the task's status, unless it ended: a terminal status never
// changes. It reports whether it moved.
func (t *task) move(status, message string, result *mcp.CallToolResult) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if terminal(t.status) {
		return false
	}
	t.status, t.message, t.updated = status, message, time.Now()
	if terminal(status) {
		t.result = result
		close(t.done)
	}
	return true
}

// tasks are the door's tasks, by id.
type tasks struct {
	mu sync.Mutex
	m  map[string]*task
}

func (ts *tasks) add(t *task) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.m == nil {
		ts.m = map[string]*task{}
	}
	ts.m[t.id] = t
}

// get is the task p names of owner, or an error the client sees.
func (ts *tasks) get(owner string, p *taskIDParams) (*task, error) {
	if p == nil || p.TaskID == "" {
		return nil, invalidParams("taskId is required")
	}
	id := p.TaskID
	ts.mu.Lock()
	t, ok := ts.m[id]
	ts.mu.Unlock()
	if !ok || t.owner != owner {
		return nil, invalidParams("no task %q", id)
	}
	return t, nil
}

// forget drops the tasks whose ttl has passed since they were made.
func (ts *tasks) forget(now time.Time) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for id, t := range ts.m {
		if now.Sub(t.created) > t.ttl {
			t.mu.Lock()
			ended := terminal(t.status)
			t.mu.Unlock()
			if ended {
				delete(ts.m, id)
			}
		}
	}
}

// list is owner's tasks, newest first, a page of at most 50 from cursor.
func (ts *tasks) list(owner, cursor string) ([]wireTask, string, error) {
	ts.mu.Lock()
	var mine []*task
	for _, t := range ts.m {
		if t.owner == owner {
			mine = append(mine, t)
		}
	}
	ts.mu.Unlock()
	slices.SortFunc(mine, func(a, b *task) int {
		if c := b.created.Compare(a.created); c != 0 {
			return c
		}
		if a.id < b.id {
			return -1
		}
		return 1
	})
	from := 0
	if cursor != "" {
		n, err := strconv.Atoi(cursor)
		if err != nil || n < 0 {
			return nil, "", invalidParams("cursor %q is not one this server gave", cursor)
		}
		from = n
	}
	out := []wireTask{}
	for i := from; i < len(mine) && i < from+50; i++ {
		out = append(out, mine[i].wire())
	}
	next := ""
	if from+50 < len(mine) {
		next = strconv.Itoa(from + 50)
	}
	return out, next, nil
}

// The params and results of the tasks/ methods.
type (
	taskIDParams struct {
		mcp.ParamsBase
		TaskID string `json:"taskId"`
	}
	listParams struct {
		mcp.ParamsBase
		Cursor string `json:"cursor,omitempty"`
	}
	taskResult struct {
		mcp.ResultBase
		wireTask
	}
	listResult struct {
		mcp.ResultBase
		Tasks      []wireTask `json:"tasks"`
		NextCursor string     `json:"nextCursor,omitempty"`
	}
	// createTaskResult answers a task-augmented tools/call.
	createTaskResult struct {
		mcp.ResultBase
		Task wireTask `json:"task"`
	}
)

// invalidParams is the JSON-RPC error -32602 the spec asks for.
func invalidParams(format string, a ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, a...)}
}

// initResult is the initialize result with the tasks capability the SDK
// does not know.
type initResult struct {
	mcp.ResultBase
	r *mcp.InitializeResult
}

var tasksCapability = map[string]any{"list": map[string]any{}, "cancel": map[string]any{},
	"requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}}}

func (r *initResult) MarshalJSON() ([]byte, error) {
	return withFields(r.r, func(m map[string]any) {
		caps, _ := m["capabilities"].(map[string]any)
		if caps == nil {
			caps = map[string]any{}
		}
		caps["tasks"] = tasksCapability
		m["capabilities"] = caps
	})
}

// toolsResult is tools/list's result with each tool's execution.taskSupport,
// which the SDK's Tool does not carry.
type toolsResult struct {
	mcp.ResultBase
	r       *mcp.ListToolsResult
	support map[string]string
}

func (r *toolsResult) MarshalJSON() ([]byte, error) {
	return withFields(r.r, func(m map[string]any) {
		list, _ := m["tools"].([]any)
		for _, x := range list {
			tool, _ := x.(map[string]any)
			if s, ok := r.support[fmt.Sprint(tool["name"])]; ok && tool != nil {
				tool["execution"] = map[string]any{"taskSupport": s}
			}
		}
	})
}

// withFields marshals v, lets edit change its fields, and marshals that.
func withFields(v any, edit func(map[string]any)) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	edit(m)
	return json.Marshal(m)
}

// liftTask moves the "task" field of a tools/call request's params into
// its _meta (taskKey), where the SDK keeps it; anything else is returned
// as it is.
func liftTask(method string, params json.RawMessage) json.RawMessage {
	if method != "tools/call" || len(params) == 0 {
		return params
	}
	var p map[string]json.RawMessage
	if json.Unmarshal(params, &p) != nil {
		return params
	}
	t, ok := p["task"]
	if !ok {
		return params
	}
	var meta map[string]json.RawMessage
	if raw, ok := p["_meta"]; ok && json.Unmarshal(raw, &meta) != nil {
		return params
	}
	if meta == nil {
		meta = map[string]json.RawMessage{}
	}
	if string(t) == "null" {
		t = json.RawMessage("{}")
	}
	meta[taskKey] = t
	delete(p, "task")
	mb, err := json.Marshal(meta)
	if err != nil {
		return params
	}
	p["_meta"] = mb
	out, err := json.Marshal(p)
	if err != nil {
		return params
	}
	return out
}
