package trace

import (
	"sync/atomic"
	"time"
)

// Op is a step of a member's own work, not a call between members: a model
// turn (OpChat) or a work tool it ran (OpTool), as an llm teammate's loop
// reports them. Ops are not written to traces.jsonl: they exist for the
// OpenTelemetry export, which follows the GenAI semantic conventions.
type Op struct {
	Kind   string // OpChat or OpTool
	Member string
	// CorrelationID and RequestID place the op in a chain: the invocation
	// the member was answering, whose span is the op's parent. Without
	// them the op is in a trace of the member's own work (Conversation).
	CorrelationID, RequestID string
	// Conversation names the member's own work when no invocation holds
	// it: its run, so that one run's ops share a trace.
	Conversation string

	Start, End time.Time
	// Provider and Model are the model's (a chat): anthropic or openai,
	// and the model's name.
	Provider, Model string
	InTokens        int64
	OutTokens       int64
	// Tool and CallID are a tool's (OpTool).
	Tool, CallID string
	// Error, when set, says how the op failed (error.type).
	Error string
}

// The kinds of an Op.
const (
	OpChat = "chat"
	OpTool = "execute_tool"
)

var opObserver atomic.Pointer[func(Op)]

// ObserveOps makes fn see every op this process records from now on (the
// OpenTelemetry export); fn must not block. stop removes it.
func ObserveOps(fn func(Op)) (stop func()) {
	p := &fn
	opObserver.Store(p)
	return func() { opObserver.CompareAndSwap(p, nil) }
}

// RecordOp hands op to the observer, if any; without one it costs a load.
func RecordOp(op Op) {
	if p := opObserver.Load(); p != nil {
		(*p)(op)
	}
}
