// Package claudeteam reads a Claude Code agent team from its configuration
// directory (ROOT/teams/<team>/ and ROOT/tasks/<team>/) and folds it into the
// view.Snapshot the UI draws for huddle's own teams: the roster from
// config.json with liveness from idle notifications and inbox traffic, every
// inbox's messages, and the plan, permission and shutdown requests as request
// state machines. It watches the directories with fsnotify (Observe).
//
// huddle reads Claude Code's files and never rewrites what another agent
// wrote: it never flips a read flag. Its only writes are appends to one
// inbox, under Claude Code's own lock discipline (lock.go, append.go): a
// shutdown_request from team-lead, and, behind --experimental-permissions, a
// permission_response. docs/claude-teams.md says what is verified and where
// it comes from.
package claudeteam
