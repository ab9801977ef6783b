package ipc

import (
	"context"
	"sync"

	"huddle/inbox"
	"huddle/protocol"
)

// Take hands a message of a caller's inbox to the call waiting for it when
// it is an invocation_result, and reports whether a waiting call took it.
// It is the one way an answer reaches a call, whether the inbox is consumed
// (the runtime) or observed (AnswerWatch): an answer for a call that timed
// out is traced as late (see Deliver); one nobody waits for may be for
// another process that observes the same inbox, so it is left alone, never
// dead-lettered.
func (r *Router) Take(m protocol.Message) bool {
	if m.Type != protocol.TypeInvocationResult || m.Result == nil {
		return false
	}
	return r.Deliver(*m.Result)
}

// AnswerWatch follows callers' inboxes read-only, each from its end when
// first followed, and hands every line to a Router (Take): how a process
// that does not consume those inboxes (huddle call, huddle serve) gets the
// answers to its calls.
type AnswerWatch struct {
	w      *inbox.Watcher
	router *Router

	mu        sync.Mutex
	following map[string]bool
}

// WatchAnswers starts an AnswerWatch over the inboxes of teamDir that hands
// answers to router, following the inboxes of callers from their current
// end (more can follow later). It runs until ctx ends or Close.
func WatchAnswers(ctx context.Context, teamDir string, router *Router, opts inbox.Options, callers ...string) (*AnswerWatch, error) {
	w, err := inbox.NewWatcher(ctx, teamDir, opts)
	if err != nil {
		return nil, err
	}
	a := &AnswerWatch{w: w, router: router, following: map[string]bool{}}
	for _, c := range callers {
		if err := a.Follow(c); err != nil {
			w.Close()
			return nil, err
		}
	}
	return a, nil
}

// Follow starts following caller's inbox from its current end; a caller
// already followed is left as it is.
func (a *AnswerWatch) Follow(caller string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.following[caller] {
		return nil
	}
	if _, err := a.w.Observe(caller, false, func(d inbox.Delivery) { a.router.Take(d.Msg) }); err != nil {
		return err
	}
	a.following[caller] = true
	return nil
}

// Close stops following every inbox and returns what went wrong in
// following them, if anything.
func (a *AnswerWatch) Close() error { return a.w.Close() }
