package agents

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Codex runs as one `codex app-server` for a member's whole session: JSON-RPC
// over stdio, a JSON object a line, no "jsonrpc" member
// (agents/testdata/real/README.md has what the real 0.169.0 was seen to do;
// the method and field names are those of its own schema, `codex app-server
// generate-json-schema`). The adapter initializes, starts a thread (or
// resumes the one it had, after the process died) and runs each turn with
// turn/start, read-only with approvals on request until the plan is
// approved, then in a workspace-write sandbox where every command not known
// safe asks (approval policy untrusted). Each approval the server asks for
// becomes an ask of the agent's loop, answered accept or decline.
type codexSession struct {
	procSession
	thread string
	// total is the thread's token use as the server last reported it; a
	// turn's use is what it grew by.
	total [2]int64
	// changes are the file changes of fileChange items, by item id: the
	// approval asks by id only.
	changes map[string]json.RawMessage
}

func newCodexSession(r *runner) driver {
	return &codexSession{procSession: procSession{r: r}, changes: map[string]json.RawMessage{}}
}

// codexServerArgs is the app server's command line; extra (after `--` on
// huddle's command line) is added, but for the exec flags the server does
// not take.
func codexServerArgs(extra []string) []string {
	args := []string{"app-server"}
	for _, a := range extra {
		if a != "--skip-git-repo-check" { // exec's; the server has no such check
			args = append(args, a)
		}
	}
	return args
}

// rpcLine is one JSON-RPC message: a request of either side (method and
// id), a notification (method), or a response (id and result or error).
type rpcLine struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// codexTurn is what a turn's notifications said.
type codexTurn struct {
	id       string
	out      Outcome
	failure  string // the last error notice that was not a retry
	planText string // turn/plan/updated, as text
	done     bool
}

func (s *codexSession) run(ctx context.Context, t Turn, h hooks) (Outcome, error) {
	ct := &codexTurn{}
	if s.live() == nil {
		if err := s.start(ctx, t.Session, ct, h); err != nil {
			return s.failed(ctx, ct.out, err)
		}
	}
	ct.out.Session = s.thread
	sandbox, policy := map[string]any{"type": "readOnly"}, "on-request"
	if t.Edits {
		sandbox, policy = map[string]any{"type": "workspaceWrite"}, "untrusted"
	}
	res, err := s.call(ctx, "turn/start", map[string]any{
		"threadId": s.thread, "input": []any{map[string]any{"type": "text", "text": t.Prompt}},
		"approvalPolicy": policy, "sandboxPolicy": sandbox,
	}, ct, h)
	if err != nil {
		return s.failed(ctx, ct.out, err)
	}
	var started struct {
		Turn struct {
			ID string `json:"id"`
		} `json:"turn"`
	}
	_ = json.Unmarshal(res, &started)
	ct.id = started.Turn.ID
	for !ct.done {
		line, err := s.next(ctx)
		if err != nil {
			return s.failed(ctx, ct.out, err)
		}
		if err := s.line(ctx, line, ct, h); err != nil {
			return s.failed(ctx, ct.out, err)
		}
	}
	out := ct.out
	if strings.TrimSpace(out.Final) == "" {
		out.Plan = ct.planText
	}
	if out.Failure != "" {
		return out, fmt.Errorf("%s reported a failure: %s", s.r.cli.Name, out.Failure)
	}
	return out, nil
}

// start starts the server, initializes it and starts a thread, or resumes
// thread.
func (s *codexSession) start(ctx context.Context, thread string, ct *codexTurn, h hooks) error {
	p, err := startProc(s.r, codexServerArgs(s.r.extra))
	if err != nil {
		return err
	}
	s.proc = p
	if _, err := s.call(ctx, "initialize", map[string]any{"clientInfo": map[string]any{"name": "huddle", "title": "huddle", "version": "0.0.0"}}, ct, h); err != nil {
		return err
	}
	if err := p.send(map[string]any{"method": "initialized"}); err != nil {
		return errEnded
	}
	method, params := "thread/start", map[string]any{"cwd": s.r.cwd, "approvalPolicy": "on-request", "sandbox": "read-only"}
	if thread != "" {
		method, params = "thread/resume", map[string]any{"threadId": thread, "cwd": s.r.cwd}
	}
	res, err := s.call(ctx, method, params, ct, h)
	if err != nil {
		return err
	}
	var r struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	if json.Unmarshal(res, &r) != nil || r.Thread.ID == "" {
		return fmt.Errorf("%s: %s named no thread: %s", s.r.cli.Name, method, oneLine(string(res), 200))
	}
	if r.Thread.ID != s.thread {
		s.total = [2]int64{}
	}
	s.thread = r.Thread.ID
	return nil
}

// call sends a request and waits for its response, acting on what comes
// first.
func (s *codexSession) call(ctx context.Context, method string, params any, ct *codexTurn, h hooks) (json.RawMessage, error) {
	p := s.proc
	p.seq++
	id := p.seq
	if err := p.send(map[string]any{"id": id, "method": method, "params": params}); err != nil {
		return nil, errEnded
	}
	for {
		line, err := s.next(ctx)
		if err != nil {
			return nil, err
		}
		var l rpcLine
		if json.Unmarshal(line, &l) == nil && l.Method == "" && string(l.ID) == fmt.Sprint(id) {
			if l.Error != nil {
				return nil, fmt.Errorf("%s refused %s: %s", s.r.cli.Name, method, l.Error.Message)
			}
			return l.Result, nil
		}
		if err := s.line(ctx, line, ct, h); err != nil {
			return nil, err
		}
	}
}

// line acts on one line of the server's that is not the response a call
// waits for.
func (s *codexSession) line(ctx context.Context, line []byte, ct *codexTurn, h hooks) error {
	var l rpcLine
	if err := json.Unmarshal(line, &l); err != nil || (l.Method == "" && len(l.ID) == 0) {
		s.proc.garbage++
		if s.proc.garbage <= garbageShown {
			s.r.log.printf("%s: not a JSON-RPC message: %s", s.r.cli.Name, oneLine(string(line), 200))
		}
		return nil
	}
	switch {
	case l.Method != "" && len(l.ID) > 0:
		return s.serverRequest(ctx, l, h)
	case l.Method != "":
		if a := s.notice(l, ct); a != "" {
			h.activity(a)
		}
	}
	return nil
}

// serverRequest answers a request of the server's: an approval is an ask
// of the agent's loop; anything else is refused.
func (s *codexSession) serverRequest(ctx context.Context, l rpcLine, h hooks) error {
	var q *ask
	var asked json.RawMessage // the permissions a permissions request asks for
	switch l.Method {
	case "item/commandExecution/requestApproval":
		var p struct {
			Command string `json:"command"`
			Cwd     string `json:"cwd"`
			Reason  string `json:"reason"`
			ItemID  string `json:"itemId"`
		}
		_ = json.Unmarshal(l.Params, &p)
		in, _ := json.Marshal(map[string]string{"command": unwrapShell(p.Command), "description": p.Reason, "cwd": p.Cwd})
		q = &ask{Tool: "Bash", Input: in, ToolUseID: p.ItemID}
	case "item/fileChange/requestApproval":
		var p struct {
			ItemID string `json:"itemId"`
			Reason string `json:"reason"`
		}
		_ = json.Unmarshal(l.Params, &p)
		q = &ask{Tool: "Edit", Input: s.changeInput(p.ItemID, p.Reason), ToolUseID: p.ItemID}
	case "item/permissions/requestApproval":
		var p struct {
			ItemID      string          `json:"itemId"`
			Reason      string          `json:"reason"`
			Permissions json.RawMessage `json:"permissions"`
		}
		_ = json.Unmarshal(l.Params, &p)
		in, _ := json.Marshal(map[string]any{"permissions": p.Permissions, "reason": p.Reason})
		q, asked = &ask{Tool: "Permissions", Input: in, ToolUseID: p.ItemID}, p.Permissions
	default:
		s.r.log.printf("%s: refused its request %q", s.r.cli.Name, l.Method)
		return s.proc.send(map[string]any{"id": l.ID, "error": map[string]any{"code": -32601, "message": "huddle does not handle " + l.Method}})
	}
	a, err := h.put(ctx, s.r, q)
	if err != nil {
		return err
	}
	var result any
	switch {
	case q.Tool == "Permissions" && a.Allow:
		result = map[string]any{"permissions": asked, "scope": "turn"}
	case q.Tool == "Permissions":
		result = map[string]any{"permissions": map[string]any{}, "scope": "turn"}
	case a.Allow:
		// Each use is asked again (not acceptForSession): what the lead
		// allowed for the session huddle answers itself, and sees.
		result = map[string]any{"decision": "accept"}
	default:
		result = map[string]any{"decision": "decline"}
	}
	return s.proc.send(map[string]any{"id": l.ID, "result": result})
}

// changeInput is the input of a file change's permission: the first file
// it changes (file_path, as Claude Code's Edit names it, so rules read it
// alike) and every change.
func (s *codexSession) changeInput(item, reason string) json.RawMessage {
	var changes []struct {
		Path string `json:"path"`
		Diff string `json:"diff"`
	}
	_ = json.Unmarshal(s.changes[item], &changes)
	in := map[string]any{"changes": s.changes[item]}
	if len(changes) > 0 {
		in["file_path"], in["diff"] = changes[0].Path, changes[0].Diff
	}
	if reason != "" {
		in["description"] = reason
	}
	b, _ := json.Marshal(in)
	return b
}

// notice reads a notification and returns the activity it shows.
func (s *codexSession) notice(l rpcLine, ct *codexTurn) string {
	switch l.Method {
	case "item/started", "item/completed":
		var p struct {
			Item struct {
				Type    string          `json:"type"`
				ID      string          `json:"id"`
				Command string          `json:"command"`
				Text    string          `json:"text"`
				Changes json.RawMessage `json:"changes"`
				Status  string          `json:"status"`
			} `json:"item"`
		}
		if json.Unmarshal(l.Params, &p) != nil {
			return ""
		}
		it := p.Item
		switch it.Type {
		case "commandExecution":
			return oneLine("running: "+unwrapShell(it.Command), maxActivity)
		case "fileChange":
			s.changes[it.ID] = it.Changes
			var changes []struct {
				Path string `json:"path"`
			}
			_ = json.Unmarshal(it.Changes, &changes)
			var paths []string
			for _, c := range changes {
				paths = append(paths, shortPath(c.Path, s.r.cwd))
			}
			return oneLine("editing: "+strings.Join(paths, ", "), maxActivity)
		case "agentMessage":
			if l.Method == "item/completed" && strings.TrimSpace(it.Text) != "" {
				ct.out.Final = it.Text
			}
		case "reasoning":
			return "thinking"
		}
	case "turn/plan/updated":
		var p struct {
			Explanation string `json:"explanation"`
			Plan        []struct {
				Step   string `json:"step"`
				Status string `json:"status"`
			} `json:"plan"`
		}
		if json.Unmarshal(l.Params, &p) != nil {
			return ""
		}
		var b strings.Builder
		if p.Explanation != "" {
			b.WriteString(p.Explanation + "\n\n")
		}
		done := 0
		for i, st := range p.Plan {
			fmt.Fprintf(&b, "%d. %s\n", i+1, st.Step)
			if st.Status == "completed" {
				done++
			}
		}
		ct.planText = strings.TrimSpace(b.String())
		return fmt.Sprintf("todo list: %d of %d done", done, len(p.Plan))
	case "thread/tokenUsage/updated":
		var p struct {
			TokenUsage struct {
				Total struct {
					InputTokens  int64 `json:"inputTokens"`
					OutputTokens int64 `json:"outputTokens"`
				} `json:"total"`
			} `json:"tokenUsage"`
		}
		if json.Unmarshal(l.Params, &p) == nil {
			in, out := p.TokenUsage.Total.InputTokens, p.TokenUsage.Total.OutputTokens
			ct.out.TokensIn += max(in-s.total[0], 0)
			ct.out.TokensOut += max(out-s.total[1], 0)
			s.total = [2]int64{max(in, s.total[0]), max(out, s.total[1])}
		}
	case "error":
		var p struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
			WillRetry bool `json:"willRetry"`
		}
		if json.Unmarshal(l.Params, &p) != nil {
			return ""
		}
		if p.WillRetry {
			return oneLine("reconnecting: "+p.Error.Message, maxActivity)
		}
		ct.failure = p.Error.Message
	case "turn/completed":
		var p struct {
			Turn struct {
				ID     string `json:"id"`
				Status string `json:"status"`
				Error  *struct {
					Message string `json:"message"`
				} `json:"error"`
			} `json:"turn"`
		}
		if json.Unmarshal(l.Params, &p) != nil || (ct.id != "" && p.Turn.ID != ct.id) {
			return ""
		}
		ct.done, ct.out.Completed = true, true
		if p.Turn.Status != "completed" {
			why := ct.failure
			if p.Turn.Error != nil && p.Turn.Error.Message != "" {
				why = p.Turn.Error.Message
			}
			if why == "" {
				why = "the turn ended " + p.Turn.Status
			}
			ct.out.Failure = oneLine(why, 300)
		}
	}
	return ""
}

// unwrapShell is the command Codex runs through `bash -lc '…'`, as the
// model wrote it: what rules and a person read.
func unwrapShell(cmd string) string {
	for _, pre := range []string{"/bin/bash -lc ", "bash -lc ", "/bin/sh -c ", "sh -c "} {
		rest, ok := strings.CutPrefix(cmd, pre)
		if !ok || len(rest) < 2 || rest[0] != '\'' || rest[len(rest)-1] != '\'' {
			continue
		}
		inner := rest[1 : len(rest)-1]
		// 'a'\''b' is how a single quote is written inside single quotes.
		parts := strings.Split(inner, `'\''`)
		if slices.ContainsFunc(parts, func(p string) bool { return strings.Contains(p, "'") }) {
			return cmd
		}
		return strings.Join(parts, "'")
	}
	return cmd
}
