// Package ipc owns Puruto's agentic IPC (docs/DESIGN.md §7, §8): the invocation
// policy, the invokers (their spans are written with ipc/trace), the
// router of answers, the validator, and the asynchronous HTTP protocol
// (ipc/blueprint).
package ipc
