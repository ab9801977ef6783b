// Package natsstore is the store.Store of a team kept in NATS JetStream, so
// that one team can span machines: the inboxes are one stream per team
// with a subject and a durable consumer per member, requests, decisions,
// member status, runtime leases and configuration are keys of one
// key-value bucket (decisions and leases created with compare-and-set),
// and trace spans are a stream of their own. docs/ARCHITECTURE.md, "The team directory and the store" gives
// the whole mapping and why.
//
// A store is opened from a URL, nats://[user[:pass]@|token@]HOST:PORT/TEAM
// (tls:// for TLS), or with a credentials file (Options.CredsFile). The
// connection reconnects on its own, forever, and buffers what is published
// meanwhile. Credentials never appear in an error: Redact is what a URL
// looks like when printed.
//
// Package natsserver runs an embedded server (huddle-broker, the tests).
package natsstore
