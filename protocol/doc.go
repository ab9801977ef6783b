// Package protocol owns huddle's wire contract: the message envelope and its
// type-specific fields, the lenient decoder, ids, the request and teammate
// state machines, and the invocation types and error codes (docs/ARCHITECTURE.md, "Messages", "State machines", "Invocation (Puruto IPC)").
//
// It is pure: no file or network I/O and no goroutines.
package protocol
