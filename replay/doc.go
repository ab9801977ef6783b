// Package replay reads a team's history back as one timeline and folds it
// into the view.Snapshot the UI showed at any point of it.
//
// The timeline (Read, on a store.Store) is every member's status changes,
// every request's transitions (archived ones too), every message the
// inboxes still hold (on a team directory, inbox/<name>.jsonl and its .prev
// generation) and every span, in timestamp order. The status histories
// (members/<name>.history.jsonl) stay in the local team directory: read
// with it, the timeline leaves nothing out; read from a store alone, each
// member is its current status, and Timeline.Store says what is left out.
// Export writes it as one self-contained JSON-lines file that Open reads
// back like a directory, so a session can travel with a bug report. The
// package only reads.
package replay
