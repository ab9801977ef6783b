// Package ipc owns Puruto's agentic IPC (DESIGN §7, §8): the invocation
// policy, the invokers, trace spans and correlation chains, the validator,
// and the asynchronous HTTP protocol.
package ipc
