package ipc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"huddle/inbox"
	"huddle/ipc/trace"
	"huddle/protocol"
)

// Router hands results that arrive in a caller's inbox to the call waiting
// for them, by request id. A result for a call that already timed out is
// recorded in the trace as late and never delivered.
type Router struct {
	teamDir string
	// AppendSpan, when set, records late spans instead of teamDir's
	// traces.jsonl (a team in a store). Set it before the first call.
	AppendSpan func(trace.Span) error

	mu      sync.Mutex
	waiting map[string]chan protocol.InvocationResult
	// timedOut remembers recent calls that gave up, oldest first, for late
	// answers.
	timedOut map[string]protocol.InvocationRequest
	order    []string
}

// maxTimedOut bounds what a Router remembers of calls that timed out.
const maxTimedOut = 4096

// NewRouter makes a router that writes late spans under teamDir.
func NewRouter(teamDir string) *Router {
	return &Router{teamDir: teamDir, waiting: map[string]chan protocol.InvocationResult{}, timedOut: map[string]protocol.InvocationRequest{}}
}

// expect registers a call before its request is sent.
func (r *Router) expect(id string) chan protocol.InvocationResult {
	ch := make(chan protocol.InvocationResult, 1)
	r.mu.Lock()
	r.waiting[id] = ch
	r.mu.Unlock()
	return ch
}

// giveUp forgets a call; when it timed out, a later answer is late.
func (r *Router) giveUp(req protocol.InvocationRequest, timedOut bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.waiting, req.RequestID)
	if !timedOut {
		return
	}
	r.timedOut[req.RequestID] = req
	r.order = append(r.order, req.RequestID)
	if len(r.order) > maxTimedOut {
		delete(r.timedOut, r.order[0])
		r.order = r.order[1:]
	}
}

// Deliver routes a result. It reports whether a waiting call took it; a
// result for a call that timed out is written to the trace as late.
func (r *Router) Deliver(res protocol.InvocationResult) bool {
	r.mu.Lock()
	ch, ok := r.waiting[res.RequestID]
	if ok {
		delete(r.waiting, res.RequestID)
	}
	req, late := r.timedOut[res.RequestID]
	if late {
		delete(r.timedOut, res.RequestID)
	}
	r.mu.Unlock()
	switch {
	case ok:
		ch <- res
		return true
	case late:
		// No remote endpoint: only an InboxTarget waits on a Router, and a
		// teammate's inbox is in this team directory, never another huddle.
		span := trace.End(req, res, "", true, time.Now())
		if r.AppendSpan != nil {
			_ = r.AppendSpan(span) // as below
			return false
		}
		_ = trace.AppendSpan(r.teamDir, span) // the call has ended: only the trace of its late answer is lost
	}
	return false
}

// InboxTarget is a teammate: the request goes to its inbox as an
// invocation_request, and its answer comes back to the caller's inbox,
// where whoever consumes or observes that inbox hands it to Router.Take.
type InboxTarget struct {
	TeamDir string
	Name    string
	Router  *Router
	// Append, when set, writes to the inbox instead of inbox.Append under
	// TeamDir: a team whose inboxes are in a store (docs/ARCHITECTURE.md, "The team directory and the store").
	Append func(member string, m *protocol.Message) error
}

func (t InboxTarget) send(m *protocol.Message) error {
	if t.Append != nil {
		return t.Append(t.Name, m)
	}
	return inbox.Append(t.TeamDir, t.Name, m)
}

func (t InboxTarget) Invoke(ctx context.Context, req protocol.InvocationRequest) (protocol.InvocationResult, error) {
	ch := t.Router.expect(req.RequestID)
	m := protocol.NewMessage(protocol.TypeInvocationRequest, req.Caller, t.Name)
	m.Invocation = &req
	if err := t.send(&m); err != nil {
		t.Router.giveUp(req, false)
		return protocol.InvocationResult{}, fmt.Errorf("send to %s: %w", t.Name, err)
	}
	select {
	case res := <-ch:
		return res, nil
	case <-ctx.Done():
		cancelled := errors.Is(ctx.Err(), context.Canceled)
		t.Router.giveUp(req, !cancelled)
		if cancelled {
			// The caller gave up: tell the callee, so it stops and cancels
			// its own onward calls. (At a deadline it may still answer late.)
			c := protocol.NewMessage(protocol.TypeInvocationCancel, req.Caller, t.Name)
			c.RequestID = req.RequestID
			_ = t.send(&c) // best effort: an answer that comes anyway is traced as late
		}
		return protocol.InvocationResult{}, ctx.Err()
	}
}
