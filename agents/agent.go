package agents

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"huddle/protocol"
	"huddle/store/filestore"
)

// Config is one adapter: which CLI, its binary, the task, and the
// arguments for the CLI from after `--` on huddle's command line.
type Config struct {
	CLI   *CLI
	Bin   string // the binary, as CLI.Bin found it
	Task  string
	Extra []string
	// Dir is the working directory, which activities name paths against
	// ("": the process's).
	Dir string
	// TeamDir is the team directory ($HUDDLE_DIR), read to see whether a
	// shutdown request asked during a turn is still open when the turn
	// ends ("": assume it is).
	TeamDir string
}

// phase is where the adapter stands with its plan.
type phase int

const (
	planning phase = iota // no plan put forward yet (or planning failed)
	awaiting              // a plan awaits the lead's decision: huddle says so, the adapter reports nothing
	revising              // the lead rejected the plan: huddle's status is revising until the next plan
	approved              // the plan is approved: turns may edit
)

// jobKind is what a turn is for.
type jobKind string

const (
	jobPlan       jobKind = "plan"
	jobRevise     jobKind = "revision"
	jobWork       jobKind = "work"
	jobMessage    jobKind = "message"
	jobInvocation jobKind = "invocation"
)

// job is a turn to run, in the order it came.
type job struct {
	kind   jobKind
	prompt string
	from   string                      // a message's sender, who gets the answer
	inv    *protocol.InvocationRequest // an invocation's request
}

type turnDone struct {
	job job
	out Outcome
	err error
}

// agent is the adapter's state; one goroutine (Run's loop) owns it.
type agent struct {
	cfg Config
	drv driver
	enc *json.Encoder
	log *lockedWriter

	phase    phase
	session  string
	plan     string // the last plan put forward
	retry    *job   // the plan or revision that failed, run again on the next message
	queue    []job
	running  *job
	started  time.Time
	cancel   context.CancelFunc
	cut      bool // the running turn was killed by a second shutdown request
	cutAsked bool // … or by a shutdown while it waited for an answer
	// pending are the running turn's questions huddle was asked (by their
	// permission request id); planAsk the ExitPlanMode question whose
	// plan awaits the lead; approvedInTurn says the lead approved the plan
	// within the running turn, which then carried it out.
	pending        map[string]*ask
	planAsk        *ask
	approvedInTurn bool
	dropped        map[string]bool // invocations cancelled while their turn ran
	shutdown       []string        // shutdown requests to approve once the running turn ends

	activity chan string
	asks     chan *ask
	done     chan turnDone
	said     [2]string // the last status and activity reported, so repeats are not written
	stopped  bool      // a shutdown was approved: the adapter exits
	broken   error     // stdout failed: huddle is gone
}

// Run runs the adapter: it plans the task at once, then carries out what
// arrives on in (huddle's messages, one JSON line each) and writes its
// lines to out (protocol.ExecLine) until a shutdown is approved, in ends, or
// ctx is cancelled; the CLI's stderr and the adapter's own notes go to log.
func Run(ctx context.Context, cfg Config, in io.Reader, out, log io.Writer) error {
	if cfg.Dir == "" {
		cfg.Dir, _ = os.Getwd() // without it paths are shown whole
	}
	lw := &lockedWriter{w: log}
	r := &runner{cli: cfg.CLI, bin: cfg.Bin, extra: cfg.Extra, cwd: cfg.Dir, log: lw}
	drv := cfg.CLI.newDriver(r)
	a := &agent{
		cfg:      cfg,
		drv:      drv,
		enc:      json.NewEncoder(out),
		log:      lw,
		dropped:  map[string]bool{},
		pending:  map[string]*ask{},
		activity: make(chan string),
		asks:     make(chan *ask),
		done:     make(chan turnDone, 1),
	}
	defer drv.close()
	a.enc.SetEscapeHTML(false)
	stop := make(chan struct{})
	defer close(stop)
	msgs := make(chan protocol.Message)
	go readMessages(in, msgs, stop, lw) // ends with stdin, which is the process's own

	a.queue = append(a.queue, job{kind: jobPlan, prompt: planPrompt(cfg.Task, cfg.CLI.exitPlan)})
	a.startNext(ctx)
	for {
		select {
		case <-ctx.Done():
			a.abort()
			return nil
		case m, ok := <-msgs:
			if !ok { // huddle closed stdin: it is stopping this member
				a.abort()
				return a.broken
			}
			a.handle(m)
		case s := <-a.activity:
			a.report(s)
		case q := <-a.asks:
			a.asked(q)
		case d := <-a.done:
			a.finished(d)
		}
		if a.stopped {
			return a.broken
		}
		if a.broken != nil {
			a.abort()
			return a.broken
		}
		a.startNext(ctx)
	}
}

// readMessages decodes huddle's lines from in until it ends.
func readMessages(in io.Reader, msgs chan<- protocol.Message, stop <-chan struct{}, log *lockedWriter) {
	defer close(msgs)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), protocol.MaxLine)
	for sc.Scan() {
		m, err := protocol.Decode(sc.Bytes(), protocol.Fallback{})
		if err != nil {
			log.printf("agent: a line from huddle is not a message: %v", err)
			continue
		}
		select {
		case msgs <- m:
		case <-stop:
			return
		}
	}
	if err := sc.Err(); err != nil {
		log.printf("agent: reading stdin: %v", err)
	}
}

// say writes one line for huddle.
func (a *agent) say(l protocol.ExecLine) {
	if a.broken != nil {
		return
	}
	if err := a.enc.Encode(l); err != nil {
		a.broken = fmt.Errorf("writing to huddle: %w", err)
		a.log.printf("agent: %v", a.broken)
	}
}

// status reports what the agent does, as far as huddle lets it: nothing
// while a plan awaits approval (huddle shows that), "revising" while the
// lead's rejection stands, otherwise working or idle.
func (a *agent) status(working bool, activity string) {
	word := "idle"
	switch {
	case a.phase == awaiting:
		return
	case a.phase == revising:
		word = "revising"
	case working:
		word = "working"
	}
	if a.said == [2]string{word, activity} {
		return
	}
	a.said = [2]string{word, activity}
	a.say(protocol.ExecLine{Kind: "status", Status: word, Activity: activity})
}

// report shows an activity of the running turn.
func (a *agent) report(activity string) { a.status(true, activity) }

// setPhase moves the plan phase; huddle sets the status of the new phase
// itself, so the next report is written even if it repeats the last.
func (a *agent) setPhase(p phase) {
	a.phase = p
	a.said = [2]string{}
}

// startNext runs the next job if none runs.
func (a *agent) startNext(ctx context.Context) {
	if a.running != nil || len(a.queue) == 0 || len(a.shutdown) > 0 {
		return
	}
	j := a.queue[0]
	a.queue = a.queue[1:]
	a.running, a.started, a.cut, a.cutAsked, a.approvedInTurn = &j, time.Now(), false, false, false
	t := a.turnFor(j)
	tctx, cancel := context.WithCancel(ctx)
	a.cancel = cancel
	a.report(a.startActivity(j))
	h := hooks{
		activity: func(s string) {
			select {
			case a.activity <- s:
			case <-tctx.Done():
			}
		},
		ask: func(q *ask) bool {
			select {
			case a.asks <- q:
				return true
			case <-tctx.Done():
				return false
			}
		},
	}
	go func() {
		out, err := a.drv.run(tctx, t, h)
		a.done <- turnDone{job: j, out: out, err: err}
	}()
}

// turnFor is the turn that carries out j: on the session so far, with edits
// only for the work and, once the plan is approved, what comes after it.
func (a *agent) turnFor(j job) Turn {
	t := Turn{Prompt: j.prompt, Session: a.session, Edits: j.kind == jobWork || (a.phase == approved && j.kind != jobPlan && j.kind != jobRevise)}
	if a.session == "" && j.kind != jobPlan {
		plan := ""
		if j.kind == jobWork {
			plan = a.plan
		}
		t.Prompt = contextPrompt(a.cfg.Task, plan, j.prompt)
	}
	return t
}

func (a *agent) startActivity(j job) string {
	switch j.kind {
	case jobPlan:
		return oneLine("planning: "+a.cfg.Task, maxActivity)
	case jobRevise:
		return "revising the plan"
	case jobWork:
		return "carrying out the plan"
	case jobMessage:
		return "answering " + j.from
	default:
		return "answering a call from " + j.inv.Caller
	}
}

// abort kills the running turn, if any, and waits for it.
func (a *agent) abort() {
	if a.running == nil {
		return
	}
	a.cancel()
	for {
		select {
		case <-a.activity:
		case <-a.asks:
		case <-a.done:
			a.running = nil
			a.forgetAsks()
			return
		}
	}
}

// handle carries out one message from huddle.
func (a *agent) handle(m protocol.Message) {
	switch m.Type {
	case protocol.TypeMessage, protocol.TypeBroadcast:
		a.messageArrived(m)
	case protocol.TypePlanApprovalResponse:
		a.planDecided(m)
	case protocol.TypePermissionResponse:
		a.permissionDecided(m)
	case protocol.TypeShutdownRequest:
		a.shutdownAsked(m)
	case protocol.TypeInvocationRequest:
		if m.Invocation != nil {
			a.queue = append(a.queue, job{kind: jobInvocation, inv: m.Invocation, prompt: invocationPrompt(m.Invocation, a.phase == approved)})
		}
	case protocol.TypeInvocationCancel:
		a.invocationCancelled(m.RequestID)
	default:
		a.log.printf("agent: ignored a %s from %s", m.Type, m.From)
	}
}

// messageArrived queues a teammate's message as a follow-up turn on the
// session; after a failed plan it runs the plan again, the message added.
func (a *agent) messageArrived(m protocol.Message) {
	if a.retry != nil {
		j := *a.retry
		a.retry = nil
		j.prompt += fmt.Sprintf("\n\n%s adds: %s", m.From, m.Content)
		a.queue = append(a.queue, j)
		return
	}
	a.queue = append(a.queue, job{kind: jobMessage, from: m.From, prompt: messagePrompt(m.From, m.Content, a.phase == approved)})
}

// planDecided acts on the lead's decision on the plan that awaits it.
func (a *agent) planDecided(m protocol.Message) {
	if a.phase != awaiting {
		a.log.printf("agent: ignored a decision on %s: no plan of this agent awaits one", m.RequestID)
		return
	}
	if a.planAsk != nil {
		a.planAnswered(m)
		return
	}
	switch {
	case m.Approved():
		a.setPhase(approved)
		a.queue = append(a.queue, job{kind: jobWork, prompt: workPrompt(m.Feedback)})
	case m.Reason == string(protocol.RequestExpired):
		// Nobody decided in time: the same plan waits again.
		a.say(protocol.ExecLine{Kind: "plan", Plan: a.plan})
	case m.Reason == string(protocol.RequestCancelled):
		a.log.printf("agent: plan %s cancelled: %s", m.RequestID, m.Feedback)
	default:
		a.setPhase(revising)
		a.queue = append(a.queue, job{kind: jobRevise, prompt: revisePrompt(m.Feedback)})
	}
}

// shutdownAsked approves a shutdown at once when idle; while a turn runs
// it approves after the turn, or at once, killing the CLI, when the lead
// asks a second time.
func (a *agent) shutdownAsked(m protocol.Message) {
	if a.running == nil {
		a.approveShutdowns([]string{m.RequestID}, "idle: stopping now")
		a.stopped = true
		return
	}
	if slices.Contains(a.shutdown, m.RequestID) {
		return // the same request again (a redelivery), not the lead insisting
	}
	a.shutdown = append(a.shutdown, m.RequestID)
	if a.planAsk != nil || len(a.pending) > 0 {
		// The turn waits for an answer: nothing it does will end it first.
		a.cut, a.cutAsked = true, true
		a.cancel()
		return
	}
	if len(a.shutdown) == 1 {
		a.report(fmt.Sprintf("finishing its %s turn, then stopping", a.turnKind(a.running.kind)))
		return
	}
	a.cut = true
	a.cancel()
}

func (a *agent) approveShutdowns(ids []string, reason string) {
	for _, id := range ids {
		a.say(protocol.ExecLine{Kind: "shutdown_response", RequestID: id, Approve: protocol.Bool(true), Reason: reason})
	}
}

// invocationCancelled drops a cancelled invocation: from the queue, or by
// stopping its running turn, unanswered.
func (a *agent) invocationCancelled(id string) {
	for i, j := range a.queue {
		if j.kind == jobInvocation && j.inv.RequestID == id {
			a.queue = append(a.queue[:i], a.queue[i+1:]...)
			return
		}
	}
	if r := a.running; r != nil && r.kind == jobInvocation && r.inv.RequestID == id {
		a.dropped[id] = true
		a.cancel()
	}
}

// turnKind is what the running turn of kind k turned out to be: a plan or
// revision approved within it went on to carry the plan out.
func (a *agent) turnKind(k jobKind) jobKind {
	if a.approvedInTurn && (k == jobPlan || k == jobRevise) {
		return jobWork
	}
	return k
}

// finished acts on a turn that ended.
func (a *agent) finished(d turnDone) {
	a.running = nil
	a.cancel()
	a.forgetAsks()
	d.job.kind = a.turnKind(d.job.kind)
	in, out := d.out.TokensIn, d.out.TokensOut
	if d.out.Session != "" {
		a.session = d.out.Session
	}
	if in > 0 || out > 0 || d.out.CostUSD > 0 {
		a.say(protocol.ExecLine{Kind: "usage", TokensIn: in, TokensOut: out, CostUSD: d.out.CostUSD})
	}
	if d.err != nil {
		a.log.printf("%s: %s turn failed: %v", a.cfg.CLI.Name, d.job.kind, d.err)
	}
	if a.stillAsked() {
		a.stopAfter(d)
		a.stopped = true
		return
	}
	switch d.job.kind {
	case jobPlan, jobRevise:
		a.planned(d)
	case jobWork:
		a.worked(d)
	case jobMessage:
		a.answered(d)
	case jobInvocation:
		a.returnResult(d)
	}
}

// stillAsked reports whether a shutdown asked during the turn is still
// open: one that reached its deadline (huddle tells the agent nothing of
// that) no longer asks anything, and the agent goes on.
func (a *agent) stillAsked() bool {
	if len(a.shutdown) == 0 {
		return false
	}
	if a.cut || a.cfg.TeamDir == "" {
		return true
	}
	st, err := filestore.Open(a.cfg.TeamDir)
	if err != nil {
		return true
	}
	defer st.Close()
	open := a.shutdown[:0]
	for _, id := range a.shutdown {
		// Peek: the agent only asks whether the request is final; its
		// resolver and the runtime write the record.
		r, err := st.Peek(context.Background(), id)
		if err == nil && r.Status.IsTerminal() {
			a.log.printf("agent: shutdown request %s is %s already: going on", id, r.Status)
			continue
		}
		open = append(open, id)
	}
	a.shutdown = open
	return len(open) > 0
}

// stopAfter approves the shutdowns the lead asked for during the turn d,
// failing the invocations still queued so their callers do not wait.
func (a *agent) stopAfter(d turnDone) {
	name := a.cfg.CLI.Name
	reason := fmt.Sprintf("finished its %s turn, stopping", d.job.kind)
	switch {
	case a.cutAsked:
		reason = fmt.Sprintf("stopped at once: %s's %s turn was waiting for an answer, and was cut short", name, d.job.kind)
	case a.cut:
		reason = fmt.Sprintf("stopped at once at the lead's second request: %s's %s turn was cut short", name, d.job.kind)
	}
	if d.job.kind == jobInvocation && !a.dropped[d.job.inv.RequestID] && (a.cut || d.err != nil) {
		a.fail(d.job.inv, "shutting down: "+reason)
	} else if d.job.kind == jobInvocation {
		a.returnResult(d)
	} else if d.job.kind == jobWork && !a.cut {
		a.worked(d)
	} else if d.job.kind == jobMessage && !a.cut {
		a.answered(d)
	}
	left := 0
	for _, j := range a.queue {
		if j.kind == jobInvocation {
			a.fail(j.inv, name+" is shutting down")
		} else {
			left++
		}
	}
	if left > 0 {
		reason += fmt.Sprintf(" (%d queued turns not run)", left)
	}
	a.approveShutdowns(a.shutdown, reason)
}

// planned puts the plan of a plan or revision turn to the lead; a turn
// that gave none is said, and the next message runs it again.
func (a *agent) planned(d turnDone) {
	plan := strings.TrimSpace(d.out.Plan)
	if plan == "" {
		plan = strings.TrimSpace(d.out.Final)
	}
	if d.err == nil && plan != "" {
		a.plan = plan
		a.say(protocol.ExecLine{Kind: "plan", Plan: plan})
		a.setPhase(awaiting)
		return
	}
	why := "it gave no plan"
	if d.err != nil {
		why = d.err.Error()
	}
	a.retry = &d.job
	a.status(false, oneLine(fmt.Sprintf("no plan: %s; a message tries again", why), maxActivity))
}

func (a *agent) worked(d turnDone) {
	name := a.cfg.CLI.Name
	if d.err != nil {
		a.say(protocol.ExecLine{Kind: "send", To: protocol.Lead, Content: fmt.Sprintf("%s could not carry out the plan: %v", name, d.err)})
		a.status(false, oneLine("work failed: "+d.err.Error(), maxActivity))
		return
	}
	final := strings.TrimSpace(d.out.Final)
	if final == "" {
		final = name + " finished the work without a final answer"
	}
	a.say(protocol.ExecLine{Kind: "send", To: protocol.Lead, Content: final})
	a.status(false, oneLine("done: "+final, maxActivity))
}

func (a *agent) answered(d turnDone) {
	to := d.job.from
	text := strings.TrimSpace(d.out.Final)
	switch {
	case d.err != nil:
		text = fmt.Sprintf("%s could not answer: %v", a.cfg.CLI.Name, d.err)
	case text == "":
		text = a.cfg.CLI.Name + " gave no answer"
	}
	a.say(protocol.ExecLine{Kind: "send", To: to, Content: text})
	a.status(false, "answered "+to)
}

// returnResult answers an invocation with the turn's final answer, as an
// ok result {"summary": …}, or an error result saying why there is none.
func (a *agent) returnResult(d turnDone) {
	inv := d.job.inv
	if a.dropped[inv.RequestID] {
		delete(a.dropped, inv.RequestID)
		return
	}
	final := strings.TrimSpace(d.out.Final)
	switch {
	case d.err != nil:
		a.fail(inv, fmt.Sprintf("%s failed: %v", a.cfg.CLI.Name, d.err))
	case final == "":
		a.fail(inv, a.cfg.CLI.Name+" gave no answer")
	default:
		res, err := protocol.OK(inv, time.Since(a.started).Milliseconds(), map[string]string{"summary": final})
		if err != nil {
			a.fail(inv, err.Error())
			break
		}
		a.say(protocol.ExecLine{Kind: "result", Result: &res})
	}
	a.status(false, "answered "+inv.Caller)
}

func (a *agent) fail(inv *protocol.InvocationRequest, msg string) {
	res := protocol.Fail(inv, time.Since(a.started).Milliseconds(), protocol.ErrInvalidResponse, "INVALID_RESPONSE: "+msg, map[string]string{"reason": msg})
	a.say(protocol.ExecLine{Kind: "result", Result: &res})
}
