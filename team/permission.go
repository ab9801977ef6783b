package team

import (
	"encoding/json"
	"time"

	"huddle/permit"
	"huddle/protocol"
)

// summaryWidth is how much of a permission its one-line summary keeps.
const summaryWidth = 160

// PermissionRequest is the pending request of member from to use tool
// with input (in cwd, which its paths are relative to), as the runtime
// and the desk open one: drawn for a person, with its one-line summary
// and the rule allowing it for the session would add.
func PermissionRequest(id, from string, use permit.Use, toolUseID string, suggestions json.RawMessage, ttl time.Duration) protocol.Request {
	r := protocol.NewRequest(protocol.KindPermission, id, from, protocol.Lead, time.Now(), ttl)
	r.Permission = &protocol.Permission{
		Tool: use.Tool, Input: use.Input, Summary: permit.Summary(use, summaryWidth), Drawn: permit.Describe(use),
		ToolUseID: toolUseID, Suggestions: suggestions,
	}
	if r.Permission.Summary == "" {
		r.Permission.Summary = use.Tool
	}
	r.Rule = permit.SessionRule(use)
	return r
}

// PermissionAsk is the permission_request that puts r to the lead.
func PermissionAsk(r *protocol.Request) *protocol.Message {
	m := protocol.NewMessage(protocol.TypePermissionRequest, r.From, protocol.Lead)
	m.RequestID, m.Content = r.ID, r.Permission.Summary
	return &m
}
