package supervisor

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"huddle/ipc"
	"huddle/protocol"
	"huddle/store"
	"huddle/team"
	"huddle/teamdir"
)

// proc is an exec teammate's process.
//
// Its stdin has one writer, writeLoop, fed by a bounded queue: nobody else
// blocks on the pipe, so an agent that stops reading holds up only the
// messages for itself, and stopping it closes stdin and signals the process
// without waiting for a writer (docs/ARCHITECTURE.md, "Delivery").
type proc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *exitReader
	log   *os.File
	// mark is the value of markVar in the environment of the process and
	// of everything it starts, even what leaves its group (sweepMarked).
	mark string

	queue chan stdinLine
	// gone is closed once stdin takes nothing more: a write failed (the
	// process is gone) or the runtime closed it to stop the process.
	gone      chan struct{}
	goneOnce  sync.Once
	closeOnce sync.Once
}

// stdinLine is one line for the process; written is closed once it is
// written whole.
type stdinLine struct {
	b       []byte
	written chan struct{}
}

// stdinQueue bounds the lines waiting for the writer. The inbox consumer
// puts one at a time and waits for it; invoke answers put the rest.
const stdinQueue = 16

// stopGrace is how long a process has to exit after its stdin is closed
// and it got SIGINT, before SIGKILL; killGrace how long the kill may take
// before its stdout is closed under it (a child it left may hold it open).
// Together they bound a runtime's stop (docs/ARCHITECTURE.md, "Delivery", "Bounds").
const (
	stopGrace = 3 * time.Second
	killGrace = time.Second
)

// errGone is returned for a line the process can no longer take.
var errGone = errors.New("the process takes no more input")

// startProcess starts the teammate's command before its inbox is consumed,
// so that every message has somewhere to go.
func (mt *mate) startProcess() error {
	argv := append([]string(nil), mt.spec.Runtime.Command...)
	if argv[0] == "huddle" && mt.rt.opts.Executable != "" {
		argv[0] = mt.rt.opts.Executable
	}
	logPath, err := teamdir.MemberLogPath(mt.rt.dir, mt.spec.Name)
	if err != nil {
		return err
	}
	lf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("%s: log: %w", mt.spec.Name, err)
	}
	// The process runs in the member's dir (relative to the team
	// directory), else in the team directory itself, whatever directory
	// huddle runs in: a command that names a file next to team.json works
	// from anywhere. HUDDLE_DIR is absolute, so it holds in that directory.
	teamDir, err := filepath.Abs(mt.rt.dir)
	if err != nil {
		lf.Close()
		return fmt.Errorf("%s: %w", mt.spec.Name, err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = teamDir
	if mt.spec.Dir != "" {
		cmd.Dir = mt.spec.Dir
		if !filepath.IsAbs(cmd.Dir) {
			cmd.Dir = filepath.Join(teamDir, cmd.Dir)
		}
	}
	mark := mt.spec.Name + "-" + protocol.NewCorrelationID()[5:]
	cmd.Env = append(os.Environ(), "HUDDLE_DIR="+teamDir, "HUDDLE_MEMBER="+mt.spec.Name, markVar+"="+mark)
	cmd.Stderr = lf
	// A group of its own: what the agent starts (a node launcher's native
	// child, a tool's subprocess) is signalled with it and killed after
	// it, never left running without it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		lf.Close()
		return err
	}
	// The pipe is made here, not by StdoutPipe: Wait must not close its
	// read end, which is read to the end of what the agent left after it
	// exits (exitReader).
	outR, outW, err := os.Pipe()
	if err != nil {
		lf.Close()
		return err
	}
	cmd.Stdout = outW
	out := newExitReader(outR)
	p := &proc{cmd: cmd, stdin: stdin, out: out, log: lf, mark: mark, queue: make(chan stdinLine, stdinQueue), gone: make(chan struct{})}
	mt.replayDone = make(chan struct{})
	err = cmd.Start()
	outW.Close() // the agent holds it now, and its children
	if err != nil {
		outR.Close()
		lf.Close()
		// runExec reports it: the member crashes and the team goes on.
		mt.startErr = fmt.Errorf("start %q: %w", argv[0], err)
		return nil
	}
	mt.mu.Lock()
	mt.proc = p
	mt.rec.PID = cmd.Process.Pid
	mt.mu.Unlock()
	mt.onMessage = mt.sendToProcess
	return nil
}

// sendToProcess is the exec teammate's inbox handler's last step: it
// returns once the message is written to the process, so the consumer
// commits only what the process was given. When the process can take no
// more it waits without committing for the runtime to stop (the next run's
// process gets the message) or for a restart (the new process gets it).
func (mt *mate) sendToProcess(ctx context.Context, d store.Delivery) error {
	select {
	case <-mt.replayDone:
	case <-ctx.Done():
		return ctx.Err()
	}
	if mt.alreadyReplayed(d.Msg) {
		return nil
	}
	err := mt.proc.send(ctx, &d.Msg)
	if errors.Is(err, errGone) {
		// Uncommitted until the runtime stops (the next run's process gets
		// it), or until a restart runs a new process, which gets it now.
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-mt.replaced:
			return mt.rt.mate(mt.spec.Name).dispatch(ctx, d)
		}
	}
	return err
}

// send writes one message to the process's stdin as a JSON line and waits
// until it is written, the process is gone (errGone), or ctx ends.
func (p *proc) send(ctx context.Context, m *protocol.Message) error {
	b, err := protocol.Encode(m)
	if err != nil {
		return err
	}
	l := stdinLine{b: append(b, '\n'), written: make(chan struct{})}
	select {
	case p.queue <- l:
	case <-p.gone:
		return errGone
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-l.written:
		return nil
	case <-p.gone:
		select {
		case <-l.written: // written just before the end
			return nil
		default:
			return errGone
		}
	case <-ctx.Done():
		return ctx.Err()
	}
}

// writeLoop is the one writer of the process's stdin; it ends when stdin
// takes no more. runExec owns it.
func (p *proc) writeLoop() {
	for {
		select {
		case <-p.gone:
			return
		case l := <-p.queue:
			if _, err := p.stdin.Write(l.b); err != nil {
				p.closeInput() // the process is gone, or stdin was closed
				return
			}
			close(l.written)
		}
	}
}

// closeInput closes the process's stdin. A write blocked on the pipe
// returns at once (the pipe is non-blocking under Go's poller), so this
// never waits for an agent that stopped reading.
func (p *proc) closeInput() {
	p.goneOnce.Do(func() { close(p.gone) })
	p.closeOnce.Do(func() { _ = p.stdin.Close() }) // it may be closed already
}

// stopProcess ends the process when the runtime stops: stdin closed and
// SIGINT, SIGKILL after stopGrace, and its stdout closed after killGrace
// so that reading it ends even if a child of the process holds it open.
// exited is closed when the process has been waited for.
func (p *proc) stopProcess(exited <-chan struct{}) {
	p.closeInput()
	p.signalGroup(syscall.SIGINT)
	if waitClosed(exited, stopGrace) {
		return
	}
	p.signalGroup(syscall.SIGKILL)
	if waitClosed(exited, killGrace) {
		return
	}
	_ = p.out.Close()
}

// signalGroup signals the process's group: the process and whatever it
// started that stayed in it. Either may be gone already.
func (p *proc) signalGroup(sig syscall.Signal) {
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
}

// waitClosed waits up to d for c to close and reports whether it did.
func waitClosed(c <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c:
		return true
	case <-t.C:
		return false
	}
}

// runExec carries out the teammate's lines until its process exits. On runtime
// stop the process gets its stdin closed, then SIGINT, then SIGKILL.
func (mt *mate) runExec(ctx context.Context) error {
	if mt.startErr != nil {
		return mt.startErr
	}
	p := mt.proc
	defer p.log.Close()
	var helpers sync.WaitGroup
	defer helpers.Wait()
	helpers.Add(1)
	go func() {
		defer helpers.Done()
		p.writeLoop()
	}()
	defer p.closeInput() // ends writeLoop when the process exits by itself
	exited := make(chan struct{})
	defer close(exited)
	helpers.Add(1)
	go func() {
		defer helpers.Done()
		select {
		case <-ctx.Done():
			p.stopProcess(exited)
		case <-exited:
		}
	}()
	defer mt.endReplay()
	if err := mt.setStatus(protocol.MemberWorking, "started pid "+fmt.Sprint(p.cmd.Process.Pid)); err != nil {
		p.signalGroup(syscall.SIGKILL)
		_ = p.cmd.Wait()
		return err
	}
	helpers.Add(1)
	go func() {
		defer helpers.Done()
		mt.sendReplay(ctx)
	}()
	// The agent's exit ends the reading, whatever its children hold:
	// what it left in the pipe is read, nothing after.
	var werr error
	waited := make(chan struct{})
	helpers.Add(1)
	go func() {
		defer helpers.Done()
		werr = p.cmd.Wait()
		p.out.agentExited()
		close(waited)
	}()
	readErr := mt.readLines(p.out)
	if readErr != nil {
		_, _ = io.Copy(io.Discard, p.out) // keep the pipe flowing until it exits
	}
	<-waited
	_ = p.out.Close()
	// Whatever the process left outlived it: an agent's children end with
	// it, however it ended. The group's id is not reused while any of
	// them lives; what left the group (a CLI runs its shells in sessions
	// of their own) still carries the mark.
	p.signalGroup(syscall.SIGKILL)
	sweepMarked(p.mark)
	mt.rt.cancelPermissions(mt.spec.Name)
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case mt.stopping() && werr == nil:
		return errStopped
	case werr != nil:
		mt.keepLastLogLine()
		return fmt.Errorf("process exited: %v", werr)
	case readErr != nil:
		return fmt.Errorf("reading its output: %v", readErr)
	default:
		return errors.New("process exited without an approved shutdown")
	}
}

// readLines carries out every line the process writes on stdout until it
// closes it. A line that is not a valid action, or is longer than
// protocol.MaxLine, is dead-lettered (its first bytes) and reading goes on.
func (mt *mate) readLines(out io.Reader) error {
	br := bufio.NewReaderSize(out, 64<<10)
	var off int64
	for {
		line, n, over, err := readLine(br, protocol.MaxLine)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, os.ErrClosed) {
				return nil
			}
			return err
		}
		switch {
		case over:
			reason := fmt.Sprintf("%s wrote a line of more than %d bytes", mt.spec.Name, protocol.MaxLine)
			if n > 0 {
				reason = fmt.Sprintf("%s wrote a line of %d bytes; a line exceeds the limit of %d bytes", mt.spec.Name, n, protocol.MaxLine)
			}
			if err := mt.refuseLine(off, reason, line); err != nil {
				return err
			}
			mt.answerTooLarge(line, n)
		default:
			if err := mt.carryOut(line); err != nil {
				if err := mt.refuseLine(off, err.Error(), line); err != nil {
					return err
				}
			}
		}
		off += n
	}
}

// refuseLine dead-letters a line the process wrote and says so in the events.
func (mt *mate) refuseLine(off int64, reason string, line []byte) error {
	if err := mt.rt.sh.deadLetter("exec:"+mt.spec.Name, off, reason, line); err != nil {
		return err
	}
	mt.rt.emit(Event{"event": "dead_letter", "member": mt.spec.Name, "reason": reason})
	return nil
}

// answerTooLarge tells the caller of an invocation that its answer was too
// large, when head (the first bytes of a line of n bytes) is the start of
// a result action for an invocation the teammate has yet to answer: the
// caller gets IPC_ERROR at once instead of a TIMEOUT at its deadline.
func (mt *mate) answerTooLarge(head []byte, n int64) {
	id, ok := resultRequestID(head)
	if !ok {
		return
	}
	req, ok := mt.forget(id)
	if !ok {
		return
	}
	msg := fmt.Sprintf("IPC_ERROR: the answer of %s is %d bytes, over the %d-byte limit of an inbox line", mt.spec.Name, n, protocol.MaxLine)
	mt.reply(req, protocol.Fail(&req, 0, protocol.ErrIPC, msg,
		map[string]any{"reason": "answer_too_large", "bytes": n, "max_bytes": protocol.MaxLine}))
}

// resultRequestID reads the start of a line cut short: if it is a result
// action whose result names its request_id before the cut, it returns it.
func resultRequestID(head []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(head))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", false
	}
	var action, id string
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			break
		}
		switch key {
		case "action":
			if err := dec.Decode(&action); err != nil {
				return "", false
			}
		case "result":
			id = objectString(dec, "request_id")
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return "", false
			}
		}
		if action != "" && id != "" {
			break
		}
	}
	return id, action == "result" && id != ""
}

// objectString reads the object dec is at up to its string field key and
// returns that string ("" if the object ends or is cut before it).
func objectString(dec *json.Decoder, key string) string {
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return ""
		}
		if k == key {
			var s string
			if dec.Decode(&s) != nil {
				return ""
			}
			return s
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return ""
		}
	}
	return ""
}

// deadLetterHead is how much of a line too long to carry out is kept for
// its dead letter (which keeps at most 4 KiB of it).
const deadLetterHead = 4 << 10

// readLine reads one line of at most max bytes (its newline included) and
// returns it without the newline, with the number of bytes it took (n). A
// longer line is read to its end and dropped: line is then its first bytes
// and over is set. A last line without a newline counts as a line.
func readLine(br *bufio.Reader, limit int) (line []byte, n int64, over bool, err error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		n += int64(len(chunk))
		switch {
		case over:
		case len(buf)+len(chunk) > limit:
			over = true
			keep := min(deadLetterHead, limit)
			buf = append(buf, chunk[:min(len(chunk), max(0, keep-len(buf)))]...)
		default:
			buf = append(buf, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && (n == 0 || !errors.Is(err, io.EOF)) {
			return nil, n, false, err
		}
		return bytes.TrimSuffix(buf, []byte("\n")), n, over, nil
	}
}

// carryOut carries out one line the teammate wrote; an error means the line
// is refused (dead-lettered).
func (mt *mate) carryOut(line []byte) error {
	var l protocol.ExecLine
	if err := json.Unmarshal(line, &l); err != nil {
		return fmt.Errorf("%s wrote a line that is not a JSON action: %v", mt.spec.Name, err)
	}
	switch l.Kind { // errors name the wire field, "action"
	case "send":
		return mt.execSend(l)
	case "broadcast":
		return mt.execBroadcast(l)
	case "plan":
		return mt.execPlan(l)
	case "shutdown_response":
		return mt.execShutdownResponse(l)
	case "status":
		return mt.execStatus(l)
	case "invoke":
		return mt.execInvoke(l)
	case "result":
		return mt.execResult(l)
	case "usage":
		return mt.execUsage(l)
	case "permission":
		return mt.execPermission(l)
	case "review":
		return mt.execReview(l)
	case "":
		return errors.New("action is required")
	default:
		return fmt.Errorf("unknown action %q", l.Kind)
	}
}

// execSend sends a message from the teammate.
func (mt *mate) execSend(l protocol.ExecLine) error {
	if l.Content == "" {
		return errors.New("send: content is required")
	}
	if err := mt.rt.sh.send(mt.rt.team, mt.spec.Name, l.To, l.Content); err != nil {
		return fmt.Errorf("send: %v", err)
	}
	mt.count(func(c *protocol.Counters) { c.Sent++ })
	return nil
}

// execBroadcast sends a message from the teammate to every other member.
func (mt *mate) execBroadcast(l protocol.ExecLine) error {
	if l.Content == "" {
		return errors.New("broadcast: content is required")
	}
	n, err := mt.rt.sh.broadcast(mt.rt.team, mt.spec.Name, l.Content)
	mt.count(func(c *protocol.Counters) { c.Sent += n })
	if err != nil {
		return fmt.Errorf("broadcast: %v", err)
	}
	return nil
}

// execPlan submits the teammate's plan to the lead.
func (mt *mate) execPlan(l protocol.ExecLine) error {
	if l.Plan == "" {
		return errors.New("plan: plan is required")
	}
	if _, err := mt.submitPlan(l.Plan); err != nil {
		return fmt.Errorf("plan: %v", err)
	}
	return nil
}

// execShutdownResponse answers the lead's shutdown request to the teammate.
func (mt *mate) execShutdownResponse(l protocol.ExecLine) error {
	name := mt.spec.Name
	if l.Approve == nil {
		return errors.New("shutdown_response: approve is required")
	}
	r, err := mt.rt.sh.loadRequest(l.RequestID)
	if err != nil {
		return fmt.Errorf("shutdown_response: no request %q", l.RequestID)
	}
	if r.Kind != protocol.KindShutdown || r.To != name {
		return fmt.Errorf("shutdown_response: %s is not a shutdown request for %s", r.ID, name)
	}
	if err := mt.answer(r, protocol.AnswerEvent(*l.Approve), l.Reason); err != nil {
		return fmt.Errorf("shutdown_response: %v", err)
	}
	return nil
}

// execStatus records the status the teammate reports, unless huddle sets
// that status itself.
func (mt *mate) execStatus(l protocol.ExecLine) error {
	st := protocol.MemberStatus(l.Status)
	if st == protocol.MemberAwaitingApproval || st == protocol.MemberStopped || st == protocol.MemberCrashed || st == protocol.MemberStopping {
		return fmt.Errorf("status: %s is set by huddle, not reported", st)
	}
	if mt.status() == protocol.MemberAwaitingApproval && st != protocol.MemberAwaitingApproval {
		return fmt.Errorf("status: %s is awaiting approval; it cannot report %s", mt.spec.Name, st)
	}
	cur := mt.status()
	if err := mt.setStatus(st, l.Activity); err != nil {
		return fmt.Errorf("status: %v", err)
	}
	if st == protocol.MemberIdle && cur == protocol.MemberWorking {
		mt.turnEnded(l.Activity)
	}
	return nil
}

// execInvoke makes a call for the teammate; the answer, whatever it is,
// comes back on its stdin as an invocation_result.
func (mt *mate) execInvoke(l protocol.ExecLine) error {
	if mt.status() == protocol.MemberAwaitingApproval {
		return errors.New("invoke: refused while the plan awaits approval")
	}
	if l.Target == "" || l.Name == "" {
		return errors.New("invoke: target and name are required")
	}
	req := protocol.InvocationRequest{Target: l.Target, Action: l.Name, Prompt: l.Prompt, TimeoutSec: l.TimeoutSec}
	answer := func(res protocol.InvocationResult) {
		m := protocol.NewMessage(protocol.TypeInvocationResult, l.Target, mt.spec.Name)
		m.Result = &res
		if err := mt.proc.send(mt.rt.ctx, &m); err != nil && mt.rt.ctx.Err() == nil {
			mt.rt.emit(Event{"event": "error", "member": mt.spec.Name, "error": fmt.Sprintf("answering %s: %v", l.Target, err)})
		}
	}
	// The place is taken here, on the goroutine reading the agent's
	// lines: past the bounds the busy answer is written before the next
	// line is read, so a flood of invoke lines waits on its own stdin and
	// starts nothing.
	release, busy := mt.rt.reserveCall(mt.spec.Name)
	if busy != "" {
		answer(mt.refuseCall(req, busy))
		return nil
	}
	mt.rt.wg.Add(1)
	go func() {
		defer mt.rt.wg.Done()
		res := mt.callReserved(mt.rt.ctx, req)
		release()
		answer(res)
	}()
	return nil
}

// execResult passes the teammate's answer to an invocation on to its
// caller; an answer that does not fit the request is replaced by an
// INVALID_RESPONSE result, and the line is refused.
func (mt *mate) execResult(l protocol.ExecLine) error {
	name := mt.spec.Name
	if l.Result == nil {
		return errors.New("result: result is required")
	}
	req, ok := mt.forget(l.Result.RequestID)
	if !ok {
		return fmt.Errorf("result: %s has no invocation %q to answer", name, l.Result.RequestID)
	}
	res := *l.Result
	if err := res.Validate(); err != nil || res.CorrelationID != req.CorrelationID {
		reason := "correlation_id does not match the request's"
		if err != nil {
			reason = err.Error()
		}
		answer, _ := json.Marshal(res)
		mt.reply(req, protocol.Fail(&req, res.DurationMS, protocol.ErrInvalidResponse, "INVALID_RESPONSE: "+name+" answered "+reason, ipc.InvalidDetails(reason, string(answer))))
		return fmt.Errorf("result: %s", reason)
	}
	mt.reply(req, res)
	return nil
}

// keepLastLogLine puts the last line the crashed process wrote on stderr
// in its record: the roster shows it, which says more than an exit status.
func (mt *mate) keepLastLogLine() {
	path, err := teamdir.MemberLogPath(mt.rt.dir, mt.spec.Name)
	if err != nil {
		return
	}
	line := mt.rt.secrets.String(team.LastLine(path))
	mt.mu.Lock()
	mt.rec.LastLog = line
	mt.mu.Unlock()
}

// execUsage adds what the teammate's model spent to its counters, which the
// roster and huddle status show (an exec teammate has no price in team.json:
// it reports the cost itself, or none).
func (mt *mate) execUsage(l protocol.ExecLine) error {
	if l.TokensIn < 0 || l.TokensOut < 0 || l.CostUSD < 0 {
		return errors.New("usage: tokens_in, tokens_out and cost_usd cannot be negative")
	}
	if l.TokensIn == 0 && l.TokensOut == 0 && l.CostUSD == 0 {
		return errors.New("usage: tokens_in, tokens_out or cost_usd is required")
	}
	mt.count(func(c *protocol.Counters) {
		c.TokensIn += l.TokensIn
		c.TokensOut += l.TokensOut
		c.CostUSD += l.CostUSD
	})
	mt.writeOrSay()
	return nil
}

// execReview is an agent saying its change is ready: its branch goes to
// the lead as a review now, as at the end of a turn. Refused for a
// member without a worktree or without an approved plan.
func (mt *mate) execReview(l protocol.ExecLine) error {
	if mt.ws == nil {
		return fmt.Errorf("review: %s works in place: its workspace in team.json has no worktree", mt.spec.Name)
	}
	if !mt.planIsApproved() {
		return fmt.Errorf("review: %s has no approved plan to put its change under", mt.spec.Name)
	}
	mt.turnEnded("done: " + l.Content)
	return nil
}
