package tui

import (
	"context"
	"errors"
	"fmt"
	"time"

	tea "charm.land/bubbletea/v2"

	"huddle/protocol"
	"huddle/store"
	"huddle/team"
)

// Actions are what the UI's keys do to the team it shows. Each returns the
// line the UI flashes. A huddle team's are LeadActions(StoreLead(…)), on
// whichever store keeps it; `huddle claude attach` gives its own for a
// Claude Code team. A UI without Actions says so when a key would act.
type Actions interface {
	Approve(id string) (string, error)
	Reject(id, feedback string) (string, error)
	Shutdown(member string) (string, error)
	Send(member, text string) (string, error)
	Broadcast(text string) (string, error)
}

// Restarter is an optional part of Actions: running a stopped or crashed
// member again (R). Without it, R says the team cannot.
type Restarter interface {
	Restart(member string) (string, error)
}

// RestartRefuser is an optional part of Actions: why R cannot act on this
// team at all ("" when it can).
type RestartRefuser interface {
	RefusesRestart() string
}

// MemberRefuser is an optional part of Actions: why a member key (s
// shut down; m message and b broadcast) cannot act on this team at all
// ("" when it can).
// The footer leaves a refused key out, and the key says why at once,
// without a dialog.
type MemberRefuser interface {
	RefusesShutdown() string
	RefusesMessage() string
}

// SessionAllower is an optional part of Actions: allowing a permission and
// what its rule covers for the rest of the member's session (A).
type SessionAllower interface {
	AllowForSession(id string) (string, error)
}

// Refuser is an optional part of Actions: why a request may not be decided
// from this UI at all ("" when it may), checked before a key opens a
// dialog.
type Refuser interface {
	Refuses(r *protocol.Request) string
}

// The actions run off the UI loop and call the same functions as the CLI.

func (m *Model) act(do func(Actions) (string, error)) tea.Cmd {
	a := m.actions
	if a == nil {
		return func() tea.Msg { return ActionDoneMsg{Err: errNoActions} }
	}
	return func() tea.Msg {
		text, err := do(a)
		return ActionDoneMsg{Text: text, Err: err}
	}
}

func (m *Model) approve(id string) tea.Cmd {
	return m.act(func(a Actions) (string, error) { return a.Approve(id) })
}

func (m *Model) allowForSession(id string) tea.Cmd {
	return m.act(func(a Actions) (string, error) {
		sa, ok := a.(SessionAllower)
		if !ok {
			return "", errors.New("this team cannot allow a permission for the session")
		}
		return sa.AllowForSession(id)
	})
}

func (m *Model) reject(id, feedback string) tea.Cmd {
	return m.act(func(a Actions) (string, error) { return a.Reject(id, feedback) })
}

func (m *Model) shutdown(member string) tea.Cmd {
	return m.act(func(a Actions) (string, error) { return a.Shutdown(member) })
}

func (m *Model) send(member, text string) tea.Cmd {
	return m.act(func(a Actions) (string, error) { return a.Send(member, text) })
}

func (m *Model) broadcast(text string) tea.Cmd {
	return m.act(func(a Actions) (string, error) { return a.Broadcast(text) })
}

// Lead is the lead's operations on a huddle team, wherever it is kept.
// LeadActions makes the keys' Actions of them (StoreLead: on a store),
// with the same lines flashed.
type Lead struct {
	Decide          func(id string, ev protocol.RequestEvent, feedback string) (*protocol.Request, error)
	AllowForSession func(id string) (*protocol.Request, error)
	RequestShutdown func(member, reason string) (*protocol.Request, error)
	Send            func(member, text string) error
	Broadcast       func(text string) (int, error)
	// Restart, when set, asks for a stopped or crashed member to run again.
	Restart func(member string) error
}

// LeadActions are the keys acting through l.
func LeadActions(l Lead) Actions { return leadActions{l} }

type leadActions struct{ l Lead }

// actTimeout bounds one key's action on a store: an unreachable server is
// a flashed error, not a hung action.
const actTimeout = 30 * time.Second

// StoreLead is the lead's operations (team's lead.go) on the team st
// keeps, each under its own deadline; ctx ends them. R asks the runtime
// holding the member's lease, on any machine.
func StoreLead(ctx context.Context, st store.Store) Lead {
	return StoreLeadAs(ctx, st, protocol.Lead)
}

// StoreLeadAs is StoreLead with its decisions recorded as by's (an SSH
// session's key: "lead:alice"); what it sends is still the lead's.
func StoreLeadAs(ctx context.Context, st store.Store, by string) Lead {
	withTeam := func(f func(ctx context.Context, t *team.Team) error) error {
		ctx, cancel := context.WithTimeout(ctx, actTimeout)
		defer cancel()
		t, err := team.LoadFrom(ctx, st)
		if err != nil {
			return err
		}
		return f(ctx, t)
	}
	return Lead{
		Decide: func(id string, ev protocol.RequestEvent, feedback string) (*protocol.Request, error) {
			ctx, cancel := context.WithTimeout(ctx, actTimeout)
			defer cancel()
			return team.Decide(ctx, st, id, ev, feedback, by)
		},
		AllowForSession: func(id string) (*protocol.Request, error) {
			ctx, cancel := context.WithTimeout(ctx, actTimeout)
			defer cancel()
			return team.AllowForSession(ctx, st, id, by)
		},
		RequestShutdown: func(member, reason string) (r *protocol.Request, err error) {
			err = withTeam(func(ctx context.Context, t *team.Team) error {
				r, err = team.RequestShutdown(ctx, st, t, member, reason)
				return err
			})
			return r, err
		},
		Send: func(member, text string) error {
			return withTeam(func(ctx context.Context, t *team.Team) error {
				return team.Send(ctx, st, t, protocol.Lead, member, text)
			})
		},
		Broadcast: func(text string) (n int, err error) {
			err = withTeam(func(ctx context.Context, t *team.Team) error {
				n, err = team.Broadcast(ctx, st, t, protocol.Lead, text)
				return err
			})
			return n, err
		},
		Restart: func(member string) error {
			ctx, cancel := context.WithTimeout(ctx, actTimeout)
			defer cancel()
			_, err := team.RequestRestart(ctx, st, member)
			return err
		},
	}
}

func (a leadActions) Approve(id string) (string, error) {
	r, err := a.l.Decide(id, protocol.EventApprove, "")
	if err != nil {
		return "", err
	}
	if r.Kind == protocol.KindPermission {
		return fmt.Sprintf("allowed %s once: %s may %s", r.ID, r.From, permissionLine(r)), nil
	}
	return fmt.Sprintf("approved %s: %s may go on", r.ID, r.From), nil
}

func (a leadActions) AllowForSession(id string) (string, error) {
	if a.l.AllowForSession == nil {
		return "", errors.New("this team cannot allow a permission for the session")
	}
	r, err := a.l.AllowForSession(id)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("allowed %s: %s may use %s for the rest of its session", r.ID, r.From, r.Rule), nil
}

func (a leadActions) Reject(id, feedback string) (string, error) {
	r, err := a.l.Decide(id, protocol.EventReject, feedback)
	if err != nil {
		return "", err
	}
	if r.Kind == protocol.KindPermission {
		return fmt.Sprintf("denied %s: %s's agent reads why", r.ID, r.From), nil
	}
	return fmt.Sprintf("rejected %s: %s will revise", r.ID, r.From), nil
}

func (a leadActions) Shutdown(member string) (string, error) {
	r, err := a.l.RequestShutdown(member, "asked from the huddle UI")
	if err != nil {
		return "", err
	}
	if r.Status == protocol.RequestCancelled {
		return fmt.Sprintf("%s: %s", r.ID, r.ResponseReason), nil
	}
	return fmt.Sprintf("asked %s to shut down (%s)", member, r.ID), nil
}

func (a leadActions) Send(member, text string) (string, error) {
	if err := a.l.Send(member, text); err != nil {
		return "", err
	}
	return "sent to " + member, nil
}

func (a leadActions) Broadcast(text string) (string, error) {
	n, err := a.l.Broadcast(text)
	if err != nil {
		return "", fmt.Errorf("broadcast reached %d members, then: %w", n, err)
	}
	return fmt.Sprintf("broadcast to %d members", n), nil
}

func (a leadActions) Restart(member string) (string, error) {
	if a.l.Restart == nil {
		return "", errNoRestart
	}
	if err := a.l.Restart(member); err != nil {
		return "", err
	}
	return "asked the runtime to run " + member + " again", nil
}

var (
	errNoRestart = errors.New("this team's members cannot be restarted from huddle")
	errNoActions = errors.New("this screen only shows the team: its keys act on nothing")
)

// restart asks for member to run again, when the team's actions can.
func (m *Model) restart(member string) tea.Cmd {
	return m.act(func(a Actions) (string, error) {
		r, ok := a.(Restarter)
		if !ok {
			return "", errNoRestart
		}
		return r.Restart(member)
	})
}

// permissionLine is a permission's use on one line: its summary, or its
// tool.
func permissionLine(r *protocol.Request) string {
	if r.Permission == nil {
		return "go on"
	}
	if r.Permission.Summary != "" {
		return r.Permission.Summary
	}
	return "use " + r.Permission.Tool
}

// DeskActions is what the keys do on a desk (team.Team.Desk): a, A and r
// decide its sessions' questions as on any team; s, m, b and R refuse,
// saying why, for a desk member is a person's own session, which reads
// nothing but the desk's answers and which no runtime runs.
func DeskActions(l Lead) Actions { return deskActions{leadActions{l}} }

type deskActions struct{ l leadActions }

func (a deskActions) Approve(id string) (string, error)         { return a.l.Approve(id) }
func (a deskActions) AllowForSession(id string) (string, error) { return a.l.AllowForSession(id) }
func (a deskActions) Reject(id, feedback string) (string, error) {
	return a.l.Reject(id, feedback)
}
func (a deskActions) Shutdown(string) (string, error)     { return "", errors.New(a.RefusesShutdown()) }
func (a deskActions) Send(string, string) (string, error) { return "", errors.New(a.RefusesMessage()) }
func (a deskActions) Broadcast(string) (string, error)    { return "", errors.New(a.RefusesMessage()) }

func (deskActions) RefusesShutdown() string {
	return "a desk member is one of your own sessions: end it in its terminal"
}

func (deskActions) RefusesMessage() string {
	return "a desk member's session reads only the desk's answers, not messages"
}

// WatchOnly is what the keys do for someone who may see the team but not
// act on it (a read-only SSH key): every key that would act says why, at
// once, and the footer leaves them out.
func WatchOnly(why string) Actions { return watchOnly(why) }

type watchOnly string

func (w watchOnly) Approve(string) (string, error)        { return "", errors.New(string(w)) }
func (w watchOnly) Reject(string, string) (string, error) { return "", errors.New(string(w)) }
func (w watchOnly) Shutdown(string) (string, error)       { return "", errors.New(string(w)) }
func (w watchOnly) Send(string, string) (string, error)   { return "", errors.New(string(w)) }
func (w watchOnly) Broadcast(string) (string, error)      { return "", errors.New(string(w)) }
func (w watchOnly) Restart(string) (string, error)        { return "", errors.New(string(w)) }
func (w watchOnly) Refuses(*protocol.Request) string      { return string(w) }
func (w watchOnly) RefusesShutdown() string               { return string(w) }
func (w watchOnly) RefusesMessage() string                { return string(w) }
func (w watchOnly) RefusesRestart() string                { return string(w) }
