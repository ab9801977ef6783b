package protocol

import (
	"fmt"
	"time"
)

// MemberStatus is a state of the teammate state machine (docs/ARCHITECTURE.md, "State machines").
type MemberStatus string

const (
	MemberStarting         MemberStatus = "starting"
	MemberWorking          MemberStatus = "working"
	MemberIdle             MemberStatus = "idle"
	MemberAwaitingApproval MemberStatus = "awaiting_approval"
	MemberRevising         MemberStatus = "revising"
	MemberStopping         MemberStatus = "stopping"
	MemberStopped          MemberStatus = "stopped"
	MemberCrashed          MemberStatus = "crashed"
)

// MemberStatuses lists every state in the order a roster shows them.
var MemberStatuses = []MemberStatus{
	MemberStarting, MemberWorking, MemberIdle, MemberAwaitingApproval,
	MemberRevising, MemberStopping, MemberStopped, MemberCrashed,
}

// Known reports whether s is one of the states of docs/ARCHITECTURE.md, "State machines"
func (s MemberStatus) Known() bool {
	for _, k := range MemberStatuses {
		if s == k {
			return true
		}
	}
	return false
}

// IsTerminal reports whether the member's run is over.
func (s MemberStatus) IsTerminal() bool { return s == MemberStopped || s == MemberCrashed }

// IsLive reports whether the member is running and may still be asked to stop.
func (s MemberStatus) IsLive() bool { return s.Known() && !s.IsTerminal() && s != MemberStopping }

// memberEdges is the teammate state machine, apart from the two edges every
// non-final state has (see CanTransition).
var memberEdges = map[MemberStatus][]MemberStatus{
	MemberStarting:         {MemberWorking, MemberIdle},
	MemberWorking:          {MemberIdle, MemberAwaitingApproval},
	MemberIdle:             {MemberWorking},
	MemberAwaitingApproval: {MemberWorking, MemberRevising},
	MemberRevising:         {MemberAwaitingApproval},
	MemberStopping:         {MemberStopped},
}

// Transition checks the move from s to next: nil when legal, otherwise an
// error naming both states. Every live state may go to stopping, every
// non-final state to crashed, and the final states never move.
func (s MemberStatus) Transition(next MemberStatus) error {
	if !s.Known() {
		return fmt.Errorf("unknown member status %q", s)
	}
	if !next.Known() {
		return fmt.Errorf("unknown member status %q", next)
	}
	if s.IsTerminal() {
		return fmt.Errorf("member is %s: a final state never changes", s)
	}
	if next == MemberCrashed || (next == MemberStopping && s.IsLive()) {
		return nil
	}
	for _, to := range memberEdges[s] {
		if to == next {
			return nil
		}
	}
	return fmt.Errorf("illegal member transition %s → %s", s, next)
}

// Member is the record kept in members/<name>.json (docs/ARCHITECTURE.md, "State machines").
type Member struct {
	Name     string       `json:"name"`
	Role     string       `json:"role,omitempty"`
	Runtime  string       `json:"runtime,omitempty"`
	Status   MemberStatus `json:"status"`
	Activity string       `json:"activity,omitempty"`
	// ActivitySince is when Activity (or Status) last changed: how long a
	// member has been thinking, on screen.
	ActivitySince time.Time `json:"activity_since,omitzero"`
	PID           int       `json:"pid,omitempty"`
	RunID         string    `json:"run_id,omitempty"`
	Since         time.Time `json:"since"`
	Error         string    `json:"error,omitempty"`
	// LastLog is the last line a crashed exec teammate wrote on stderr
	// (members/<name>.log), printable and cut to 200 characters.
	LastLog string `json:"last_log,omitempty"`
	// Step and RequestID let a restarted runtime resume a scripted teammate
	// where it was: at its step, waiting on its plan request.
	Step      int    `json:"step,omitempty"`
	RequestID string `json:"request_id,omitempty"`
	// Open are the request ids of the invocations an exec teammate was
	// given and has yet to answer: a restarted runtime gives them to the
	// new process again.
	Open     []string `json:"open,omitempty"`
	Counters Counters `json:"counters"`
}

// Counters are the running totals a roster shows.
type Counters struct {
	Received int `json:"received"`
	Sent     int `json:"sent"`
	Plans    int `json:"plans"`
	Calls    int `json:"calls"`
	// Permissions counts the uses of a tool the member's agent asked for.
	Permissions int `json:"permissions,omitempty"`
	// TokensIn and TokensOut are an llm or exec teammate's model tokens (an
	// exec one reports them with a usage line), and CostUSD what they cost:
	// at the price team.json gives (0: none given), or as the exec teammate
	// reports it.
	TokensIn  int64   `json:"tokens_in,omitempty"`
	TokensOut int64   `json:"tokens_out,omitempty"`
	CostUSD   float64 `json:"cost_usd,omitempty"`
}

// Validate checks a member record.
func (m *Member) Validate() error {
	if err := ValidateName(m.Name); err != nil {
		return fmt.Errorf("member: name: %w", err)
	}
	if !m.Status.Known() {
		return fmt.Errorf("member %s: unknown status %q", m.Name, m.Status)
	}
	return nil
}
