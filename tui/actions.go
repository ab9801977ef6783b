package tui

import (
	"fmt"

	tea "charm.land/bubbletea/v2"

	"huddle/protocol"
	"huddle/team"
)

// The actions run off the UI loop and call the same functions as the CLI.

func (m *Model) approve(id string) tea.Cmd {
	dir := m.dir
	return func() tea.Msg {
		r, err := team.Decide(dir, id, protocol.EventApprove, "", protocol.Lead)
		if err != nil {
			return ActionDoneMsg{Err: err}
		}
		return ActionDoneMsg{Text: fmt.Sprintf("approved %s: %s may go on", r.ID, r.From)}
	}
}

func (m *Model) reject(id, feedback string) tea.Cmd {
	dir := m.dir
	return func() tea.Msg {
		r, err := team.Decide(dir, id, protocol.EventReject, feedback, protocol.Lead)
		if err != nil {
			return ActionDoneMsg{Err: err}
		}
		return ActionDoneMsg{Text: fmt.Sprintf("rejected %s: %s will revise", r.ID, r.From)}
	}
}

func (m *Model) shutdown(member string) tea.Cmd {
	dir := m.dir
	return func() tea.Msg {
		r, err := team.RequestShutdown(dir, member, "asked from the huddle UI")
		if err != nil {
			return ActionDoneMsg{Err: err}
		}
		if r.Status == protocol.RequestCancelled {
			return ActionDoneMsg{Text: fmt.Sprintf("%s: %s", r.ID, r.ResponseReason)}
		}
		return ActionDoneMsg{Text: fmt.Sprintf("asked %s to shut down (%s)", member, r.ID)}
	}
}

func (m *Model) send(member, text string) tea.Cmd {
	dir := m.dir
	return func() tea.Msg {
		t, err := team.Load(dir)
		if err == nil {
			err = team.Send(dir, t, protocol.Lead, member, text)
		}
		if err != nil {
			return ActionDoneMsg{Err: err}
		}
		return ActionDoneMsg{Text: "sent to " + member}
	}
}

func (m *Model) broadcast(text string) tea.Cmd {
	dir := m.dir
	return func() tea.Msg {
		t, err := team.Load(dir)
		if err != nil {
			return ActionDoneMsg{Err: err}
		}
		n, err := team.Broadcast(dir, t, protocol.Lead, text)
		if err != nil {
			return ActionDoneMsg{Err: fmt.Errorf("broadcast reached %d members, then: %w", n, err)}
		}
		return ActionDoneMsg{Text: fmt.Sprintf("broadcast to %d members", n)}
	}
}
