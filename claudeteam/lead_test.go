package claudeteam

import (
	"context"
	"errors"
	"fmt"
	"time"

	"huddle/protocol"
)

// shutdownRequest is the text of a shutdown_request, in Claude Code's
// field order.
type shutdownRequest struct {
	Type      string `json:"type"`
	RequestID string `json:"requestId"`
	From      string `json:"from"`
	Reason    string `json:"reason,omitempty"`
	Timestamp string `json:"timestamp"`
}

// leadAsksShutdown writes what Claude Code's own lead writes to ask member
// to shut down: a shutdown_request from team-lead appended to the member's
// inbox under its lock, with Claude Code's id (shutdown-<epoch ms>@<member>),
// which the member's shutdown_approved or shutdown_rejected resolves.
// huddle itself never asks (Claude Code 2.1.328 refuses a shutdown it did
// not see come from its own lead: docs/claude-teams.md); the tests of the
// inbox lock and of a member's answers play the lead with it.
func leadAsksShutdown(ctx context.Context, root, teamName, member, reason string, now time.Time) (string, error) {
	cfg, err := ReadConfig(root, teamName)
	if err != nil {
		return "", err
	}
	if err := CheckName("member", member); err != nil {
		return "", err
	}
	if _, ok := cfg.member(member); !ok {
		return "", fmt.Errorf("no member %q in Claude Code team %s (members: %s)", member, teamName, listOrNone(memberNames(cfg)))
	}
	if member == LeadName {
		return "", errors.New("the team lead is the Claude Code session you run: it is not asked to shut down from its own inbox")
	}
	id := fmt.Sprintf("shutdown-%d@%s", now.UnixMilli(), member)
	text, err := protocol.Marshal(shutdownRequest{Type: typeShutdownRequest, RequestID: id, From: LeadName, Reason: reason, Timestamp: Stamp(now)})
	if err != nil {
		return "", err
	}
	e := Entry{From: LeadName, Text: string(text), Timestamp: Stamp(now)}
	if err := appendEntry(ctx, InboxPath(root, teamName, member), e); err != nil {
		return "", err
	}
	return id, nil
}

func memberNames(c Config) []string {
	var out []string
	for _, m := range c.Members {
		out = append(out, m.Name)
	}
	return out
}
