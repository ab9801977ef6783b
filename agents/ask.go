package agents

import (
	"encoding/json"
	"strings"

	"huddle/protocol"
)

// A CLI on a control protocol (Claude Code) asks its host before it uses
// a tool; the agent's loop answers. ExitPlanMode's question is the plan
// put forward: it waits for the lead's decision on the plan, and the
// answer is that decision. Any other question becomes a permission line
// (a pm- request the runtime decides by its gate and rules, or asks the
// lead) and waits for its permission_response.

// asked takes a question of the running turn.
func (a *agent) asked(q *ask) {
	if q.Tool == "ExitPlanMode" {
		a.planPut(q)
		return
	}
	id := protocol.NewRequestID(protocol.KindPermission)
	a.pending[id] = q
	a.say(protocol.ExecLine{Kind: "permission", RequestID: id, Tool: q.Tool, Input: q.Input, ToolUseID: q.ToolUseID, Suggestions: q.Suggestions})
	var in claudeToolInput
	_ = json.Unmarshal(q.Input, &in) // a tool whose input is not an object still has a name
	a.report(oneLine("asks to use "+claudeActivity(q.Tool, in, a.cfg.Dir), maxActivity))
}

// planPut puts the plan of an ExitPlanMode question to the lead; once the
// plan is approved, the CLI leaving plan mode again needs no one.
func (a *agent) planPut(q *ask) {
	switch {
	case a.phase == approved:
		q.Reply <- answer{Allow: true}
		return
	case strings.TrimSpace(q.Plan) == "":
		q.Reply <- answer{Message: "huddle found no plan to put to the lead: write the plan to the plan file first, then call ExitPlanMode."}
		return
	}
	a.plan, a.planAsk = strings.TrimSpace(q.Plan), q
	a.say(protocol.ExecLine{Kind: "plan", Plan: a.plan})
	a.setPhase(awaiting)
}

// planAnswered answers the ExitPlanMode question with the lead's
// decision: approved, the CLI leaves plan mode and the turn carries the
// plan out (the lead's note added to the plan the model reads); rejected,
// the model reads the feedback and revises in the same turn; expired, the
// plan waits again.
func (a *agent) planAnswered(m protocol.Message) {
	q := a.planAsk
	switch {
	case m.Approved():
		a.planAsk, a.approvedInTurn = nil, true
		a.setPhase(approved)
		q.Reply <- answer{Allow: true, Input: withNote(q.Input, a.plan, m.Feedback)}
		a.report("carrying out the plan")
	case m.Reason == string(protocol.RequestExpired):
		a.say(protocol.ExecLine{Kind: "plan", Plan: a.plan})
	case m.Reason == string(protocol.RequestCancelled):
		a.planAsk = nil
		a.setPhase(planning)
		a.log.printf("agent: plan %s cancelled: %s", m.RequestID, m.Feedback)
		q.Reply <- answer{Message: "huddle cancelled the plan request: " + m.Feedback}
	default:
		a.planAsk = nil
		a.setPhase(revising)
		q.Reply <- answer{Message: revisePlanMessage(m.Feedback)}
	}
}

// withNote is ExitPlanMode's input as the approval sends it back: the
// plan approved, with the lead's note when there is one.
func withNote(input json.RawMessage, plan, note string) json.RawMessage {
	if note == "" {
		return nil // the input as the CLI sent it
	}
	var in map[string]json.RawMessage
	if json.Unmarshal(input, &in) != nil || in == nil {
		return nil
	}
	b, err := json.Marshal(plan + "\n\nThe lead approved this plan with a note: " + note)
	if err != nil {
		return nil
	}
	in["plan"] = b
	out, err := json.Marshal(in)
	if err != nil {
		return nil
	}
	return out
}

// permissionDecided hands a permission_response to the question that
// waits for it.
func (a *agent) permissionDecided(m protocol.Message) {
	q := a.pending[m.RequestID]
	if q == nil {
		a.log.printf("agent: ignored the answer to %s: no question of this agent waits for it", m.RequestID)
		return
	}
	delete(a.pending, m.RequestID)
	if m.Approved() {
		q.Reply <- answer{Allow: true}
		return
	}
	why := strings.TrimSpace(m.Feedback)
	if why == "" {
		why = "no reason given"
	}
	q.Reply <- answer{Message: "Denied through huddle: " + why}
}

// forgetAsks drops the questions of a turn that ended: nothing waits for
// their answers any more.
func (a *agent) forgetAsks() {
	for id := range a.pending {
		a.log.printf("agent: the turn ended before %s was answered", id)
	}
	clear(a.pending)
	a.planAsk = nil
}
