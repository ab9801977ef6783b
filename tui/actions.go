package tui

import (
	"errors"
	"fmt"

	tea "charm.land/bubbletea/v2"

	"huddle/protocol"
	"huddle/team"
)

// Actions are what the UI's keys do to the team it shows. Each returns the
// line the UI flashes. The default acts on a huddle team directory
// (dirLead); `huddle claude attach` gives its own for a Claude Code team.
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
		a = LeadActions(dirLead(m.dir))
	}
	return func() tea.Msg {
		text, err := do(a)
		return ActionDoneMsg{Text: text, Err: err}
	}
}

func (m *Model) approve(id string) tea.Cmd {
	return m.act(func(a Actions) (string, error) { return a.Approve(id) })
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
// LeadActions makes the keys' Actions of them: the team directory's by
// default (dirLead), a store's for huddle attach --store (team/onstore.go),
// with the same lines flashed.
type Lead struct {
	Decide          func(id string, ev protocol.RequestEvent, feedback string) (*protocol.Request, error)
	RequestShutdown func(member, reason string) (*protocol.Request, error)
	Send            func(member, text string) error
	Broadcast       func(text string) (int, error)
	// Restart, when set, asks for a stopped or crashed member to run again.
	Restart func(member string) error
}

// LeadActions are the keys acting through l.
func LeadActions(l Lead) Actions { return leadActions{l} }

type leadActions struct{ l Lead }

// dirLead is the lead's operations on the team directory dir.
func dirLead(dir string) Lead {
	return Lead{
		Decide: func(id string, ev protocol.RequestEvent, feedback string) (*protocol.Request, error) {
			return team.Decide(dir, id, ev, feedback, protocol.Lead)
		},
		RequestShutdown: func(member, reason string) (*protocol.Request, error) {
			return team.RequestShutdown(dir, member, reason)
		},
		Send: func(member, text string) error {
			t, err := team.Load(dir)
			if err != nil {
				return err
			}
			return team.Send(dir, t, protocol.Lead, member, text)
		},
		Broadcast: func(text string) (int, error) {
			t, err := team.Load(dir)
			if err != nil {
				return 0, err
			}
			return team.Broadcast(dir, t, protocol.Lead, text)
		},
		Restart: func(member string) error {
			_, err := team.RequestRestart(dir, member)
			return err
		},
	}
}

func (a leadActions) Approve(id string) (string, error) {
	r, err := a.l.Decide(id, protocol.EventApprove, "")
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("approved %s: %s may go on", r.ID, r.From), nil
}

func (a leadActions) Reject(id, feedback string) (string, error) {
	r, err := a.l.Decide(id, protocol.EventReject, feedback)
	if err != nil {
		return "", err
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

var errNoRestart = errors.New("this team's members cannot be restarted from huddle")

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
