// Package teamdir owns the layout of a team directory and the ways its files
// are written (docs/ARCHITECTURE.md, "The team directory and the store"):
//
//   - every path of the directory, built by a function here, with member
//     names and ids validated before they become paths;
//   - the append discipline: one complete line, one write(2), under an
//     exclusive flock (AppendLine), so writers in any process never interleave;
//   - the rewrite discipline: temp file + fsync + rename (WriteFileAtomic;
//     ReplaceFile without the fsync), and the decision file linked into place exclusively
//     (LinkExclusive);
//   - the runtime lock (LockRuntime), so one runtime runs a team at a time,
//     shared by the runtimes of a team in a store that keep their local
//     files here (ShareRuntime);
//   - the one naming scheme of temp files (CreateTemp) and Sweep, which
//     removes the temp files a crash leaves.
//
// The directory:
//
//	team.json                 the team's config
//	.puruto-ipc.json          the policy of the team's HTTP callers
//	runtime.lock              held by the running runtime; holds its pid
//	inbox/<name>.jsonl        a member's mailbox
//	inbox/<name>.jsonl.prev   its last compacted generations
//	cursors/<name>.cursor     its consumer's commit journal (inbox/<name>.cursor before)
//	deadletter.jsonl          rejected lines with their reason
//	members/<name>.json       a member's live status
//	members/<name>.log        an exec member's stderr
//	requests/<id>.json        a request record
//	requests/<id>.decision    the decision that resolved it (the truth)
//	traces.jsonl              the spans of every invocation
//	executions.jsonl          finished HTTP executions
//	.tmp-*                    temp files, in any of these directories
package teamdir
