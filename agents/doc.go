// Package agents runs third-party coding agents as huddle exec teammates:
// `huddle agent claude` drives Claude Code (`claude -p … --output-format
// stream-json`), `huddle agent codex` drives Codex (`codex exec --json`).
//
// An adapter speaks huddle's exec protocol on its own stdin and stdout
// (protocol.ExecLine, docs/ARCHITECTURE.md, "Messages") and runs the CLI once per turn: the
// plan read-only, each revision read-only on the same session, and the work
// with edits allowed only after the lead approved the plan. The CLI's JSON
// stream becomes status, usage and message lines. What each CLI is run with
// and what of its stream is read is in docs/agents.md; the CLI-specific
// parts are claude.go and codex.go, the turn loop agent.go, one run of the
// CLI runner.go.
package agents
