// Package blueprint is the asynchronous HTTP invocation protocol of
// docs/ARCHITECTURE.md, "The HTTP protocol (Blueprint)" (the Blueprint's chapter 6): a server that exposes a
// team's members' actions as skills (POST /invoke → GET /status → GET /result), and a
// client that calls them with capped, jittered backoff.
package blueprint
