package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// toolDef is one tool: what the model is told and the schema of its
// arguments.
type toolDef struct {
	name, description, params string
}

var teamTools = []toolDef{
	{"submit_plan", "Submit your plan to the lead and wait for the decision. Approval opens write_file, edit_file and bash when a plan is required; a rejection comes with feedback: revise and submit again.",
		`{"type":"object","properties":{"plan":{"type":"string","description":"the plan, step by step"}},"required":["plan"]}`},
	{"send_message", "Send a message to one teammate.",
		`{"type":"object","properties":{"to":{"type":"string","description":"the teammate's name"},"content":{"type":"string"}},"required":["to","content"]}`},
	{"broadcast", "Send a message to every teammate.",
		`{"type":"object","properties":{"content":{"type":"string"}},"required":["content"]}`},
	{"call_teammate", "Invoke an action of a teammate and wait for its result.",
		`{"type":"object","properties":{"target":{"type":"string"},"action":{"type":"string"},"prompt":{"type":"string"},"timeout_sec":{"type":"integer","description":"0: the default"}},"required":["target","action","prompt"]}`},
	{"shutdown_response", "Answer a shutdown request: approve to stop now, or refuse with a reason.",
		`{"type":"object","properties":{"request_id":{"type":"string"},"approve":{"type":"boolean"},"reason":{"type":"string"}},"required":["request_id","approve"]}`},
}

var workTools = []toolDef{
	{"read_file", "Read a file of your directory.",
		`{"type":"object","properties":{"path":{"type":"string","description":"relative to your directory"}},"required":["path"]}`},
	{"write_file", "Write a file of your directory (created or replaced).",
		`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]}`},
	{"edit_file", "Replace the one occurrence of old_text with new_text in a file of your directory.",
		`{"type":"object","properties":{"path":{"type":"string"},"old_text":{"type":"string"},"new_text":{"type":"string"}},"required":["path","old_text","new_text"]}`},
	{"list_files", "List a directory of your directory (\".\" for its top).",
		`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`},
	{"bash", "Run a shell command in your directory, with a timeout; you get its output and exit status.",
		`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`},
}

// gatedTools change things: with a plan required, they wait for approval.
var gatedTools = map[string]bool{"write_file": true, "edit_file": true, "bash": true}

func (a *Agent) toolSpecs() []ToolSpec {
	var specs []ToolSpec
	for _, t := range teamTools {
		specs = append(specs, ToolSpec{Name: t.name, Description: t.description, Params: json.RawMessage(t.params)})
	}
	for _, t := range workTools {
		if a.work[t.name] {
			specs = append(specs, ToolSpec{Name: t.name, Description: t.description, Params: json.RawMessage(t.params)})
		}
	}
	return specs
}

func (a *Agent) systemPrompt() string {
	var b strings.Builder
	fmt.Fprintf(&b, "You are %s, a member of a team of agents supervised by huddle.", orDefault(a.cfg.Name, "a teammate"))
	if a.cfg.Role != "" {
		fmt.Fprintf(&b, " Your role: %s.", a.cfg.Role)
	}
	if len(a.cfg.Teammates) > 0 {
		fmt.Fprintf(&b, "\nYour teammates: %s. Reach them with send_message, broadcast and call_teammate; their messages come to you as user turns.", strings.Join(a.cfg.Teammates, ", "))
	}
	b.WriteString("\nEverything you do goes through huddle's tools and is shown to the operator and recorded.")
	if len(a.work) > 0 {
		var names []string
		for _, t := range KnownTools {
			if a.work[t] {
				names = append(names, t)
			}
		}
		fmt.Fprintf(&b, "\nYour work tools (%s) act only inside your directory; paths are relative to it.", strings.Join(names, ", "))
	}
	if a.cfg.PlanRequired {
		b.WriteString("\nA plan is required: write_file, edit_file and bash are refused until you submit_plan and the lead approves it. If it is rejected, revise it with the feedback and submit again.")
	}
	b.WriteString("\nWhen a shutdown request arrives, answer it with shutdown_response. When your task is done, answer with a short summary and no tool call.")
	if a.cfg.System != "" {
		b.WriteString("\n\n")
		b.WriteString(a.cfg.System)
	}
	return b.String()
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// runTool runs one tool call and returns its result. Refusals and failures
// are results (isErr) the model sees, never errors of the loop; stop reports
// an approved shutdown.
func (a *Agent) runTool(ctx context.Context, call ToolCall) (text string, isErr, stop bool) {
	switch call.Name {
	case "submit_plan":
		var args struct {
			Plan *string `json:"plan"`
		}
		if msg := decodeArgs(call, &args); msg != "" {
			return msg, true, false
		}
		if args.Plan == nil {
			return badArgs(call, "plan is required"), true, false
		}
		text, isErr = a.submitPlan(ctx, *args.Plan)
		return text, isErr, false
	case "send_message":
		var args struct{ To, Content *string }
		if msg := decodeArgs(call, &args); msg != "" {
			return msg, true, false
		}
		if args.To == nil || args.Content == nil {
			return badArgs(call, "to and content are required"), true, false
		}
		a.cfg.Env.Activity("sending to " + *args.To)
		if err := a.cfg.Env.Send(*args.To, *args.Content); err != nil {
			return "not sent: " + err.Error(), true, false
		}
		return "sent to " + *args.To, false, false
	case "broadcast":
		var args struct{ Content *string }
		if msg := decodeArgs(call, &args); msg != "" {
			return msg, true, false
		}
		if args.Content == nil {
			return badArgs(call, "content is required"), true, false
		}
		a.cfg.Env.Activity("broadcasting")
		if err := a.cfg.Env.Broadcast(*args.Content); err != nil {
			return "not sent: " + err.Error(), true, false
		}
		return "sent to the team", false, false
	case "call_teammate":
		var args struct {
			Target, Action, Prompt *string
			TimeoutSec             int `json:"timeout_sec"`
		}
		if msg := decodeArgs(call, &args); msg != "" {
			return msg, true, false
		}
		if args.Target == nil || args.Action == nil || args.Prompt == nil {
			return badArgs(call, "target, action and prompt are required"), true, false
		}
		a.cfg.Env.Activity(fmt.Sprintf("calling %s.%s", *args.Target, *args.Action))
		res, err := a.cfg.Env.Call(ctx, *args.Target, *args.Action, *args.Prompt, args.TimeoutSec)
		if err != nil {
			return "call failed: " + err.Error(), true, false
		}
		return res, false, false
	case "shutdown_response":
		var args struct {
			RequestID *string `json:"request_id"`
			Approve   *bool   `json:"approve"`
			Reason    string  `json:"reason"`
		}
		if msg := decodeArgs(call, &args); msg != "" {
			return msg, true, false
		}
		if args.RequestID == nil || args.Approve == nil {
			return badArgs(call, "request_id and approve are required"), true, false
		}
		if err := a.cfg.Env.ShutdownResponse(*args.RequestID, *args.Approve, args.Reason); err != nil {
			return "not answered: " + err.Error(), true, false
		}
		if *args.Approve {
			return "shutdown approved: stopping", false, true
		}
		return "shutdown refused", false, false
	}
	if !a.work[call.Name] {
		return fmt.Sprintf("unknown tool %q", call.Name), true, false
	}
	if gatedTools[call.Name] && a.cfg.PlanRequired && !a.approved() {
		return fmt.Sprintf("refused: %s needs an approved plan; call submit_plan and wait for the lead's approval first", call.Name), true, false
	}
	text, isErr = a.runWorkTool(ctx, call)
	return text, isErr, false
}

// submitPlan opens the plan request and waits: an approval opens the gate,
// a rejection (or an expiry) closes it again.
func (a *Agent) submitPlan(ctx context.Context, plan string) (string, bool) {
	a.cfg.Env.Activity("waiting for approval")
	approved, feedback, err := a.cfg.Env.SubmitPlan(ctx, plan)
	if err != nil {
		a.setApproved(false)
		return "plan not submitted: " + err.Error(), true
	}
	a.setApproved(approved)
	if approved {
		if feedback != "" {
			return "approved: " + feedback, false
		}
		return "approved", false
	}
	return "rejected: " + orDefault(feedback, "no feedback") + "\nRevise the plan and submit it again.", true
}

func (a *Agent) approved() bool {
	a.planMu.Lock()
	defer a.planMu.Unlock()
	return a.planApproved
}

func (a *Agent) setApproved(v bool) {
	a.planMu.Lock()
	a.planApproved = v
	a.planMu.Unlock()
}

// decodeArgs unmarshals the model's arguments; a non-empty result is the
// error tool result for arguments that are not a JSON object of the
// expected shape.
func decodeArgs(call ToolCall, v any) string {
	args := bytes.TrimSpace(call.Args)
	if len(args) == 0 || args[0] != '{' {
		return badArgs(call, "the arguments are not a JSON object")
	}
	if err := json.Unmarshal(args, v); err != nil {
		return badArgs(call, err.Error())
	}
	return ""
}

func badArgs(call ToolCall, why string) string {
	schema := ""
	for _, t := range append(append([]toolDef{}, teamTools...), workTools...) {
		if t.name == call.Name {
			schema = t.params
		}
	}
	return fmt.Sprintf("invalid arguments for %s: %s; expected %s", call.Name, why, schema)
}
