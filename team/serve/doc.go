// Package serve is the backend huddle serve puts behind the Blueprint
// HTTP protocol (docs/serve.md): a remote caller's invocation becomes a
// call from the team's serve policy, answered from the store.
package serve
