package view

import (
	"huddle/ipc/trace"
	"huddle/protocol"
	"huddle/team"
)

// Snapshot is a team's state folded into what a UI shows. An Observer
// hands out a new Snapshot on every change; a Snapshot is never modified
// after it is handed out, so a UI keeps it without copying.
type Snapshot struct {
	// Version grows with every snapshot an observer hands out.
	Version uint64
	// Down is set when a runtime ran the team and none runs it now (on a
	// team directory, nobody holds runtime.lock): members a runtime left
	// in a live state are then shown stopped, and nothing expires until
	// one starts. Runtime is what the lock says, and NotRunning(Runtime)
	// the line that says so.
	Down    bool
	Runtime team.RuntimeState
	// Store is set when no runtime.lock says whether a runtime runs the
	// team (a team on NATS, or a directory no runtime ran yet): Down then
	// says that no member was seen alive within the deadline (DownByRecords),
	// Runtime is RuntimeFromRecords's (no runtime.lock: deadlines are paused since
	// the last member was seen), and a member that should be running and
	// was not seen within the deadline shows StatusLost.
	Store bool
	// Team is team.json; nil when it cannot be read, with TeamErr saying why.
	Team    *team.Team
	TeamErr string

	// Members in team.json's order, then members with a record but no entry
	// in team.json.
	Members []MemberView

	// Requests: pending first (oldest first), then the final ones, newest
	// resolution first, at most MaxHistory of them. A record that cannot be
	// read is there with the status StatusCorrupt and why in ResponseReason.
	Requests []protocol.Request
	Pending  int

	// Chains are the correlation chains of traces.jsonl, newest first. A
	// snapshot shares the chains that did not change with the snapshots
	// before it; Chains.ChangedSince(earlier.Chains) lists the ones that
	// did, so a UI updates only what they show.
	Chains trace.ChainList

	// Messages is the inbox traffic of every member and the lead, oldest
	// first, bounded to the most recent MaxMessages.
	Messages []MessageView

	// DeadLetters are the input the team refused (deadletter.jsonl), oldest
	// first, the most recent MaxDeadLetters.
	DeadLetters []team.DeadLetter
}

// MaxDeadLetters bounds Snapshot.DeadLetters.
const MaxDeadLetters = 1000

// MaxMessages bounds Snapshot.Messages.
const MaxMessages = 5000

// MemberView is a member as the roster shows it.
type MemberView struct {
	// Record is members/<name>.json; Record.Status is empty when the member
	// has never run, StatusCorrupt (with why in Error) when the record
	// cannot be read, and stopped when no runtime runs the team and the
	// record says otherwise (AsSeenWhileDown).
	Record protocol.Member
	// Spec is the member's entry in team.json (zero for a member that has a
	// record but no entry).
	Spec team.MemberSpec
	// Unread counts the messages in its inbox that its consumer has not
	// committed yet.
	Unread int
}

// MessageView is one message seen in an inbox.
type MessageView struct {
	Inbox  string // whose inbox: a member's name or "lead"
	Offset int64  // logical offset in that inbox
	Msg    protocol.Message
}
