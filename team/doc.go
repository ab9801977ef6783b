// Package team is what a team is and what its lead does, on a store.Store
// (docs/ARCHITECTURE.md, "Packages"): team.json (config.go, template.go,
// the IPC check), member and request records as the store keeps them and
// what they say about the runtime (down.go), the lead's operations
// (lead.go, restart.go, wait.go), and the log files every part follows
// (follow.go, transcript.go). The runtime is team/supervisor, the UI's
// fold of a store team/view, huddle serve's backend team/serve.
package team
