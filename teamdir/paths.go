package teamdir

import (
	"fmt"
	"path/filepath"
	"syscall"

	"huddle/protocol"
)

// Names of the files and subdirectories of a team directory.
const (
	ConfigFile      = "team.json"
	PolicyFile      = ".puruto-ipc.json"
	RuntimeLockFile = "runtime.lock"
	InboxDir        = "inbox"
	CursorsDir      = "cursors"
	DeadLetterFile  = "deadletter.jsonl"
	RestartDir      = "restart"
	MembersDir      = "members"
	RequestsDir     = "requests"
	TracesFile      = "traces.jsonl"
	ExecutionsFile  = "executions.jsonl"
)

// Permissions of everything a team directory holds (docs/ARCHITECTURE.md, "The team directory and the store").
const (
	DirMode  = 0o700
	FileMode = 0o600
)

// ConfigPath is team.json.
func ConfigPath(dir string) string { return filepath.Join(dir, ConfigFile) }

// PolicyPath is the team's .puruto-ipc.json, the policy of its HTTP callers.
func PolicyPath(dir string) string { return filepath.Join(dir, PolicyFile) }

// RuntimeLockPath is runtime.lock.
func RuntimeLockPath(dir string) string { return filepath.Join(dir, RuntimeLockFile) }

// DeadLetterPath is deadletter.jsonl.
func DeadLetterPath(dir string) string { return filepath.Join(dir, DeadLetterFile) }

// TracesPath is traces.jsonl.
func TracesPath(dir string) string { return filepath.Join(dir, TracesFile) }

// ExecutionsPath is executions.jsonl.
func ExecutionsPath(dir string) string { return filepath.Join(dir, ExecutionsFile) }

// InboxDirPath is the directory of every inbox.
func InboxDirPath(dir string) string { return filepath.Join(dir, InboxDir) }

// CursorsDirPath is the directory of the consumers' cursor journals. It is
// a sibling of inbox/, not inside it: a consumer appends a cursor record
// per message it handles, and in inbox/ each of those appends would be an
// event for every watch on inbox/ (docs/ARCHITECTURE.md, "The team directory and the store").
func CursorsDirPath(dir string) string { return filepath.Join(dir, CursorsDir) }

// MembersDirPath is the directory of the member records.
func MembersDirPath(dir string) string { return filepath.Join(dir, MembersDir) }

// RequestsDirPath is the directory of the request records.
func RequestsDirPath(dir string) string { return filepath.Join(dir, RequestsDir) }

// RestartDirPath is restart/, where a file restart/<member> asks the
// runtime to run a stopped or crashed member again (huddle restart).
func RestartDirPath(dir string) string { return filepath.Join(dir, RestartDir) }

// RestartPath is restart/<member>.
func RestartPath(dir, member string) (string, error) {
	return memberFile(dir, RestartDir, member, "")
}

// InboxPath is inbox/<member>.jsonl.
func InboxPath(dir, member string) (string, error) {
	return memberFile(dir, InboxDir, member, ".jsonl")
}

// InboxRel is inbox/<member>.jsonl relative to the team directory, with
// slashes: how a dead letter names where it came from. It does not validate.
func InboxRel(member string) string { return InboxDir + "/" + member + ".jsonl" }

// CursorPath is cursors/<member>.cursor.
func CursorPath(dir, member string) (string, error) {
	return memberFile(dir, CursorsDir, member, ".cursor")
}

// LegacyCursorPath is inbox/<member>.cursor, where a cursor journal lived
// before cursors/: read when cursors/ has none, and moved from there by the
// member's consumer when it opens.
func LegacyCursorPath(dir, member string) (string, error) {
	return memberFile(dir, InboxDir, member, ".cursor")
}

// PrevPath is inbox/<member>.jsonl.prev.
func PrevPath(dir, member string) (string, error) {
	return memberFile(dir, InboxDir, member, ".jsonl.prev")
}

// MemberPath is members/<name>.json.
func MemberPath(dir, name string) (string, error) { return memberFile(dir, MembersDir, name, ".json") }

// MemberLogPath is members/<name>.log.
func MemberLogPath(dir, name string) (string, error) {
	return memberFile(dir, MembersDir, name, ".log")
}

// StatusHistoryPath is members/<name>.history.jsonl: every status a member
// moved to, one JSON line each, appended by the runtime (AppendLine).
func StatusHistoryPath(dir, name string) (string, error) {
	return memberFile(dir, MembersDir, name, ".history.jsonl")
}

// TranscriptPath is members/<name>.transcript.jsonl: an llm teammate's
// model turns, tool calls and tool results, appended one JSON line at a
// time (AppendLine).
func TranscriptPath(dir, name string) (string, error) {
	return memberFile(dir, MembersDir, name, ".transcript.jsonl")
}

// RequestPath is requests/<id>.json.
func RequestPath(dir, id string) (string, error) { return requestFile(dir, id, ".json") }

// DecisionPath is requests/<id>.decision.
func DecisionPath(dir, id string) (string, error) { return requestFile(dir, id, ".decision") }

// memberFile is sub/<name><ext>; the name is validated first, so an invalid
// name never becomes a path.
func memberFile(dir, sub, name, ext string) (string, error) {
	if err := protocol.ValidateName(name); err != nil {
		return "", err
	}
	return filepath.Join(dir, sub, name+ext), nil
}

// requestFile is requests/<id><ext>; the id is validated first.
func requestFile(dir, id, ext string, sub ...string) (string, error) {
	if err := protocol.ValidateID(id); err != nil {
		return "", err
	}
	if len(sub) == 0 { // a live record: one path made, no list of parts
		return filepath.Join(dir, RequestsDir, id+ext), nil
	}
	parts := append(append([]string{dir, RequestsDir}, sub...), id+ext)
	return filepath.Join(parts...), nil
}

// DoneDir is the archive of final requests, under requests/.
const DoneDir = "done"

// DoneDirPath is requests/done/, where the runtime moves final requests so
// that the live directory holds only what can still change.
func DoneDirPath(dir string) string { return filepath.Join(dir, RequestsDir, DoneDir) }

// DoneRequestPath is requests/done/<id>.json.
func DoneRequestPath(dir, id string) (string, error) {
	return requestFile(dir, id, ".json", DoneDir)
}

// DoneDecisionPath is requests/done/<id>.decision.
func DoneDecisionPath(dir, id string) (string, error) {
	return requestFile(dir, id, ".decision", DoneDir)
}

// FullBelow is the free space under which a team directory's disk is
// called full: an inbox append or a cursor commit is a few KiB at most,
// and a file system gives its last blocks to root alone.
const FullBelow = 1 << 20

// FreeSpace is how many bytes an unprivileged writer may still write on
// the file system that holds dir.
func FreeSpace(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("free space of %s: %w", dir, err)
	}
	return int64(st.Bavail) * st.Bsize, nil
}
