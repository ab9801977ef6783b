package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"huddle/internal/redact"
	"huddle/ipc/trace"
	"huddle/llm"
	"huddle/protocol"
	"huddle/store"
	"huddle/team"
	"huddle/teamdir"
)

// Thinker is the model loop of an llm teammate, as the runtime uses it:
// llm.Agent is one, tests give a fake. It is declared here, where it is
// consumed.
type Thinker interface {
	Run(ctx context.Context) error
	Deliver(text string)
	Answer(ctx context.Context, requestID, prompt string) (string, error)
}

// thinkerFactory builds an llm teammate's loop from its config and its
// provider's; Options.newThinker replaces newAgent in tests.
type thinkerFactory func(cfg llm.Config, pc llm.ProviderConfig) (Thinker, error)

// newAgent builds the real loop: the provider's Model, then the Agent.
func newAgent(cfg llm.Config, pc llm.ProviderConfig) (Thinker, error) {
	m, err := llm.NewModel(pc)
	if err != nil {
		return nil, err
	}
	cfg.Model = m
	a, err := llm.NewAgent(cfg)
	if err != nil {
		return nil, err
	}
	return a, nil
}

// llmState is what an llm teammate holds beyond a mate.
type llmState struct {
	thinker Thinker
	// key is the provider key, read from the environment at start. It is
	// kept only in memory; the runtime's secrets hold it, scrubbed from
	// every line huddle writes for the member (its transcript, its error),
	// in case a provider echoes it or a tool reads it.
	key string
	// ended is why the model loop ended (max_turns, max_tokens), once it
	// has: the member then approves a shutdown itself.
	mu sync.Mutex
	// chains maps the invocations being answered (their request ids, the
	// conversations the loop names) to their correlation ids, and calls
	// the tool calls under way to when each began: what an op's span needs
	// (recordOp).
	chains map[string]string
	calls  map[string]time.Time
	ended  string
}

// startThinker builds the teammate's loop before its inbox is consumed. A
// loop that cannot be built (the key's variable unset, an unknown provider)
// is said when the member runs: it crashes with why, and the team goes on.
func (mt *mate) startThinker() {
	spec := mt.spec.Runtime
	mt.llm = &llmState{}
	if spec.APIKeyEnv != "" {
		mt.llm.key = os.Getenv(spec.APIKeyEnv)
		if mt.llm.key == "" {
			mt.startErr = fmt.Errorf("runtime.api_key_env: %s is not set in huddle's environment", spec.APIKeyEnv)
			return
		}
	}
	work, err := mt.workDir()
	if err != nil {
		mt.startErr = err
		return
	}
	cfg := llm.Config{
		Name: mt.spec.Name, Role: mt.spec.Role, Teammates: mt.teammates(),
		System: spec.System, Prompt: spec.Prompt, Tools: spec.Tools, Dir: work,
		PlanRequired: spec.PlanGate(), MaxTurns: spec.MaxTurns, MaxTokens: spec.MaxTokens,
		SandboxOff: spec.Sandbox == team.SandboxOff,
		Env:        &llmEnv{mt: mt}, Transcript: mt.transcribe, Scrub: mt.rt.secrets.String,
	}
	pc := llm.ProviderConfig{Provider: spec.Provider, BaseURL: spec.BaseURL, Model: spec.Model, APIKey: mt.llm.key}
	build := mt.rt.opts.newThinker
	if build == nil {
		build = newAgent
	}
	th, err := build(cfg, pc)
	if err != nil {
		mt.startErr = fmt.Errorf("model: %w", mt.scrubErr(err))
		return
	}
	mt.llm.thinker = th
	mt.onMessage = mt.llmMessage
}

// workDir is the directory the member's work tools are confined to: its
// dir, relative to the team directory as an exec member's is; made if
// missing. No dir and no work tools: "".
func (mt *mate) workDir() (string, error) {
	d := mt.spec.Dir
	if d == "" {
		return "", nil
	}
	if !filepath.IsAbs(d) {
		d = filepath.Join(mt.rt.dir, d)
	}
	if len(mt.spec.Runtime.Tools) > 0 {
		if err := os.MkdirAll(d, teamdir.DirMode); err != nil {
			return "", fmt.Errorf("dir: %w", err)
		}
	}
	return d, nil
}

// teammates are the addresses the member may write to: the lead and every
// other member.
func (mt *mate) teammates() []string {
	out := []string{protocol.Lead}
	for _, m := range mt.rt.team.Members {
		if m.Name != mt.spec.Name {
			out = append(out, m.Name)
		}
	}
	return out
}

// runLLM runs the model loop until it ends. An approved shutdown cancels
// the model call in flight.
func (mt *mate) runLLM(ctx context.Context) error {
	if mt.startErr != nil {
		return mt.startErr
	}
	// watch.Wait is deferred first so that it runs after cancel.
	var watch sync.WaitGroup
	defer watch.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watch.Add(1)
	go func() {
		defer watch.Done()
		select {
		case <-mt.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	// Only from starting: a plan submitted the instant the loop began has
	// moved the member on already, and "starting" must not undo it.
	starting := func(rec *protocol.Member) bool { return rec.Status == protocol.MemberStarting }
	if _, err := mt.setStatusIf(starting, protocol.MemberWorking, "starting"); err != nil {
		return err
	}
	err := mt.llm.thinker.Run(ctx)
	return mt.llmEnded(ctx, err)
}

// llmEnded maps how the loop ended to how the member ends: a shutdown it
// approved (or the runtime's stop) is a stop; a limit leaves it idle with
// the reason until it is stopped; anything else is a crash with the error.
func (mt *mate) llmEnded(ctx context.Context, err error) error {
	var limit *llm.LimitError
	switch {
	case mt.stopping() || errors.Is(err, llm.ErrStopped):
		return errStopped
	case errors.As(err, &limit) || err == nil:
		reason := "the model loop ended"
		if limit != nil {
			reason = "stopped at " + limit.Limit
		}
		mt.llm.mu.Lock()
		mt.llm.ended = reason
		mt.llm.mu.Unlock()
		if err := mt.idleWith(reason); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			if mt.stopping() {
				return errStopped
			}
			return ctx.Err()
		case <-mt.stop:
			return errStopped
		}
	case ctx.Err() != nil:
		return ctx.Err()
	default:
		return fmt.Errorf("model loop: %w", mt.scrubErr(err))
	}
}

// idleWith makes the member idle with reason as its activity; a member
// whose plan is open (awaiting approval, revising) keeps that state, as the
// state machine has no edge from it to idle, and shows the reason.
func (mt *mate) idleWith(reason string) error {
	cur := mt.status()
	if cur.Transition(protocol.MemberIdle) == nil {
		return mt.setStatus(protocol.MemberIdle, reason)
	}
	return mt.setStatus(cur, reason)
}

// loopEnded says why the model loop has ended, or "".
func (mt *mate) loopEnded() string {
	mt.llm.mu.Lock()
	defer mt.llm.mu.Unlock()
	return mt.llm.ended
}

// llmMessage is the llm teammate's inbox handler's last step: messages and
// shutdown requests become user turns of the loop (Deliver never blocks).
func (mt *mate) llmMessage(ctx context.Context, d store.Delivery) error {
	m := d.Msg
	switch m.Type {
	case protocol.TypeMessage:
		mt.llm.thinker.Deliver(fmt.Sprintf("message from %s: %s", m.From, m.Content))
	case protocol.TypeBroadcast:
		mt.llm.thinker.Deliver(fmt.Sprintf("broadcast from %s: %s", m.From, m.Content))
	case protocol.TypeShutdownRequest:
		return mt.llmShutdownRequest(m)
	}
	// A plan_approval_response has woken SubmitPlan already (planDecided).
	return nil
}

// llmShutdownRequest puts a shutdown request to the model, which answers
// it with shutdown_response; a member whose loop has ended approves it.
func (mt *mate) llmShutdownRequest(m protocol.Message) error {
	if why := mt.loopEnded(); why != "" {
		r, err := mt.rt.sh.loadRequest(m.RequestID)
		if err != nil {
			return err
		}
		return mt.answer(r, protocol.EventApprove, "the model loop had ended ("+why+")")
	}
	reason := m.Reason
	if reason == "" {
		reason = "(no reason given)"
	}
	mt.llm.thinker.Deliver(fmt.Sprintf("shutdown request %s from the lead: %s\n"+
		"Answer it with the shutdown_response tool: request_id %q, approve true to stop now "+
		"(you end as stopped), or approve false with the reason to keep working.", m.RequestID, reason, m.RequestID))
	return nil
}

// invocationKey carries, in the context of an answer to an invocation, the
// request being answered: the calls the model makes while answering are
// its onward calls (hop + 1, same correlation id).
type invocationKey struct{}

// answerLLM answers an invocation with its own short conversation; the
// final text is the ok result's summary, an error an IPC_ERROR result.
func (mt *mate) answerLLM(ctx context.Context, req protocol.InvocationRequest) protocol.InvocationResult {
	start := time.Now()
	ctx = context.WithValue(ctx, invocationKey{}, req)
	prompt := fmt.Sprintf("%s calls your action %q: %s", req.Caller, req.Action, req.Prompt)
	mt.llm.mu.Lock()
	if mt.llm.chains == nil {
		mt.llm.chains = map[string]string{}
	}
	mt.llm.chains[req.RequestID] = req.CorrelationID
	mt.llm.mu.Unlock()
	defer func() {
		mt.llm.mu.Lock()
		delete(mt.llm.chains, req.RequestID)
		mt.llm.mu.Unlock()
	}()
	text, err := mt.llm.thinker.Answer(ctx, req.RequestID, prompt)
	ms := time.Since(start).Milliseconds()
	if err != nil {
		msg := mt.scrubErr(err).Error()
		if ctx.Err() != nil {
			msg = "cancelled before answering: " + msg
		}
		return protocol.Fail(&req, ms, protocol.ErrIPC, "IPC_ERROR: "+mt.spec.Name+": "+msg, nil)
	}
	res, err := protocol.OK(&req, ms, map[string]any{"summary": text})
	if err != nil {
		return protocol.Fail(&req, ms, protocol.ErrIPC, err.Error(), nil)
	}
	return res
}

// transcribe appends one entry to members/<name>.transcript.jsonl, with
// every secret the runtime knows scrubbed from it; a line that cannot be
// written is said in the events.
func (mt *mate) transcribe(e llm.Entry) {
	if e.TS.IsZero() {
		e.TS = time.Now().UTC()
	}
	sec := mt.rt.secrets
	e.Text, e.Tool, e.CallID = sec.String(e.Text), sec.String(e.Tool), sec.String(e.CallID)
	e.Args = scrubJSON(sec, e.Args)
	mt.recordOp(e)
	b, err := json.Marshal(e)
	if err == nil {
		var path string
		path, err = teamdir.TranscriptPath(mt.rt.dir, mt.spec.Name)
		if err == nil {
			err = teamdir.AppendLine(path, append(b, '\n'))
		}
	}
	if err != nil {
		mt.rt.emit(Event{"event": "error", "member": mt.spec.Name, "error": "transcript: " + err.Error()})
	}
}

// recordOp hands a model turn or a finished tool call to the OpenTelemetry
// export (trace.RecordOp), placed in the chain of the invocation the loop
// answers, or in the member's run.
func (mt *mate) recordOp(e llm.Entry) {
	mt.mu.Lock()
	run := mt.rec.RunID
	mt.mu.Unlock()
	op := trace.Op{Member: mt.spec.Name, End: e.TS}
	mt.llm.mu.Lock()
	if corr, ok := mt.llm.chains[e.Conv]; ok {
		op.CorrelationID, op.RequestID = corr, e.Conv
	} else {
		op.Conversation = "run-" + mt.spec.Name + "-" + run
	}
	switch e.Kind {
	case "model":
		mt.llm.mu.Unlock()
		op.Kind, op.Provider, op.Model = trace.OpChat, mt.spec.Runtime.Provider, mt.spec.Runtime.Model
		op.Start = e.TS.Add(-time.Duration(e.Duration) * time.Millisecond)
		if e.Usage != nil {
			op.InTokens, op.OutTokens = e.Usage.In, e.Usage.Out
		}
	case "tool_call":
		if mt.llm.calls == nil {
			mt.llm.calls = map[string]time.Time{}
		}
		mt.llm.calls[e.CallID] = e.TS
		mt.llm.mu.Unlock()
		return
	case "tool_result":
		op.Start = mt.llm.calls[e.CallID]
		delete(mt.llm.calls, e.CallID)
		mt.llm.mu.Unlock()
		op.Kind, op.Tool, op.CallID = trace.OpTool, e.Tool, e.CallID
		if e.IsError {
			op.Error = "tool_error"
		}
	default:
		mt.llm.mu.Unlock()
		return
	}
	trace.RecordOp(op)
}

// scrubJSON is raw with the secrets scrubbed from its strings, read with
// their escapes undone (a secret JSON escaping would hide); raw itself when
// it holds none.
func scrubJSON(sec *redact.Set, raw json.RawMessage) json.RawMessage {
	if sec.Empty() || len(raw) == 0 {
		return raw
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return json.RawMessage(strconv.Quote(sec.String(string(raw))))
	}
	changed := false
	v = scrubValue(sec, v, &changed)
	if !changed {
		return raw
	}
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(`"` + redact.Mark + `"`)
	}
	return b
}

func scrubValue(sec *redact.Set, v any, changed *bool) any {
	switch v := v.(type) {
	case string:
		out := sec.String(v)
		*changed = *changed || out != v
		return out
	case []any:
		for i := range v {
			v[i] = scrubValue(sec, v[i], changed)
		}
	case map[string]any:
		for k, e := range v {
			v[k] = scrubValue(sec, e, changed)
		}
	}
	return v
}

// scrubErr is err with every secret the runtime knows scrubbed from its
// text.
func (mt *mate) scrubErr(err error) error {
	if !mt.rt.secrets.Holds(err.Error()) {
		return err
	}
	return errors.New(mt.rt.secrets.String(err.Error()))
}

// llmEnv is what an llm teammate does in its team (llm.Env): each method
// goes through the gate a scripted or exec teammate goes through.
type llmEnv struct{ mt *mate }

// SubmitPlan opens a plan request and blocks until it is decided: approved
// with the lead's feedback; rejected with it; expired or cancelled with the
// reason. The member is awaiting approval meanwhile.
func (e *llmEnv) SubmitPlan(ctx context.Context, plan string) (bool, string, error) {
	mt := e.mt
	if strings.TrimSpace(plan) == "" {
		return false, "", errors.New("submit_plan: plan is empty")
	}
	id, err := mt.submitPlan(plan)
	if err != nil {
		return false, "", fmt.Errorf("submit_plan: %w", err)
	}
	r, err := mt.awaitPlan(ctx, id)
	mt.mu.Lock()
	if mt.rec.RequestID == id {
		mt.rec.RequestID = ""
	}
	mt.mu.Unlock()
	switch {
	case errors.Is(err, errStopped):
		return false, "", llm.ErrStopped
	case err != nil:
		return false, "", err
	}
	switch r.Status {
	case protocol.RequestApproved:
		return true, r.Feedback, mt.setStatus(protocol.MemberWorking, "plan approved")
	case protocol.RequestRejected:
		fb := r.Feedback
		if fb == "" {
			fb = "rejected (the lead gave no feedback)"
		}
		return false, fb, mt.setStatus(protocol.MemberRevising, "revising: "+r.Feedback)
	default: // expired, cancelled
		why := fmt.Sprintf("plan %s: %s", r.Status, r.ResponseReason)
		if r.Status == protocol.RequestCancelled && mt.stopping() {
			return false, why, llm.ErrStopped
		}
		return false, why, mt.setStatus(protocol.MemberRevising, why)
	}
}

// Send writes to one address of the team, with huddle send's checks.
func (e *llmEnv) Send(to, content string) error {
	mt := e.mt
	if content == "" {
		return errors.New("send_message: content is empty")
	}
	if err := mt.rt.sh.send(mt.rt.team, mt.spec.Name, to, content); err != nil {
		return fmt.Errorf("send_message: %w", err)
	}
	mt.count(func(c *protocol.Counters) { c.Sent++ })
	mt.writeOrSay()
	return nil
}

// Broadcast writes to every other member.
func (e *llmEnv) Broadcast(content string) error {
	mt := e.mt
	if content == "" {
		return errors.New("broadcast: content is empty")
	}
	n, err := mt.rt.sh.broadcast(mt.rt.team, mt.spec.Name, content)
	mt.count(func(c *protocol.Counters) { c.Sent += n })
	mt.writeOrSay()
	if err != nil {
		return fmt.Errorf("broadcast: %w", err)
	}
	return nil
}

// Call invokes a teammate's action through the member's Caller (its
// .puruto-ipc.json, hop limits, deadlines, spans). Made while answering an
// invocation, it is that invocation's onward call. The result, ok or not,
// is the JSON text returned.
func (e *llmEnv) Call(ctx context.Context, target, action, prompt string, timeoutSec int) (string, error) {
	req := protocol.InvocationRequest{Target: target, Action: action, Prompt: prompt, TimeoutSec: timeoutSec}
	if parent, ok := ctx.Value(invocationKey{}).(protocol.InvocationRequest); ok {
		req.CorrelationID, req.ParentRequestID, req.Hop = parent.CorrelationID, parent.RequestID, parent.Hop+1
	}
	res := e.mt.call(ctx, req)
	b, err := json.Marshal(res)
	if err != nil {
		return "", fmt.Errorf("call_teammate: %w", err)
	}
	return string(b), nil
}

// ShutdownResponse answers the lead's shutdown request to this member; an
// approval stops it.
func (e *llmEnv) ShutdownResponse(requestID string, approve bool, reason string) error {
	mt := e.mt
	r, err := mt.rt.sh.loadRequest(requestID)
	if err != nil {
		return fmt.Errorf("shutdown_response: no request %q", requestID)
	}
	if r.Kind != protocol.KindShutdown || r.To != mt.spec.Name {
		return fmt.Errorf("shutdown_response: %s is not a shutdown request for %s", r.ID, mt.spec.Name)
	}
	if r.Status.IsTerminal() {
		return fmt.Errorf("shutdown_response: %s is already %s", r.ID, r.Status)
	}
	if err := mt.answer(r, protocol.AnswerEvent(approve), reason); err != nil {
		return fmt.Errorf("shutdown_response: %w", err)
	}
	return nil
}

// Activity shows what the loop does as the member's activity: working,
// or idle when it waits for messages; a member whose plan is open keeps
// that state (huddle sets it, SubmitPlan moves it on).
func (e *llmEnv) Activity(text string) {
	mt := e.mt
	cur := mt.status()
	next := protocol.MemberWorking
	if text == "idle" || strings.HasPrefix(text, "waiting for messages") {
		next = protocol.MemberIdle
	}
	switch cur {
	case protocol.MemberAwaitingApproval:
		return // "waiting for approval of <id>" stands
	case protocol.MemberRevising:
		next = cur
	case protocol.MemberWorking, protocol.MemberIdle, protocol.MemberStarting:
	default:
		return // stopping or over
	}
	same := func(rec *protocol.Member) bool { return rec.Status == cur }
	moved, err := mt.setStatusIf(same, next, text)
	if err != nil {
		mt.rt.emit(Event{"event": "error", "member": mt.spec.Name, "error": err.Error()})
	}
	if moved && cur == protocol.MemberWorking && next == protocol.MemberIdle {
		mt.turnEnded(text)
	}
}

// Usage adds one turn's tokens to the member's totals, and their cost at
// team.json's price.
func (e *llmEnv) Usage(u llm.Usage) {
	mt := e.mt
	price := mt.spec.Runtime.Price
	mt.count(func(c *protocol.Counters) {
		c.TokensIn += u.In
		c.TokensOut += u.Out
		c.CostUSD = price.Cost(c.TokensIn, c.TokensOut)
	})
	mt.writeOrSay()
}

var _ llm.Env = (*llmEnv)(nil)
