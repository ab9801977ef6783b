package claudeteam

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The protocol messages Claude Code encodes inside an inbox entry's text
// (docs/claude-teams.md lists their sources).
const (
	typeIdle                = "idle_notification"
	typeShutdownRequest     = "shutdown_request"
	typeShutdownApproved    = "shutdown_approved"
	typeShutdownRejected    = "shutdown_rejected"
	typeShutdownResponse    = "shutdown_response" // older builds
	typePlanRequest         = "plan_approval_request"
	typePlanResponse        = "plan_approval_response"
	typePermissionRequest   = "permission_request"
	typePermissionResponse  = "permission_response"
	typeTaskAssignment      = "task_assignment"
	subtypePermissionDenied = "error"
)

// payload is the union of the fields of the protocol messages huddle reads;
// Claude Code uses camelCase, except the permission messages' snake_case.
type payload struct {
	Type      string `json:"type"`
	RequestID string `json:"requestId"`
	ReqIDSnk  string `json:"request_id"`
	From      string `json:"from"`
	Timestamp string `json:"timestamp"`
	Reason    string `json:"reason"`
	Content   string `json:"content"`

	Approved    *bool  `json:"approved"`
	Feedback    string `json:"feedback"`
	PlanContent string `json:"planContent"`
	Plan        string `json:"plan"`
	PlanFile    string `json:"planFilePath"`

	IdleReason      string `json:"idleReason"`
	Summary         string `json:"summary"`
	Result          string `json:"result"` // what 2.1.328 sends where older ones sent summary
	CompletedTaskID string `json:"completedTaskId"`
	CompletedStatus string `json:"completedStatus"`
	FailureReason   string `json:"failureReason"`

	AgentID     string          `json:"agent_id"`
	ToolName    string          `json:"tool_name"`
	Description string          `json:"description"`
	Input       json.RawMessage `json:"input"`
	Subtype     string          `json:"subtype"`
	Error       string          `json:"error"`
	// AnsweredBy is huddle's addition to a permission_response it writes:
	// who answered from huddle.
	AnsweredBy string `json:"answeredBy"`

	TaskID     string `json:"taskId"`
	Subject    string `json:"subject"`
	AssignedBy string `json:"assignedBy"`
}

// id is the request id, whichever spelling the message uses.
func (p *payload) id() string {
	if p.RequestID != "" {
		return p.RequestID
	}
	return p.ReqIDSnk
}

// plan is the plan's text (planContent; plan in older write-ups).
func (p *payload) plan() string {
	if p.PlanContent != "" {
		return p.PlanContent
	}
	if p.Plan != "" {
		return p.Plan
	}
	return p.PlanFile
}

// parsePayload reads text as a protocol message: a JSON object with a
// string type. Anything else is plain text.
func parsePayload(text string) (payload, bool) {
	var p payload
	t := strings.TrimSpace(text)
	if !strings.HasPrefix(t, "{") {
		return p, false
	}
	if err := json.Unmarshal([]byte(t), &p); err != nil || p.Type == "" {
		return payload{}, false
	}
	return p, true
}

// readable is a protocol message in one line for a person: what it says,
// or for a type huddle does not know, its raw text.
func readable(p *payload, raw string) string {
	switch p.Type {
	case typeIdle:
		s := "idle"
		if p.IdleReason != "" {
			s += " (" + p.IdleReason + ")"
		}
		if p.CompletedTaskID != "" {
			s += fmt.Sprintf(", task #%s %s", p.CompletedTaskID, p.CompletedStatus)
		}
		if p.FailureReason != "" {
			s += ": " + p.FailureReason
		}
		for _, said := range []string{p.Summary, p.Result} {
			if said != "" {
				s += ": " + said
			}
		}
		return s
	case typePermissionRequest:
		return fmt.Sprintf("asks permission %s: %s %s", p.id(), p.ToolName, p.Description)
	case typePermissionResponse:
		if p.Subtype == subtypePermissionDenied {
			return fmt.Sprintf("denies permission %s: %s", p.id(), p.Error)
		}
		return "allows permission " + p.id()
	case typeTaskAssignment:
		return fmt.Sprintf("task #%s assigned by %s: %s", p.TaskID, p.AssignedBy, p.Subject)
	}
	return raw
}
