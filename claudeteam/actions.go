package claudeteam

import (
	"context"
	"fmt"
	"time"

	"huddle/protocol"
)

// permissionResponse is the text of a permission_response, the shape
// Claude Code's leader writes, plus answeredBy: who answered from huddle.
type permissionResponse struct {
	Type       string          `json:"type"`
	RequestID  string          `json:"request_id"`
	Subtype    string          `json:"subtype"`
	Response   *permissionGive `json:"response,omitempty"`
	Error      string          `json:"error,omitempty"`
	AnsweredBy string          `json:"answeredBy"`
}

type permissionGive struct {
	UpdatedInput map[string]any `json:"updated_input,omitempty"`
}

// AnswerPermission answers a pending permission_request of team: it
// appends a permission_response from team-lead to the asking member's
// inbox, recording by as who answered. Experimental: docs/claude-teams.md
// says what is not verified.
func AnswerPermission(ctx context.Context, root, teamName, id string, approve bool, by, reason string) (protocol.Request, error) {
	st, err := Read(root, teamName)
	if err != nil {
		return protocol.Request{}, err
	}
	var req *protocol.Request
	for i := range st.Snapshot.Requests {
		if r := &st.Snapshot.Requests[i]; r.ID == id {
			req = r
		}
	}
	switch {
	case req == nil:
		return protocol.Request{}, fmt.Errorf("no request %q in Claude Code team %s", id, teamName)
	case req.Kind != KindPermission:
		return *req, fmt.Errorf("%s is a %s request: huddle answers only permission requests of a Claude Code team", id, req.Kind)
	case req.Status != protocol.RequestPending:
		return *req, &AlreadyError{Request: *req}
	}
	if err := CheckName("member", req.From); err != nil {
		return *req, err
	}
	resp := permissionResponse{Type: typePermissionResponse, RequestID: id, Subtype: "success", AnsweredBy: by}
	if approve {
		resp.Response = &permissionGive{}
	} else {
		resp.Subtype, resp.Error = subtypePermissionDenied, reason
		if resp.Error == "" {
			resp.Error = "denied from huddle by " + by
		}
	}
	text, err := protocol.Marshal(resp)
	if err != nil {
		return *req, err
	}
	now := time.Now()
	e := Entry{From: LeadName, Text: string(text), Timestamp: Stamp(now)}
	if err := appendEntry(ctx, InboxPath(root, teamName, req.From), e); err != nil {
		return *req, err
	}
	return *req, nil
}

// AlreadyError says a request was resolved already, and by whom.
type AlreadyError struct{ Request protocol.Request }

func (e *AlreadyError) Error() string {
	return fmt.Sprintf("%s is already %s by %s", e.Request.ID, e.Request.Status, e.Request.ResolvedBy)
}

// Read folds the team once, for a command that prints it.
func Read(root, teamName string) (State, error) { return ReadFrom(root, teamName, "") }

// ReadFrom is Read with the team's journal j: what huddle saw of the team
// before (Claude Code deletes what it delivered) is folded in, and what
// this read sees is journaled.
func ReadFrom(root, teamName string, j Journal) (State, error) {
	if err := CheckName("team", teamName); err != nil {
		return State{}, err
	}
	return newFolder(root, teamName, j).fold(), nil
}
