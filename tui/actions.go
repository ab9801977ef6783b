package tui

import (
	"fmt"

	tea "charm.land/bubbletea/v2"

	"huddle/protocol"
	"huddle/team"
)

// Actions are what the UI's keys do to the team it shows. Each returns the
// line the UI flashes. The default acts on a huddle team directory
// (dirActions); `huddle claude attach` gives its own for a Claude Code team.
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
		a = dirActions{dir: m.dir}
	}
	return func() tea.Msg {
		text, err := do(a)
		return ActionDoneMsg{Text: text, Err: err}
	}
}

// refused reports whether the Actions will not decide r, and says why in
// the flash line, before a key acts or opens a dialog.
func (m *Model) refused(r *protocol.Request) bool {
	rf, ok := m.actions.(Refuser)
	if !ok {
		return false
	}
	why := rf.Refuses(r)
	if why != "" {
		m.flash, m.flashBad = why, true
	}
	return why != ""
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

// dirActions act on the huddle team directory dir.
type dirActions struct{ dir string }

func (d dirActions) Approve(id string) (string, error) {
	r, err := team.Decide(d.dir, id, protocol.EventApprove, "", protocol.Lead)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("approved %s: %s may go on", r.ID, r.From), nil
}

func (d dirActions) Reject(id, feedback string) (string, error) {
	r, err := team.Decide(d.dir, id, protocol.EventReject, feedback, protocol.Lead)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("rejected %s: %s will revise", r.ID, r.From), nil
}

func (d dirActions) Shutdown(member string) (string, error) {
	r, err := team.RequestShutdown(d.dir, member, "asked from the huddle UI")
	if err != nil {
		return "", err
	}
	if r.Status == protocol.RequestCancelled {
		return fmt.Sprintf("%s: %s", r.ID, r.ResponseReason), nil
	}
	return fmt.Sprintf("asked %s to shut down (%s)", member, r.ID), nil
}

func (d dirActions) Send(member, text string) (string, error) {
	t, err := team.Load(d.dir)
	if err == nil {
		err = team.Send(d.dir, t, protocol.Lead, member, text)
	}
	if err != nil {
		return "", err
	}
	return "sent to " + member, nil
}

func (d dirActions) Broadcast(text string) (string, error) {
	t, err := team.Load(d.dir)
	if err != nil {
		return "", err
	}
	n, err := team.Broadcast(d.dir, t, protocol.Lead, text)
	if err != nil {
		return "", fmt.Errorf("broadcast reached %d members, then: %w", n, err)
	}
	return fmt.Sprintf("broadcast to %d members", n), nil
}

func (d dirActions) Restart(member string) (string, error) {
	if _, err := team.RequestRestart(d.dir, member); err != nil {
		return "", err
	}
	return "asked the runtime to run " + member + " again", nil
}

// restart asks for member to run again, when the team's actions can.
func (m *Model) restart(member string) tea.Cmd {
	return m.act(func(a Actions) (string, error) {
		r, ok := a.(Restarter)
		if !ok {
			return "", fmt.Errorf("this team's members cannot be restarted from huddle")
		}
		return r.Restart(member)
	})
}
