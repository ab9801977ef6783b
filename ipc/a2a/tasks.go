package a2a

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"
)

// entry is one task the server knows: its state as GetTask shows it, and
// every event since it was submitted, in order, for the streams that
// follow it.
type entry struct {
	owner string // the caller who sent it: the only one who may see it when keys are on

	mu      sync.Mutex
	task    Task
	updated time.Time
	events  []StreamResponse
	// changed is closed, and replaced, whenever an event is appended: a
	// stream waits on it.
	changed chan struct{}
	cancel  context.CancelFunc
	// waitingOn is the plan request the task is INPUT_REQUIRED on.
	waitingOn string
}

func newEntry(owner string, t Task, now time.Time) *entry {
	e := &entry{owner: owner, task: t, updated: now, changed: make(chan struct{})}
	e.events = append(e.events, StreamResponse{Task: copyTask(&t, nil, true)})
	return e
}

// snapshot is the task as GetTask shows it, with at most historyLength
// messages of its history (nil: all of it).
func (e *entry) snapshot(historyLength *int, artifacts bool) Task {
	e.mu.Lock()
	defer e.mu.Unlock()
	return *copyTask(&e.task, historyLength, artifacts)
}

func copyTask(t *Task, historyLength *int, artifacts bool) *Task {
	c := *t
	c.Artifacts = nil
	if artifacts {
		c.Artifacts = slices.Clone(t.Artifacts)
	}
	c.History = slices.Clone(t.History)
	if historyLength != nil {
		switch n := *historyLength; {
		case n <= 0:
			c.History = nil
		case len(c.History) > n:
			c.History = c.History[len(c.History)-n:]
		}
	}
	return &c
}

// state is the task's state now.
func (e *entry) state() TaskState {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.task.Status.State
}

// setStatus moves the task to st, unless it ended already: a terminal
// state never changes. It reports whether it moved.
func (e *entry) setStatus(st TaskStatus, now time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.task.Status.State.Terminal() {
		return false
	}
	st.Timestamp = timestamp(now)
	e.task.Status = st
	e.updated = now
	ev := &TaskStatusUpdateEvent{TaskID: e.task.ID, ContextID: e.task.ContextID, Status: st}
	e.appendLocked(StreamResponse{StatusUpdate: ev})
	return true
}

// addArtifact adds an artifact to a task that has not ended.
func (e *entry) addArtifact(a Artifact, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.task.Status.State.Terminal() {
		return
	}
	e.task.Artifacts = append(e.task.Artifacts, a)
	e.updated = now
	e.appendLocked(StreamResponse{ArtifactUpdate: &TaskArtifactUpdateEvent{TaskID: e.task.ID, ContextID: e.task.ContextID,
		Artifact: a, LastChunk: true}})
}

// addHistory keeps a client's message in the task's history.
func (e *entry) addHistory(m Message) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.task.History = append(e.task.History, m)
}

func (e *entry) appendLocked(ev StreamResponse) {
	e.events = append(e.events, ev)
	close(e.changed)
	e.changed = make(chan struct{})
}

// follow returns the task now and the index of the next event a stream
// that starts now must send: Subscribe's first event and what follows.
func (e *entry) follow() (Task, int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return *copyTask(&e.task, nil, true), len(e.events)
}

// next waits for the events from index i on: it returns them, and
// whether the task has ended with the last of them; or ctx's error.
func (e *entry) next(ctx context.Context, i int) ([]StreamResponse, bool, error) {
	for {
		e.mu.Lock()
		if i < len(e.events) {
			evs := slices.Clone(e.events[i:])
			ended := e.task.Status.State.Terminal()
			e.mu.Unlock()
			return evs, ended, nil
		}
		ch := e.changed
		e.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
}

// settled waits until the task has ended or waits for input, as a
// blocking SendMessage does, or ctx ends.
func (e *entry) settled(ctx context.Context) {
	for {
		e.mu.Lock()
		st, ch := e.task.Status.State, e.changed
		e.mu.Unlock()
		if st.Terminal() || st.Interrupted() {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}

// encodeEvent is one event as a JSON-RPC response of request id.
func encodeEvent(id json.RawMessage, ev StreamResponse) ([]byte, error) {
	return json.Marshal(rpcResponse{JSONRPC: "2.0", ID: id, Result: ev})
}
