// Package inbox owns huddle's durable per-member mailboxes (docs/ARCHITECTURE.md, "The team directory and the store", "Delivery"):
// atomic appends under flock, consumers with a committed cursor and a
// persisted dedupe set, read-only observers, dead letters, compaction, and
// one fsnotify watch for all inboxes (a full drain on overflow; a periodic
// rescan only when asked for). The paths and
// the write disciplines are teamdir's.
//
// Files under the team directory:
//
//	inbox/<name>.jsonl       the mailbox, one message per line
//	inbox/<name>.jsonl.prev  the last compacted generations (a rolling window), for lagging observers
//	cursors/<name>.cursor    the consumer's commit journal (see cursor.go); inbox/<name>.cursor before
//	deadletter.jsonl         rejected lines with their reason
package inbox
