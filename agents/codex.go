package agents

import (
	"fmt"
	"strings"
)

// codexArgs is Codex's command line for turn t: `codex exec --json`, with
// a read-only or workspace-write sandbox. `codex exec resume` takes no
// --sandbox flag (it is an option of exec, not of resume), so a resumed
// turn sets the sandbox with -c sandbox_mode=…, before the subcommand:
// docs/agents.md has the sources.
func codexArgs(t Turn, extra []string) []string {
	mode := "read-only"
	if t.Edits {
		mode = "workspace-write"
	}
	args := []string{"exec", "--json"}
	if t.Session == "" {
		args = append(args, "--sandbox", mode)
		args = append(args, extra...)
		return append(args, t.Prompt)
	}
	args = append(args, "-c", fmt.Sprintf("sandbox_mode=%q", mode))
	args = append(args, extra...)
	return append(args, "resume", t.Session, t.Prompt)
}

// codexEvent is the part of a `codex exec --json` line the adapter reads.
type codexEvent struct {
	Type     string     `json:"type"`
	ThreadID string     `json:"thread_id"`
	Item     *codexItem `json:"item"`
	Usage    *struct {
		InputTokens       int64 `json:"input_tokens"`
		CachedInputTokens int64 `json:"cached_input_tokens"`
		OutputTokens      int64 `json:"output_tokens"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
	Message string `json:"message"`
}

type codexItem struct {
	Type    string `json:"type"`
	Text    string `json:"text"`
	Command string `json:"command"`
	Changes []struct {
		Path string `json:"path"`
		Kind string `json:"kind"`
	} `json:"changes"`
	Server string `json:"server"`
	Tool   string `json:"tool"`
	Query  string `json:"query"`
	Items  []struct {
		Completed bool `json:"completed"`
	} `json:"items"`
}

type codexStream struct {
	cwd string
	out Outcome
	// notice is the last error event's message: a failure only if the
	// turn does not complete (the CLI says "Reconnecting... 1/5" as an
	// error, then goes on).
	notice string
}

func newCodexStream(cwd string) stream { return &codexStream{cwd: cwd} }

func (s *codexStream) outcome() Outcome {
	out := s.out
	if !out.Completed && out.Failure == "" && s.notice != "" {
		out.Failure = oneLine(s.notice, 300)
	}
	return out
}

func (s *codexStream) feed(line []byte) (string, error) {
	typ, err := eventType(line)
	if err != nil {
		return "", err
	}
	var ev codexEvent
	if !decodes(line, &ev) {
		return "", nil // a known type in a shape this adapter does not know: ignored
	}
	switch typ {
	case "thread.started":
		if ev.ThreadID != "" {
			s.out.Session = ev.ThreadID
		}
	case "turn.started":
		return "thinking", nil
	case "item.started", "item.updated", "item.completed":
		if ev.Item != nil {
			return s.item(ev.Type, ev.Item), nil
		}
	case "turn.completed":
		s.out.Completed = true
		s.notice = ""
		if u := ev.Usage; u != nil {
			// cached_input_tokens is the cached part of input_tokens; on a
			// resumed thread the usage is the thread's so far.
			s.out.TokensIn, s.out.TokensOut, s.out.Totals = u.InputTokens, u.OutputTokens, true
		}
	case "turn.failed":
		why := "turn failed"
		if ev.Error != nil && ev.Error.Message != "" {
			why = ev.Error.Message
		}
		s.out.Failure = oneLine(why, 300)
	case "error":
		s.notice = ev.Message
		if strings.HasPrefix(ev.Message, "Reconnecting") {
			return oneLine(ev.Message, maxActivity), nil
		}
	}
	return "", nil
}

// item reads one thread item and returns the activity it shows.
func (s *codexStream) item(event string, it *codexItem) string {
	switch it.Type {
	case "agent_message":
		if event == "item.completed" && strings.TrimSpace(it.Text) != "" {
			s.out.Final = it.Text
		}
		return ""
	case "plan":
		if event == "item.completed" && strings.TrimSpace(it.Text) != "" {
			s.out.Plan = it.Text
		}
		return "writing the plan"
	case "reasoning":
		if t := strings.Trim(it.Text, "* \n"); t != "" {
			return oneLine("thinking: "+t, maxActivity)
		}
		return "thinking"
	case "command_execution":
		return oneLine("running: "+it.Command, maxActivity)
	case "file_change":
		var paths []string
		for _, c := range it.Changes {
			paths = append(paths, shortPath(c.Path, s.cwd))
		}
		return oneLine("editing: "+strings.Join(paths, ", "), maxActivity)
	case "mcp_tool_call":
		return oneLine("tool: "+it.Server+"."+it.Tool, maxActivity)
	case "web_search":
		return oneLine("searching: "+it.Query, maxActivity)
	case "todo_list":
		done := 0
		for _, i := range it.Items {
			if i.Completed {
				done++
			}
		}
		return fmt.Sprintf("todo list: %d of %d done", done, len(it.Items))
	}
	return ""
}
