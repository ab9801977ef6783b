package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"huddle/ipc/trace"
	"huddle/protocol"
)

// Store is one team's shared state. Every method is safe for concurrent
// use; every one that takes a member name or a request id refuses an
// invalid one (protocol.ValidateName, protocol.ValidateID) before it
// touches anything.
type Store interface {
	// Append writes msgs to member's inbox, in order, all or none. An empty
	// To is set to member; another To is refused. A message id appended
	// twice is delivered once (within the store's dedupe window).
	Append(ctx context.Context, member string, msgs ...*protocol.Message) error
	// Consume starts member's durable consumer: h sees every message from
	// the last one committed on, in order, one at a time. A message is
	// committed when h returns nil. An error is retried (Retries times, 10
	// ms then 20 ms apart), then the message is dead-lettered and committed.
	// When h returns because its context ended, the message is not
	// committed: the next consumer gets it again, marked Redelivery. One
	// consumer per member at a time: the member's lease says who.
	Consume(ctx context.Context, member string, h Handler) (Subscription, error)
	// Unread counts the messages in member's inbox its consumer has not
	// committed: all it holds when no consumer ever ran (0 for an inbox
	// with none). A UI shows it beside the member (docs/ARCHITECTURE.md, "The team directory and the store").
	Unread(ctx context.Context, member string) (int, error)
	// DeadLetter records refused input; DeadLetters reads them back, oldest
	// first, and counts what it holds that is not a dead letter (a line or
	// entry that does not decode, or names no source): skipped and told,
	// never left out silently. A last line still being written is neither.
	DeadLetter(ctx context.Context, dl protocol.DeadLetterLine) error
	DeadLetters(ctx context.Context) (letters []protocol.DeadLetterLine, skipped int, err error)

	// CreateRequest stores a new pending request record; ErrExists when one
	// with that id is there already (whoever saw the request first made it).
	CreateRequest(ctx context.Context, r *protocol.Request) error
	// Request reads a record, its decision applied when it has one
	// (ErrNotFound when there is none). A record that does not read is a
	// *CorruptError; when its decision reads, the record the decision
	// alone makes (status, who, when, the text) comes with the error.
	Request(ctx context.Context, id string) (*protocol.Request, error)
	// Requests reads every record, archived ones too, oldest first,
	// decisions applied, and names those that do not read.
	Requests(ctx context.Context) ([]protocol.Request, []CorruptError, error)
	// LiveRequests reads the records not archived, oldest first, decisions
	// applied: the pending ones and the final ones no one archived yet. What
	// it costs grows with them, not with the team's history. Those that do
	// not read are named.
	LiveRequests(ctx context.Context) ([]protocol.Request, []CorruptError, error)
	// Reschedule moves a pending request's deadline (a runtime giving back
	// the time the team was down, docs/ARCHITECTURE.md, "State machines") and returns the record.
	// A request that is final, or has a decision its record does not show
	// yet, is returned as it is: the decision stays the truth.
	Reschedule(ctx context.Context, id string, deadline time.Time) (*protocol.Request, error)
	// Archive takes final records out of the live ones, as one batch;
	// Request and Requests still read them, and a later Decide still
	// loses to their decisions. A record that is not final is refused;
	// archiving one twice is no error. The error names each id left live.
	Archive(ctx context.Context, ids ...string) error
	// Decide resolves a pending request. The decision is created exclusively:
	// the first resolver wins and gets the final record; every later one
	// gets an *AlreadyError naming the winner, and nothing changes. An event
	// that is no move from pending is refused, and so is an unknown id.
	Decide(ctx context.Context, id string, d Decision) (*protocol.Request, error)

	// PutMember rewrites a member's status record; it counts as a heartbeat.
	PutMember(ctx context.Context, m *protocol.Member) error
	// Heartbeat says member's runtime is alive without changing its record.
	Heartbeat(ctx context.Context, member string) error
	// Members reads every member's record with when it was last seen, sorted
	// by name, and names those that do not read; lostAfter is the deadline
	// for the Lost verdict.
	Members(ctx context.Context, lostAfter time.Duration) ([]MemberState, []CorruptError, error)
	// Member reads one member's record the same way (ErrNotFound when it
	// has none): a runtime looks one up on every call to it and every
	// status it is told, which must not cost a listing of the team. With
	// lostAfter RecordOnly it reads the record alone, with no verdict
	// (Lost false, Seen meaning nothing): the runtime that runs the member
	// needs none, and working it out costs a files store a probe of
	// runtime.lock.
	Member(ctx context.Context, name string, lostAfter time.Duration) (*MemberState, error)

	// Watch calls fn with each change of the records of kinds (every kind
	// when none is named) made after it returns, on any handle: a request
	// record or its decision, a member record (a heartbeat too), a restart
	// asked. It says which record changed, not what it holds, for the
	// reader to read. Several changes of one record may be told once,
	// after the last. fn is called from one goroutine and must not block:
	// a UI hands the change on. A Change with no Name says changes of its
	// Kind may have been missed: read them all again. Only the kinds asked
	// for are sent: a runtime that watches requests is not woken by every
	// member's heartbeat.
	Watch(ctx context.Context, fn func(Change), kinds ...ChangeKind) (Subscription, error)

	// AcquireLease takes member's runtime lease for holder, for ttl: a
	// *HeldError while another holder's lease runs.
	AcquireLease(ctx context.Context, member, holder string, ttl time.Duration) (Lease, error)
	// LeaseHolder says who holds member's lease and until when (a zero
	// Expires: for as long as its process lives); nil when it is free. A
	// command asks it of the lead's lease to know whether a runtime runs
	// the team, whatever its members' records say.
	LeaseHolder(ctx context.Context, member string) (*HeldError, error)

	// AskRestart asks the runtime that holds member's lease to run it
	// again (huddle restart): by says who asks. ErrNoRuntime when no
	// runtime holds the lease; ErrExists while an earlier ask is not taken.
	AskRestart(ctx context.Context, member, by string) error
	// TakeRestart removes member's ask and returns it, JSON {"at","by"}
	// (nil when none was asked): the runtime that holds the lease takes
	// it, and of two takers one gets it, so it is acted on once.
	TakeRestart(ctx context.Context, member string) ([]byte, error)

	// AppendLog appends whole lines (each ending in a newline) to member's
	// log or transcript as the store keeps it, in order, without waiting
	// on a slow or absent server: an error says the lines were dropped. A
	// line longer than MaxLogLine is cut there (and ends in "…\n").
	AppendLog(ctx context.Context, member string, kind LogKind, lines [][]byte) error
	// ReadLog calls fn with each line of member's log or transcript the
	// store holds, oldest first, newline included, and returns; with
	// follow it goes on with every line appended after, until ctx ends
	// (then nil). ErrNotFound when it holds none and follow is false.
	ReadLog(ctx context.Context, member string, kind LogKind, follow bool, fn func(line []byte)) error

	// AppendSpan appends one trace span; WatchSpans calls fn with every span
	// appended from now on (or from the first when fromStart), in order.
	AppendSpan(ctx context.Context, s trace.Span) error
	WatchSpans(ctx context.Context, fromStart bool, fn func(trace.Span)) (Subscription, error)

	// PutConfig creates one of the team's configuration files once
	// (ErrExists after); Config reads it (ErrNotFound). Names are those of
	// ConfigName.
	PutConfig(ctx context.Context, name string, data []byte) error
	Config(ctx context.Context, name string) ([]byte, error)

	// Close stops what the store started and releases its connection.
	Close() error
}

// Handler handles one delivery; see Store.Consume.
type Handler func(ctx context.Context, d Delivery) error

// Delivery is one inbox message handed to a Handler.
type Delivery struct {
	Msg protocol.Message
	// Seq orders the member's messages: it grows with each one and never
	// goes back (the file store's logical offset, the stream's sequence).
	Seq int64
	// Redelivery marks a message that a previous consumer may have been
	// handed already. Handlers stay idempotent.
	Redelivery bool
}

// Subscription is a running consumer or watch.
type Subscription interface {
	// Stop ends it and waits for its goroutines; a handler still running
	// sees its context end.
	Stop() error
}

// What both stores do besides the Store interface, for the readers of a
// whole history (export, replay, traces), the UI on a store and a
// restarted exec teammate's replay; each asks for it with a type
// assertion, and says so when a store does not.
type (
	// MessageReader reads every message the inboxes hold now, in order,
	// without taking any (Seq as a consumer's).
	MessageReader interface {
		Messages(ctx context.Context) ([]Delivery, error)
	}
	// SpanReader reads every span held now, and how many it skipped.
	SpanReader interface {
		Spans(ctx context.Context) ([]trace.Span, int64, error)
	}
	// Sweeper removes what a crash left behind where the store keeps
	// its files (temp files older than a minute); a runtime sweeps once
	// when it starts. A store that writes no temp files has none.
	Sweeper interface {
		Sweep(ctx context.Context) error
	}
	// InboxWatcher follows member's inbox from now on without taking
	// anything from it.
	InboxWatcher interface {
		WatchInbox(ctx context.Context, member string, fn func(Delivery)) (Subscription, error)
	}
	// AnswerWatcher follows a caller's inbox from now on for the answers
	// to its calls (huddle call, huddle serve): take says whether it took
	// a message (ipc.Router.Take). The store may then remove what was
	// taken, when no member's consumer reads that inbox to commit it.
	AnswerWatcher interface {
		WatchAnswers(ctx context.Context, caller string, take func(Delivery) bool) (Subscription, error)
	}
	// Peeker reads a request as Request does, but writes nothing: a
	// files store finishes a record's rewrite from its decision on a read,
	// which the reader in the decision's hot path (the teammate awaiting
	// it, while its resolver rewrites the record) leaves to the resolver.
	Peeker interface {
		Peek(ctx context.Context, id string) (*protocol.Request, error)
		// PeekLive is Peek of a record that can still change: an
		// archived one is ErrNotFound, unread (a runtime told of the
		// records it archived itself reads none of them).
		PeekLive(ctx context.Context, id string) (*protocol.Request, error)
	}
	// DeadLetterWatcher calls fn once as the watch starts and after each
	// dead letter recorded from then on, so a UI reads them when they come
	// rather than on a clock. fn must not block: a UI notes the change
	// and reads on its own goroutine.
	DeadLetterWatcher interface {
		WatchDeadLetters(ctx context.Context, fn func()) (Subscription, error)
	}
	// CommitWatcher tells where member's consumer stands: fn gets the Seq
	// past the last message it committed (a Delivery below it is taken),
	// once before WatchCommits returns and again after every commit, so a
	// UI counts the unread messages it watches without asking Unread.
	CommitWatcher interface {
		WatchCommits(ctx context.Context, member string, fn func(committed int64)) (Subscription, error)
	}
	// ConfigWatcher calls fn once as the watch starts and after the
	// configuration file name is put or rewritten (a team directory's team.json is edited by hand), so a UI
	// shows the roster as it is.
	ConfigWatcher interface {
		WatchConfig(ctx context.Context, name string, fn func()) (Subscription, error)
	}
	// HistoryReader reads the newest limit archived records, newest
	// resolution first, decisions applied, and names those that do not
	// read: a UI shows a bounded history without reading all of it.
	HistoryReader interface {
		History(ctx context.Context, limit int) ([]protocol.Request, []CorruptError, error)
	}
)

// Change is what a Watch saw change: a request (its record or its
// decision) or a member's record.
type Change struct {
	Kind ChangeKind
	// Name is the request's id or the member's name; "" when any of Kind
	// may have changed.
	Name string
}

// ChangeKind says which records a Change is about.
type ChangeKind string

// The kinds of a Change.
const (
	ChangeRequest ChangeKind = "request"
	ChangeMember  ChangeKind = "member"
	ChangeRestart ChangeKind = "restart" // a restart asked of a member (AskRestart)
)

// ChangeKinds are the kinds a Watch can tell.
var ChangeKinds = []ChangeKind{ChangeRequest, ChangeMember, ChangeRestart}

// Watched reports whether a Watch asked for kinds tells changes of k.
func Watched(kinds []ChangeKind, k ChangeKind) bool {
	return len(kinds) == 0 || slices.Contains(kinds, k)
}

// LogKind says which of a member's logs: its log (an exec member's
// stderr) or its transcript (an llm member's turns).
type LogKind string

// The kinds of a member's log.
const (
	LogStderr     LogKind = "log"
	LogTranscript LogKind = "transcript"
)

// Valid reports whether k is one of the kinds.
func (k LogKind) Valid() bool { return k == LogStderr || k == LogTranscript }

// MaxLogLine is the longest line AppendLog keeps whole.
const MaxLogLine = 64 << 10

// CutLogLine is line as a store keeps it: cut at MaxLogLine (ending in
// "…\n"), and ending in a newline.
func CutLogLine(line []byte) []byte {
	if len(line) > MaxLogLine {
		return append(append([]byte(nil), line[:MaxLogLine-len("…\n")]...), "…\n"...)
	}
	if len(line) == 0 || line[len(line)-1] != '\n' {
		return append(append([]byte(nil), line...), '\n')
	}
	return line
}

// Decision is what a resolver decides.
type Decision struct {
	Event protocol.RequestEvent `json:"event"`
	By    string                `json:"by"`
	// Text is a plan decision's feedback, or the reason of a shutdown answer,
	// a cancellation or an expiry.
	Text string    `json:"text,omitempty"`
	At   time.Time `json:"at"`
	// Scope is an allowed permission's: protocol.ScopeSession (its rule
	// allows the same use for the rest of the member's session) or
	// protocol.ScopeOnce ("" reads as once).
	Scope string `json:"scope,omitempty"`
}

// MemberState is a member's record with what the store knows of its
// liveness.
type MemberState struct {
	protocol.Member
	// Seen is when the member's record was last written or heartbeaten.
	Seen time.Time
	// Lost is set when the member should be running (its status is neither
	// stopped nor crashed) and was not seen within the deadline: its
	// machine or process went away without a word.
	Lost bool
}

// Lease is a held runtime lease.
type Lease interface {
	// Renew extends the lease by its ttl; ErrLeaseLost when it expired and
	// another holder took it (or it is gone).
	Renew(ctx context.Context) error
	// Release gives it up at once, so another holder may take it.
	Release(ctx context.Context) error
}

var (
	// ErrExists: a record or configuration file with that name exists.
	ErrExists = errors.New("already exists")
	// ErrNotFound: no record or configuration file with that name.
	ErrNotFound = errors.New("not found")
	// ErrLeaseLost: a lease renewed after it expired or was taken over.
	ErrLeaseLost = errors.New("lease lost")
	// ErrNoRuntime: no runtime holds the member's lease, so no one would
	// act on what is asked of it.
	ErrNoRuntime = errors.New("no runtime runs it")
)

// RecordOnly is the lostAfter of a Member read that wants the record
// alone, without the Lost verdict.
const RecordOnly time.Duration = -1

// AlreadyError says who resolved a request first.
type AlreadyError struct {
	ID     string
	Status protocol.RequestStatus
	By     string
}

func (e *AlreadyError) Error() string {
	return fmt.Sprintf("request %s already %s by %s", e.ID, e.Status, e.By)
}

// CorruptError is a record that does not read: not JSON, or not the
// record it should be (a foreign writer, a torn write). Lists name each
// one beside what they read rather than leave it out silently; Request
// returns it, with what the record's decision alone says when it has one.
type CorruptError struct {
	Name string // the request's id or the member's name
	File string // where it is kept, e.g. requests/pl-0123456789ab.json or a key
	Err  string
}

func (e *CorruptError) Error() string { return fmt.Sprintf("%s is corrupt: %s", e.File, e.Err) }

// HeldError says who holds a lease and until when.
type HeldError struct {
	Member  string
	Holder  string
	Expires time.Time
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("the runtime lease of %s is held by %s until %s", e.Member, e.Holder, e.Expires.UTC().Format(time.RFC3339))
}
