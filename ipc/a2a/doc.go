// Package a2a is the A2A protocol (Agent2Agent, v1.0) for huddle
// (docs/doors.md): its JSON-RPC binding's wire types, a server that runs
// each task as one Puruto invocation through a Backend and streams its
// states, the Agent Card, and a client and an ipc.Target that call any A2A
// agent. The v0.3 binding, for clients that send no A2A-Version, is served
// through the official Go SDK (github.com/a2aproject/a2a-go), which speaks
// only v0.3.
package a2a
