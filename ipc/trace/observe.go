package trace

import "sync/atomic"

// observer sees every span this process records; nil: none (the default,
// and all it costs then is this load).
var observer atomic.Pointer[func(Span)]

// Observe makes fn see every valid span this process records from now on,
// in AppendSpan (before its line is written) and in Record, on the
// goroutine that records it: fn must not block. One observer at a time: a
// later Observe replaces it. stop removes fn, if it is still the observer.
// The OpenTelemetry export (ipc/trace/otelexport) is the observer.
func Observe(fn func(Span)) (stop func()) {
	p := &fn
	observer.Store(p)
	return func() { observer.CompareAndSwap(p, nil) }
}

// Record hands a valid span to the observer without writing it anywhere:
// the spans of a call made where there is no team directory (huddle
// invoke). Without an observer it does nothing.
func Record(s Span) {
	if observer.Load() == nil || s.Validate() != nil {
		return
	}
	observe(s)
}

func observe(s Span) {
	if p := observer.Load(); p != nil {
		(*p)(s)
	}
}

// Observing reports whether an observer is set.
func Observing() bool { return observer.Load() != nil }
