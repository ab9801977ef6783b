// Package agents runs third-party coding agents as huddle exec teammates:
// `huddle agent claude` drives Claude Code on its control protocol
// (`claude -p --input-format stream-json --permission-prompt-tool stdio`),
// `huddle agent codex` drives Codex's app server (`codex app-server`).
//
// An adapter speaks huddle's exec protocol on its own stdin and stdout
// (protocol.ExecLine, docs/ARCHITECTURE.md, "Messages") and keeps one CLI
// process for the member's session: the plan read-only, each revision on
// the same session, the work only after the lead approved the plan. Every
// tool use the CLI asks permission for becomes a permission line, and its
// answer the CLI's. What each CLI is run with and what of its protocol is
// read is in docs/agents.md; agent.go is the turn loop, ask.go the CLI's
// questions, claudesession.go and codexsession.go the two protocols.
package agents
