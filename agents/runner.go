package agents

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// maxEventLine bounds one line of a CLI's stream; a longer line (a huge
// tool output) is skipped and counted, never held in memory whole.
const maxEventLine = 8 << 20

// waitDelay is how long a CLI's output may stay open after it exited (a
// child it left holds it) before it is closed under them.
const waitDelay = 2 * time.Second

// garbageShown is how many lines that are not JSON events a turn logs.
const garbageShown = 3

// runner is what a driver runs: the CLI, its binary, the arguments after
// `--`, the working directory and the agent's log.
type runner struct {
	cli   *CLI
	bin   string
	extra []string
	cwd   string
	log   *lockedWriter
}

// lockedWriter is the agent's log (its stderr, which huddle appends to
// members/<name>.log): the loop and a CLI's stderr write to it at once.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) printf(format string, a ...any) {
	_, _ = fmt.Fprintf(l, format+"\n", a...) // nowhere else to say it
}

// driver runs the turns of a CLI's session: claudeSession, codexSession.
type driver interface {
	// run runs turn t until it ends or ctx ends (which kills the CLI) and
	// returns what it said. The error says why the turn failed: the CLI
	// could not start, exited non-zero, reported a failure, or ended
	// without the event that ends a turn.
	run(ctx context.Context, t Turn, h hooks) (Outcome, error)
	// close ends the CLI's process, if one outlives its turns.
	close()
}

// hooks are how a running turn reaches the agent's loop: each activity
// its stream shows, and each question the CLI asks (ask reports false
// when the turn ended before the loop took it).
type hooks struct {
	activity func(string)
	ask      func(*ask) bool
}

// ask is a question a CLI puts to its host during a turn: may it use a
// tool with this input. ExitPlanMode's is the plan put forward (Plan).
// The loop answers on Reply, which has room for the one answer.
type ask struct {
	Tool        string
	Input       json.RawMessage
	ToolUseID   string
	Suggestions json.RawMessage
	Plan        string
	Reply       chan answer
}

// answer is the host's answer to an ask: allowed (Input, when set,
// replaces the tool's input), or denied with Message for the model.
type answer struct {
	Allow   bool
	Input   json.RawMessage
	Message string
}

// stopped is the error of a turn ctx ended: the CLI was stopped.
func (r *runner) stopped(ctx context.Context) error {
	return fmt.Errorf("%s stopped: %w", r.cli.Name, context.Cause(ctx))
}

// put hands q to the agent's loop and waits for its answer; the error
// says the turn ended first.
func (h hooks) put(ctx context.Context, r *runner, q *ask) (answer, error) {
	q.Reply = make(chan answer, 1)
	if h.ask(q) {
		select {
		case a := <-q.Reply:
			return a, nil
		case <-ctx.Done():
		}
	}
	return answer{}, r.stopped(ctx)
}

// turnError says why a turn that ended failed, or nil: ctx ended (the
// CLI was killed), the CLI exited non-zero (with its stream's failure or
// the last words on its stderr), reported a failure, or ended without
// the event that ends a turn.
func (r *runner) turnError(ctx context.Context, werr error, out Outcome, said *lastLine, lines, garbage int) error {
	switch {
	case ctx.Err() != nil:
		return r.stopped(ctx)
	case werr != nil:
		why := fmt.Sprintf("%s exited: %v", r.cli.Name, werr)
		switch {
		case out.Failure != "":
			why += " (" + out.Failure + ")"
		case said.String() != "":
			// A CLI that fails before its stream starts says why only on
			// stderr: its words, which a roster line has room for, and
			// the status in the log.
			r.log.printf("%s: %v", r.cli.Name, werr)
			why = fmt.Sprintf("%s exited: %s", r.cli.Name, said.String())
		}
		return errors.New(why)
	case out.Failure != "":
		return fmt.Errorf("%s reported a failure: %s", r.cli.Name, out.Failure)
	case !out.Completed:
		return fmt.Errorf("%s ended without finishing the turn (%d lines, %d not JSON events)", r.cli.Name, lines, garbage)
	}
	return nil
}

// readEventLine reads one line without its newline; a line longer than
// maxEventLine is read to its end and dropped (tooLong).
func readEventLine(br *bufio.Reader) (line []byte, tooLong bool, err error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > maxEventLine {
				tooLong, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if len(buf) > 0 && buf[len(buf)-1] == '\n' {
			buf = buf[:len(buf)-1]
		}
		if len(buf) > 0 && buf[len(buf)-1] == '\r' {
			buf = buf[:len(buf)-1]
		}
		return buf, tooLong, err
	}
}

// lastLine keeps the last line written to it that holds more than
// spaces, cut to one roster line.
type lastLine struct {
	mu      sync.Mutex
	partial []byte // the line being written, up to maxActivity*3 bytes
	last    string
}

func (l *lastLine) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range p {
		if c == '\n' {
			if s := strings.TrimSpace(string(l.partial)); s != "" {
				l.last = s
			}
			l.partial = l.partial[:0]
		} else if len(l.partial) < maxActivity*3 {
			l.partial = append(l.partial, c)
		}
	}
	return len(p), nil
}

func (l *lastLine) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	last := l.last
	if s := strings.TrimSpace(string(l.partial)); s != "" {
		last = s // a last line without its newline
	}
	return oneLine(last, 2*maxActivity)
}
