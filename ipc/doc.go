// Package ipc owns Puruto's agentic IPC (docs/ARCHITECTURE.md, "Invocation (Puruto IPC)"): the invocation
// policy, the Caller and its targets (a teammate's inbox, an exec process),
// the Router of answers and what feeds it (Take, WatchAnswers), the
// validator and the init --ipc scaffolding. Spans are ipc/trace's; the HTTP
// protocol is ipc/blueprint's.
package ipc
