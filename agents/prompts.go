package agents

import (
	"fmt"

	"huddle/protocol"
)

// The prompts of each kind of turn. They say what huddle's plan gate
// means to the agent; the gate itself is the read-only mode of every turn
// before the approval, not these words.

func planPrompt(task string, asks bool) string {
	if asks {
		// Claude Code in plan mode: its own instructions say how to write
		// the plan and put it forward; the lead's decision is the answer.
		return "You are a teammate in a team that huddle runs, and the lead must approve your plan before you change anything. " +
			"Plan the task below: read what you need, write the plan (the steps, the files you would change and how you would check the result) " +
			"and put it forward with ExitPlanMode. The lead approves or rejects it; once it is approved, carry it out, " +
			"and end with a short report for the lead: what you changed and how you checked it.\n\n" +
			"Task: " + task
	}
	return "You are a teammate in a team that huddle runs, and the lead must approve your plan before you change anything. " +
		"Plan the task below: read what you need, but change no file and run nothing that changes anything. " +
		"Your final answer is the plan itself, complete and on its own: the steps, the files you would change and how you would check the result.\n\n" +
		"Task: " + task
}

func revisePrompt(feedback string) string {
	return "The lead rejected your plan, with this feedback:\n\n" + feedback + "\n\n" +
		"Revise the plan accordingly. Still change nothing. Your final answer is the whole revised plan, complete and on its own."
}

// revisePlanMessage is what the model reads when the lead rejects the
// plan it put forward with ExitPlanMode.
func revisePlanMessage(feedback string) string {
	return "The lead rejected the plan, with this feedback:\n\n" + feedback + "\n\n" +
		"Revise the plan accordingly, still changing nothing, and put the whole revised plan forward again with ExitPlanMode."
}

func workPrompt(feedback string) string {
	p := "The lead approved your plan: carry out the approved plan now."
	if feedback != "" {
		p += "\n\nThe lead's feedback with the approval: " + feedback
	}
	return p + "\n\nEnd with a short report for the lead: what you changed and how you checked it."
}

func messagePrompt(from, content string, approved bool) string {
	p := fmt.Sprintf("A message from %s, a member of your team:\n\n%s\n\nYour final answer is sent back to %s.", from, content, from)
	if !approved {
		p += " Your plan is not approved yet: change nothing."
	}
	return p
}

func invocationPrompt(inv *protocol.InvocationRequest, approved bool) string {
	p := fmt.Sprintf("%s calls you (action %q) and waits for your answer:\n\n%s\n\nYour final answer is returned to %s as the result.", inv.Caller, inv.Action, inv.Prompt, inv.Caller)
	if !approved {
		p += " Your plan is not approved yet: change nothing."
	}
	return p
}

// contextPrompt restates the task (and the approved plan) for a turn that
// cannot resume a session because the CLI never named one.
func contextPrompt(task, plan, prompt string) string {
	p := "Your task: " + task
	if plan != "" {
		p += "\n\nYour plan, approved by the lead:\n\n" + plan
	}
	return p + "\n\n" + prompt
}
