package agents

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"
)

// lineProc is a CLI process that outlives its turns, spoken to a JSON
// line at a time on its stdin and stdout.
type lineProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan []byte // its stdout, a line at a time; closed at its end
	exited chan struct{}
	werr   error // how it exited, once exited is closed
	said   lastLine
	mode   string // Claude Code's permission mode, as it last said
	seq    int    // the host's requests so far
	// count is the lines read (the reader's, until lines is closed);
	// skipped and garbage count those too long to read and those not
	// JSON events.
	count, skipped, garbage int
}

// startProc starts r's CLI with args, its stdout read a line at a time.
func startProc(r *runner, args []string) (*lineProc, error) {
	p := &lineProc{lines: make(chan []byte, 16), exited: make(chan struct{})}
	cmd := exec.Command(r.bin, args...)
	cmd.Stderr = io.MultiWriter(r.log, &p.said)
	cmd.WaitDelay = waitDelay
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", r.bin, err)
	}
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", r.bin, err)
	}
	p.cmd, p.stdin = cmd, stdin
	go func() {
		p.werr = cmd.Wait()
		_ = pw.Close()
		close(p.exited)
	}()
	go p.read(pr, r)
	return p, nil
}

// read hands each line of out to the session until out ends.
func (p *lineProc) read(out io.Reader, r *runner) {
	defer close(p.lines)
	br := bufio.NewReaderSize(out, 64<<10)
	for {
		line, tooLong, err := readEventLine(br)
		if tooLong || len(line) > 0 {
			p.count++
		}
		if tooLong {
			r.log.printf("%s: skipped a line of more than %d bytes", r.cli.Name, maxEventLine)
			p.skipped++
		} else if len(line) > 0 {
			p.lines <- line
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				r.log.printf("%s: reading its output: %v", r.cli.Name, err)
			}
			_, _ = io.Copy(io.Discard, out)
			return
		}
	}
}

// send writes one line of the control protocol to the process.
func (p *lineProc) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = p.stdin.Write(append(b, '\n'))
	return err
}

// kill ends the process at once and waits for it.
func (p *lineProc) kill() {
	if p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
	}
	_ = p.stdin.Close()
	for range p.lines {
	}
	<-p.exited
}

// close ends the process: closing its stdin ends it (Claude Code exits 0),
// and one that does not end within waitDelay is killed.
func (p *lineProc) close() {
	_ = p.stdin.Close()
	done := make(chan struct{})
	go func() {
		for range p.lines {
		}
		<-p.exited
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(waitDelay):
		p.kill()
		<-done
	}
}

// ended reports whether the process exited.
func (p *lineProc) ended() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// errEnded says the process's output ended: it exited, or is exiting.
var errEnded = errors.New("the CLI's output ended")

// procSession is what both sessions share: the process, started on a
// session's first turn and again after it died.
type procSession struct {
	r    *runner
	proc *lineProc // nil before the first turn and after the process ended
}

// live is the running process, nil when there is none (one that exited
// is let go).
func (s *procSession) live() *lineProc {
	if s.proc != nil && s.proc.ended() {
		s.proc = nil
	}
	return s.proc
}

// next is the process's next line: errEnded when its output ended, the
// turn's stop when ctx ended first.
func (s *procSession) next(ctx context.Context) ([]byte, error) {
	select {
	case <-ctx.Done():
		return nil, s.r.stopped(ctx)
	case line, ok := <-s.proc.lines:
		if !ok {
			return nil, errEnded
		}
		return line, nil
	}
}

// failed ends a turn that failed with err and what it said so far (out):
// a process whose output ended is waited for and how it ended said
// (runner.turnError); after any other failure it is killed. Either way
// the next turn starts a new one.
func (s *procSession) failed(ctx context.Context, out Outcome, err error) (Outcome, error) {
	p := s.proc
	s.proc = nil
	switch {
	case p == nil:
	case errors.Is(err, errEnded):
		for range p.lines {
		}
		<-p.exited
		err = s.r.turnError(ctx, p.werr, out, &p.said, p.count, p.garbage)
	default:
		p.kill()
	}
	return out, err
}

func (s *procSession) close() {
	if s.proc != nil {
		s.proc.close()
		s.proc = nil
	}
}
