package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"huddle/internal/sandbox"
	"huddle/llm/record"
)

// KnownTools are the work tools a member may enable.
var KnownTools = record.KnownTools

// Config configures one llm teammate.
type Config struct {
	Model        Model
	Name         string        // the member's name (for the system prompt)
	Role         string        // its role in the team
	Teammates    []string      // names it may address (for the system prompt)
	System       string        // added to huddle's own system prompt
	Prompt       string        // the task it starts with ("" = wait for messages)
	Tools        []string      // work tools enabled: read_file, write_file, edit_file, list_files, bash
	Dir          string        // work tools are confined to this absolute directory
	PlanRequired bool          // the mechanical plan gate on write_file, edit_file, bash
	MaxTurns     int           // 0: 40
	MaxTokens    int64         // total tokens in+out before the loop ends (0: no bound)
	MaxOutput    int           // per-turn output tokens (0: provider default)
	Env          Env           //
	Transcript   func(Entry)   // called for every entry, in order (nil: none)
	Retry        Backoff       // 429/5xx: capped exponential backoff honouring Retry-After
	ToolTimeout  time.Duration // bash and other tools (0: 60s)
	OutputCap    int           // bytes of a tool result kept (0: 16 KiB)
	MaxFile      int           // bytes write_file and edit_file may leave in a file (0: 1 MiB)
	// SandboxOff runs bash unconfined (team.json "sandbox": "off"); else
	// it runs in internal/sandbox, and is refused where the kernel offers
	// no Landlock.
	SandboxOff bool
	// Scrub takes the secrets huddle knows out of a text (nil: none): it
	// is applied to every tool result before the model or the transcript
	// sees it, and no variable of bash's environment is one it changes.
	Scrub func(string) string
	// Kernel is what the kernel offers the sandbox (nil: sandbox.Probe);
	// tests force what a kernel lacks.
	Kernel func() sandbox.Kernel
}

// Backoff is the retry policy for 429, 5xx and transport failures.
// Zero fields take 500ms, 30s and 6.
type Backoff struct {
	Base, Max time.Duration
	Attempts  int
}

// LimitError ends a run that reached max_turns or max_tokens.
type LimitError struct{ Limit string } // "max_turns" | "max_tokens"

func (e *LimitError) Error() string { return "llm: reached " + e.Limit }

// droppedMarker replaces a tool result dropped to make room.
const droppedMarker = "[dropped to fit the context window]"

// Agent is one llm teammate's loop. Run drives its main conversation;
// Answer runs invocations beside it; Deliver feeds it messages.
type Agent struct {
	cfg    Config
	system string
	tools  []ToolSpec
	work   map[string]bool // enabled work tools
	dir    string          // cfg.Dir with its symlinks resolved
	root   *os.Root        // dir, opened once: every file tool goes through it

	mu      sync.Mutex
	pending []string      // delivered, not yet in the conversation
	wake    chan struct{} // capacity 1: something was delivered

	planMu       sync.Mutex
	planApproved bool

	tokens   atomic.Int64  // in+out over all conversations
	stopOnce sync.Once     //
	stopped  chan struct{} // closed when the member approved its shutdown

	emitMu sync.Mutex // keeps Transcript calls in order across conversations
}

// NewAgent checks cfg and builds the agent.
func NewAgent(cfg Config) (*Agent, error) {
	if cfg.Model == nil {
		return nil, errors.New("llm: no model")
	}
	if cfg.Env == nil {
		return nil, errors.New("llm: no env")
	}
	if cfg.MaxTurns <= 0 {
		cfg.MaxTurns = 40
	}
	if cfg.ToolTimeout <= 0 {
		cfg.ToolTimeout = 60 * time.Second
	}
	if cfg.OutputCap <= 0 {
		cfg.OutputCap = 16 << 10
	}
	if cfg.MaxFile <= 0 {
		cfg.MaxFile = 1 << 20
	}
	if cfg.Retry.Base <= 0 {
		cfg.Retry.Base = 500 * time.Millisecond
	}
	if cfg.Retry.Max <= 0 {
		cfg.Retry.Max = 30 * time.Second
	}
	if cfg.Retry.Attempts <= 0 {
		cfg.Retry.Attempts = 6
	}
	a := &Agent{cfg: cfg, work: map[string]bool{}, wake: make(chan struct{}, 1), stopped: make(chan struct{})}
	for _, t := range cfg.Tools {
		if !isKnownTool(t) {
			return nil, fmt.Errorf("llm: unknown tool %q (known: %s)", t, strings.Join(KnownTools, ", "))
		}
		a.work[t] = true
	}
	if len(a.work) > 0 {
		if !filepath.IsAbs(cfg.Dir) {
			return nil, fmt.Errorf("llm: work tools need an absolute dir, got %q", cfg.Dir)
		}
		real, err := filepath.EvalSymlinks(cfg.Dir)
		if err != nil {
			return nil, fmt.Errorf("llm: work dir: %w", err)
		}
		a.dir = real
		// Opened once, so the directory itself cannot be swapped under a
		// running member; it is closed with the Agent (os.Root's cleanup).
		if a.root, err = os.OpenRoot(real); err != nil {
			return nil, fmt.Errorf("llm: work dir: %w", err)
		}
	}
	a.tools = a.toolSpecs()
	a.system = a.systemPrompt()
	return a, nil
}

func isKnownTool(name string) bool {
	for _, k := range KnownTools {
		if k == name {
			return true
		}
	}
	return false
}

// Deliver queues text as a user turn before the next model call and wakes
// an idle loop. It never blocks.
func (a *Agent) Deliver(text string) {
	a.mu.Lock()
	a.pending = append(a.pending, text)
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default: // a wake-up is already queued
	}
}

func (a *Agent) takePending() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.pending
	a.pending = nil
	return p
}

// conversation is one exchange with the model: the main one or an
// invocation's.
type conversation struct {
	id    string
	msgs  []Message
	turns int
}

// Run runs the main conversation until max_turns or max_tokens (a
// *LimitError), ctx ends, the member approves its shutdown (ErrStopped), or
// the provider refuses for good (the key, the model).
func (a *Agent) Run(ctx context.Context) error {
	conv := &conversation{id: "main"}
	needsModel := false
	if a.cfg.Prompt != "" {
		a.addUser(conv, "prompt", a.cfg.Prompt)
		needsModel = true
	}
	for {
		for _, text := range a.takePending() {
			a.addUser(conv, "message", text)
			needsModel = true
		}
		if !needsModel {
			a.cfg.Env.Activity("waiting for messages")
			select {
			case <-ctx.Done():
				return a.end(conv, ctx.Err())
			case <-a.stopped:
				return a.end(conv, ErrStopped)
			case <-a.wake:
			}
			continue
		}
		final, err := a.step(ctx, conv)
		if err != nil {
			return a.end(conv, err)
		}
		needsModel = !final
	}
}

// Answer runs an invocation as its own conversation (conv = requestID) and
// returns the model's final text.
func (a *Agent) Answer(ctx context.Context, requestID, prompt string) (string, error) {
	conv := &conversation{id: requestID}
	a.addUser(conv, "prompt", prompt)
	for {
		final, err := a.step(ctx, conv)
		if err != nil {
			return "", a.end(conv, err)
		}
		if final {
			last := conv.msgs[len(conv.msgs)-1]
			a.emit(conv, Entry{Kind: "end", Text: "answered"})
			return last.Text, nil
		}
	}
}

func (a *Agent) addUser(conv *conversation, kind, text string) {
	conv.msgs = append(conv.msgs, Message{Role: RoleUser, Text: text})
	a.emit(conv, Entry{Kind: kind, Text: text})
}

// end records why a conversation ended and returns err.
func (a *Agent) end(conv *conversation, err error) error {
	if errors.Is(err, ErrStopped) {
		a.emit(conv, Entry{Kind: "end", Text: "stopped"})
		return err
	}
	a.emit(conv, Entry{Kind: "error", Text: err.Error(), IsError: true})
	a.emit(conv, Entry{Kind: "end", Text: err.Error()})
	return err
}

// step makes one model turn and runs its tool calls. final reports a turn
// with no tool call: the model has answered.
func (a *Agent) step(ctx context.Context, conv *conversation) (final bool, err error) {
	resp, err := a.turn(ctx, conv)
	if err != nil {
		return false, err
	}
	// Arguments past what a tool call may send are refused unread, and
	// the conversation keeps (and sends again every turn) only their size.
	kept := make([]ToolCall, len(resp.ToolCalls))
	for i, call := range resp.ToolCalls {
		kept[i] = call
		if len(call.Args) > a.maxArgs() {
			kept[i].Args = elided(len(call.Args))
		}
	}
	conv.msgs = append(conv.msgs, Message{Role: RoleAssistant, Text: resp.Text, ToolCalls: kept})
	if len(resp.ToolCalls) == 0 {
		return true, nil
	}
	for i, call := range resp.ToolCalls {
		a.emit(conv, Entry{Kind: "tool_call", Tool: call.Name, CallID: call.ID, Args: kept[i].Args})
		var text string
		var isErr, stop bool
		if n := len(call.Args); n > a.maxArgs() {
			text, isErr = fmt.Sprintf("refused: the arguments of %s are %d bytes, over the %d a tool call may send (write a smaller file, or several)", call.Name, n, a.maxArgs()), true
		} else {
			text, isErr, stop = a.runTool(ctx, call)
		}
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		text = a.capResult(a.scrub(text))
		conv.msgs = append(conv.msgs, Message{Role: RoleTool, Text: text, ToolCallID: call.ID, IsError: isErr})
		a.emit(conv, Entry{Kind: "tool_result", Tool: call.Name, CallID: call.ID, Text: text, IsError: isErr})
		if stop {
			a.stopOnce.Do(func() { close(a.stopped) })
			return false, ErrStopped
		}
	}
	return false, nil
}

// turn makes one model call: it checks the limits, retries 429, 5xx and
// transport failures, and drops old tool results when the context is full.
func (a *Agent) turn(ctx context.Context, conv *conversation) (Response, error) {
	if conv.turns >= a.cfg.MaxTurns {
		return Response{}, &LimitError{Limit: "max_turns"}
	}
	if a.cfg.MaxTokens > 0 && a.tokens.Load() >= a.cfg.MaxTokens {
		return Response{}, &LimitError{Limit: "max_tokens"}
	}
	conv.turns++
	retries := 0
	for {
		select {
		case <-a.stopped:
			return Response{}, ErrStopped
		default:
		}
		a.cfg.Env.Activity("thinking")
		req := Request{System: a.system, Messages: conv.msgs, Tools: a.tools, MaxTokens: a.cfg.MaxOutput}
		start := time.Now()
		resp, err := a.cfg.Model.Turn(ctx, req)
		if err == nil {
			a.recordTurn(conv, resp, time.Since(start))
			return resp, nil
		}
		if ctx.Err() != nil {
			return Response{}, ctx.Err()
		}
		var ae *APIError
		if !errors.As(err, &ae) {
			ae = &APIError{Message: err.Error()}
		}
		switch {
		case ae.ContextFull:
			n := dropOldestToolResults(conv.msgs)
			if n == 0 {
				return Response{}, fmt.Errorf("llm: the context window is full and no tool result is left to drop: %w", ae)
			}
			a.emit(conv, Entry{Kind: "error", Text: fmt.Sprintf("%s; dropped the %d oldest tool results", ae.Message, n), IsError: true})
		case retryable(ae.Status):
			retries++
			if retries >= a.cfg.Retry.Attempts {
				return Response{}, fmt.Errorf("llm: gave up after %d attempts: %w", retries, ae)
			}
			delay := a.backoff(retries, ae.RetryAfter)
			a.emit(conv, Entry{Kind: "error", Text: fmt.Sprintf("%s; retry %d in %s", ae.Message, retries, delay.Round(time.Millisecond)), IsError: true})
			a.cfg.Env.Activity(fmt.Sprintf("retrying in %s", delay.Round(time.Second)))
			if err := sleep(ctx, a.stopped, delay); err != nil {
				return Response{}, err
			}
		default:
			return Response{}, fmt.Errorf("llm: %w", ae)
		}
	}
}

// recordTurn records a model turn: its text and the tool calls it asks
// for, each named by its id and tool; their arguments are recorded once,
// in the tool_call entry that follows.
func (a *Agent) recordTurn(conv *conversation, resp Response, took time.Duration) {
	a.tokens.Add(resp.Usage.In + resp.Usage.Out)
	a.cfg.Env.Usage(resp.Usage)
	u := resp.Usage
	e := Entry{Kind: "model", Text: resp.Text, Usage: &u, Turn: conv.turns, Duration: took.Milliseconds()}
	if len(resp.ToolCalls) > 0 {
		named := make([]namedCall, len(resp.ToolCalls))
		for i, c := range resp.ToolCalls {
			named[i] = namedCall{ID: c.ID, Name: c.Name}
		}
		e.Args, _ = json.Marshal(named)
	}
	a.emit(conv, e)
}

// namedCall is a tool call as a model entry records it.
type namedCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// maxArgs is the most bytes of arguments a tool call may send: a whole
// file of MaxFile, with room for its JSON escapes and the other fields.
func (a *Agent) maxArgs() int { return a.cfg.MaxFile + a.cfg.MaxFile/4 + 4<<10 }

// elided stands for n bytes of arguments refused unread.
func elided(n int) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"elided": fmt.Sprintf("%d bytes of arguments, refused unread", n)})
	return b
}

// capResult keeps a tool result to about OutputCap bytes, whatever tool
// made it (a teammate's answer, a message), saying what it cut.
func (a *Agent) capResult(text string) string {
	if len(text) <= a.cfg.OutputCap+1<<10 {
		return text
	}
	return fmt.Sprintf("%s\n[truncated: %d more bytes]", text[:a.cfg.OutputCap], len(text)-a.cfg.OutputCap)
}

// retryable: 429, 5xx, and no answer at all (status 0).
func retryable(status int) bool {
	return status == 0 || status == http.StatusTooManyRequests || status >= 500
}

// backoff is Base·2^(n-1) capped at Max, or what Retry-After asks if longer:
// the provider knows when it will take the call again.
func (a *Agent) backoff(n int, retryAfter time.Duration) time.Duration {
	d := a.cfg.Retry.Base
	for i := 1; i < n && d < a.cfg.Retry.Max; i++ {
		d *= 2
	}
	d = min(d, a.cfg.Retry.Max)
	return max(d, retryAfter)
}

func sleep(ctx context.Context, stopped <-chan struct{}, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-stopped:
		return ErrStopped
	case <-t.C:
		return nil
	}
}

// dropOldestToolResults replaces the text of the oldest half (at least one)
// of the tool results not yet dropped with a marker, and says how many.
func dropOldestToolResults(msgs []Message) int {
	var live []int
	for i, m := range msgs {
		if m.Role == RoleTool && m.Text != droppedMarker {
			live = append(live, i)
		}
	}
	n := (len(live) + 1) / 2
	for _, i := range live[:n] {
		msgs[i].Text = droppedMarker
	}
	return n
}

// scrub is text with the secrets huddle knows taken out.
func (a *Agent) scrub(text string) string {
	if a.cfg.Scrub == nil {
		return text
	}
	return a.cfg.Scrub(text)
}

func (a *Agent) emit(conv *conversation, e Entry) {
	if a.cfg.Transcript == nil {
		return
	}
	a.emitMu.Lock()
	defer a.emitMu.Unlock()
	e.TS = time.Now()
	e.Conv = conv.id
	a.cfg.Transcript(e)
}
