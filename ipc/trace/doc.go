// Package trace owns the trace of invocations (docs/ARCHITECTURE.md, "Invocation (Puruto IPC)"): the spans written
// to a team's traces.jsonl (Span, AppendSpan, and Start and End, the one
// builder of each span kind), the reader that follows that file
// (TraceReader), and the fold of spans into calls and correlation chains
// (Traces, Call, Row, Chain), with the JSON `huddle traces --json` prints.
package trace
