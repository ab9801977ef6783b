package team

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"huddle/inbox"
	"huddle/protocol"
	"huddle/teamdir"
)

// ExecLine is one line an exec teammate writes on stdout (see the README's
// "exec teammates" section). Its kind is the wire field "action"; it is not
// one of a member's invocable actions (invoke names one of those in Name).
type ExecLine struct {
	Kind       string                     `json:"action"` // send | broadcast | plan | shutdown_response | status | invoke | result
	To         string                     `json:"to,omitempty"`
	Content    string                     `json:"content,omitempty"`
	Plan       string                     `json:"plan,omitempty"`
	RequestID  string                     `json:"request_id,omitempty"`
	Approve    *bool                      `json:"approve,omitempty"`
	Reason     string                     `json:"reason,omitempty"`
	Status     string                     `json:"status,omitempty"`
	Activity   string                     `json:"activity,omitempty"`
	Target     string                     `json:"target,omitempty"`
	Name       string                     `json:"name,omitempty"` // the invoked action
	Prompt     string                     `json:"prompt,omitempty"`
	TimeoutSec int                        `json:"timeout_sec,omitempty"`
	Result     *protocol.InvocationResult `json:"result,omitempty"` // the answer to an invocation
}

// proc is an exec teammate's process.
type proc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   io.ReadCloser
	log   *os.File
	mu    sync.Mutex // serialises writes to stdin
}

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
	cmd := exec.Command(argv[0], argv[1:]...)
	if mt.spec.Dir != "" {
		cmd.Dir = mt.spec.Dir
		if !filepath.IsAbs(cmd.Dir) {
			cmd.Dir = filepath.Join(mt.rt.dir, cmd.Dir)
		}
	}
	cmd.Env = append(os.Environ(), "HUDDLE_DIR="+mt.rt.dir, "HUDDLE_MEMBER="+mt.spec.Name)
	cmd.Stderr = lf
	stdin, err := cmd.StdinPipe()
	if err != nil {
		lf.Close()
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		lf.Close()
		return err
	}
	p := &proc{cmd: cmd, stdin: stdin, out: out, log: lf}
	if err := cmd.Start(); err != nil {
		lf.Close()
		// runExec reports it: the member crashes and the team goes on.
		mt.startErr = fmt.Errorf("start %q: %w", argv[0], err)
		return nil
	}
	mt.proc = p
	mt.mu.Lock()
	mt.rec.PID = cmd.Process.Pid
	mt.mu.Unlock()
	mt.onMessage = p.send
	return nil
}

// send writes one inbox message to the process's stdin as a JSON line.
func (p *proc) send(d inbox.Delivery) error {
	b, err := protocol.Encode(&d.Msg)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	// A write error means the process is gone; runExec reports its exit.
	_, _ = p.stdin.Write(append(b, '\n'))
	return nil
}

// runExec carries out the teammate's lines until its process exits. On runtime
// stop the process gets its stdin closed, then SIGTERM, then SIGKILL.
func (mt *mate) runExec(ctx context.Context) error {
	if mt.startErr != nil {
		return mt.startErr
	}
	p := mt.proc
	defer p.log.Close()
	if err := mt.setStatus(protocol.MemberWorking, "started pid "+fmt.Sprint(p.cmd.Process.Pid)); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			p.mu.Lock()
			p.stdin.Close()
			p.mu.Unlock()
			_ = p.cmd.Process.Signal(os.Interrupt) // it may have exited already
			select {
			case <-done:
			case <-time.After(3 * time.Second):
				_ = p.cmd.Process.Kill() // it may have exited already
			}
		case <-done:
		}
	}()
	sc := bufio.NewScanner(p.out)
	sc.Buffer(make([]byte, 64<<10), protocol.MaxLine)
	var off int64
	for sc.Scan() {
		line := sc.Bytes()
		if err := mt.carryOut(line); err != nil {
			if werr := inbox.WriteDeadLetter(mt.rt.dir, "exec:"+mt.spec.Name, off, err.Error(), line); werr != nil {
				return werr
			}
			mt.rt.emit(Event{"event": "dead_letter", "member": mt.spec.Name, "reason": err.Error()})
		}
		off += int64(len(line)) + 1
	}
	scanErr := sc.Err()
	if scanErr != nil {
		_, _ = io.Copy(io.Discard, p.out) // keep the pipe flowing until it exits
	}
	werr := p.cmd.Wait()
	close(done)
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case mt.stopping() && werr == nil:
		return errStopped
	case werr != nil:
		return fmt.Errorf("process exited: %v", werr)
	case scanErr != nil:
		return fmt.Errorf("reading its output: %v", scanErr)
	default:
		return errors.New("process exited without an approved shutdown")
	}
}

// carryOut carries out one line the teammate wrote; an error means the line
// is refused (dead-lettered).
func (mt *mate) carryOut(line []byte) error {
	var l ExecLine
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
	case "":
		return errors.New("action is required")
	default:
		return fmt.Errorf("unknown action %q", l.Kind)
	}
}

// execSend sends a message from the teammate.
func (mt *mate) execSend(l ExecLine) error {
	if l.Content == "" {
		return errors.New("send: content is required")
	}
	if err := Send(mt.rt.dir, mt.rt.team, mt.spec.Name, l.To, l.Content); err != nil {
		return fmt.Errorf("send: %v", err)
	}
	mt.count(func(c *protocol.Counters) { c.Sent++ })
	return nil
}

// execBroadcast sends a message from the teammate to every other member.
func (mt *mate) execBroadcast(l ExecLine) error {
	if l.Content == "" {
		return errors.New("broadcast: content is required")
	}
	n, err := Broadcast(mt.rt.dir, mt.rt.team, mt.spec.Name, l.Content)
	mt.count(func(c *protocol.Counters) { c.Sent += n })
	if err != nil {
		return fmt.Errorf("broadcast: %v", err)
	}
	return nil
}

// execPlan submits the teammate's plan to the lead.
func (mt *mate) execPlan(l ExecLine) error {
	if l.Plan == "" {
		return errors.New("plan: plan is required")
	}
	if _, err := mt.submitPlan(l.Plan); err != nil {
		return fmt.Errorf("plan: %v", err)
	}
	return nil
}

// execShutdownResponse answers the lead's shutdown request to the teammate.
func (mt *mate) execShutdownResponse(l ExecLine) error {
	name := mt.spec.Name
	if l.Approve == nil {
		return errors.New("shutdown_response: approve is required")
	}
	r, err := LoadRequest(mt.rt.dir, l.RequestID)
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
func (mt *mate) execStatus(l ExecLine) error {
	st := protocol.MemberStatus(l.Status)
	if st == protocol.MemberAwaitingApproval || st == protocol.MemberStopped || st == protocol.MemberCrashed || st == protocol.MemberStopping {
		return fmt.Errorf("status: %s is set by huddle, not reported", st)
	}
	if mt.status() == protocol.MemberAwaitingApproval && st != protocol.MemberAwaitingApproval {
		return fmt.Errorf("status: %s is awaiting approval; it cannot report %s", mt.spec.Name, st)
	}
	if err := mt.setStatus(st, l.Activity); err != nil {
		return fmt.Errorf("status: %v", err)
	}
	return nil
}

// execInvoke makes a call for the teammate; the answer, whatever it is,
// comes back on its stdin as an invocation_result.
func (mt *mate) execInvoke(l ExecLine) error {
	if mt.status() == protocol.MemberAwaitingApproval {
		return errors.New("invoke: refused while the plan awaits approval")
	}
	if l.Target == "" || l.Name == "" {
		return errors.New("invoke: target and name are required")
	}
	mt.rt.wg.Add(1)
	go func() {
		defer mt.rt.wg.Done()
		res := mt.call(mt.rt.ctx, protocol.InvocationRequest{Target: l.Target, Action: l.Name, Prompt: l.Prompt, TimeoutSec: l.TimeoutSec})
		m := protocol.NewMessage(protocol.TypeInvocationResult, l.Target, mt.spec.Name)
		m.Result = &res
		if err := mt.proc.send(inbox.Delivery{Msg: m}); err != nil {
			mt.rt.emit(Event{"event": "error", "member": mt.spec.Name, "error": fmt.Sprintf("answering %s: %v", l.Target, err)})
		}
	}()
	return nil
}

// execResult passes the teammate's answer to an invocation on to its
// caller; an answer that does not fit the request is replaced by an
// INVALID_RESPONSE result, and the line is refused.
func (mt *mate) execResult(l ExecLine) error {
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
		mt.reply(req, protocol.Fail(&req, res.DurationMS, protocol.ErrInvalidResponse, "INVALID_RESPONSE: "+name+" answered "+reason, map[string]any{"reason": reason}))
		return fmt.Errorf("result: %s", reason)
	}
	mt.reply(req, res)
	return nil
}
