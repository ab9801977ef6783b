// Package replay reads a team directory's history back as one timeline and
// folds it into the team.Snapshot the UI showed at any point of it.
//
// The timeline is every member's status changes (members/<name>.history.jsonl),
// every request's transitions (requests/ and requests/done/), every message
// still on disk in an inbox (inbox/<name>.jsonl and its .prev generation) and
// every span of traces.jsonl, in timestamp order. ReadOn builds the timeline
// of a team kept in a store instead, with less (each member's current status,
// the messages the store still holds; Timeline.Store says what is left out).
// Export writes it as one self-contained JSON-lines file that Open reads back
// like a directory, so a session can travel with a bug report. The package
// only reads the team directory or the store.
package replay
