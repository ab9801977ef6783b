package realcli

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"huddle/internal/procenv"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// markerVar is set in every process Start runs, with a value of its own,
// so Stop finds whatever of it survived the kill of its process group.
const markerVar = "HUDDLE_REALCLI_PROC"

// Proc is a CLI running as its own process group, read a line of stdout
// at a time. Stop kills the group; every Proc must be stopped.
type Proc struct {
	Name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	marker string
	exited chan struct{} // closed once stdout ended and the process was waited for
	err    error         // Wait's, once exited is closed

	mu      sync.Mutex
	lines   [][]byte
	stderr  bytes.Buffer
	changed chan struct{} // closed and replaced on every line and at exit
	cursor  int           // the next line Next looks at
	sent    [][]byte      // every line written to stdin
}

// Start runs bin with args in e.Work with e's environment, its stdin a
// pipe, as the leader of a new process group.
func Start(name, bin string, args []string, e Env) (*Proc, error) {
	var raw [8]byte
	_, _ = rand.Read(raw[:])
	p := &Proc{Name: name, marker: hex.EncodeToString(raw[:]), exited: make(chan struct{}), changed: make(chan struct{})}
	cmd := exec.Command(bin, args...)
	cmd.Dir = e.Work
	cmd.Env = append(append([]string(nil), e.Vars...), markerVar+"="+p.marker)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = lockedBuffer{&p.mu, &p.stderr}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("realcli: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("realcli: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("realcli: starting %s: %w", name, err)
	}
	p.cmd, p.stdin = cmd, stdin
	go p.read(stdout)
	return p, nil
}

type lockedBuffer struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (l lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// read keeps every line of stdout until it ends, then waits for the
// process.
func (p *Proc) read(stdout io.Reader) {
	br := bufio.NewReaderSize(stdout, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if line = bytes.TrimRight(line, "\r\n"); len(line) > 0 {
			p.mu.Lock()
			p.lines = append(p.lines, line)
			p.wake()
			p.mu.Unlock()
		}
		if err != nil {
			break
		}
	}
	werr := p.cmd.Wait()
	p.mu.Lock()
	p.err = werr
	close(p.exited)
	p.wake()
	p.mu.Unlock()
}

// wake tells the waiters something changed; p.mu is held.
func (p *Proc) wake() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// Send writes v to stdin as one JSON line.
func (p *Proc) Send(v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // a command's && stays readable in a fixture
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("realcli: encoding a line for %s: %w", p.Name, err)
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	p.mu.Lock()
	p.sent = append(p.sent, b)
	p.mu.Unlock()
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("realcli: writing to %s: %w", p.Name, err)
	}
	return nil
}

// CloseStdin ends stdin: the CLI's input is over.
func (p *Proc) CloseStdin() error { return p.stdin.Close() }

// Lines returns every line of stdout so far.
func (p *Proc) Lines() [][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([][]byte(nil), p.lines...)
}

// Sent returns every line written to stdin.
func (p *Proc) Sent() [][]byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([][]byte(nil), p.sent...)
}

// Stderr returns what the CLI wrote on stderr so far.
func (p *Proc) Stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// Len is how many lines stdout has printed so far.
func (p *Proc) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.lines)
}

// Next returns the first line after the last one Next returned for which
// match holds, waiting for it until ctx ends or stdout ends. what names
// the line in the error.
func (p *Proc) Next(ctx context.Context, what string, match func(line []byte) bool) ([]byte, error) {
	p.mu.Lock()
	from := p.cursor
	p.mu.Unlock()
	line, i, err := p.Await(ctx, what, from, match)
	if err == nil {
		p.mu.Lock()
		p.cursor = i + 1
		p.mu.Unlock()
	}
	return line, err
}

// Await returns the first line from the from'th on (counting from 0) for
// which match holds, and its index, waiting for it until ctx ends or
// stdout ends. It leaves Next's place alone.
func (p *Proc) Await(ctx context.Context, what string, from int, match func(line []byte) bool) ([]byte, int, error) {
	for i := from; ; {
		p.mu.Lock()
		for ; i < len(p.lines); i++ {
			if line := p.lines[i]; match(line) {
				p.mu.Unlock()
				return line, i, nil
			}
		}
		changed, exited := p.changed, isClosed(p.exited)
		p.mu.Unlock()
		if exited {
			return nil, 0, fmt.Errorf("realcli: %s exited (%v) before printing %s; stderr: %s", p.Name, p.err, what, lastLines(p.Stderr(), 20))
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, 0, fmt.Errorf("realcli: waiting for %s to print %s: %w; stderr: %s", p.Name, what, context.Cause(ctx), lastLines(p.Stderr(), 20))
		}
	}
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// Wait waits until the CLI exits by itself or ctx ends, and returns how
// it exited.
func (p *Proc) Wait(ctx context.Context) error {
	select {
	case <-p.exited:
		return p.err
	case <-ctx.Done():
		return fmt.Errorf("realcli: waiting for %s to exit: %w", p.Name, context.Cause(ctx))
	}
}

// stopWithin bounds how long Stop waits for what it killed to be gone.
const stopWithin = 10 * time.Second

// Stop kills the process group, then whatever else carries this Proc's
// marker (Codex starts its shells in sessions of their own), and waits
// until every one of them is dead. It returns an error naming any process
// still alive after stopWithin. Stopping twice is harmless.
func (p *Proc) Stop() error {
	_ = p.stdin.Close()
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	deadline := time.Now().Add(stopWithin)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	// A killed process loses its environment before it is dead, so one
	// seen once is followed by its pid (and start time, against reuse).
	seen := map[int]string{}
	for {
		for _, pid := range p.survivors() {
			if _, ok := seen[pid]; !ok {
				seen[pid] = startTime(pid)
			}
		}
		for pid, start := range seen {
			if st := startTime(pid); st == "" || st != start {
				delete(seen, pid)
				continue
			}
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		exited := isClosed(p.exited)
		if len(seen) == 0 && exited {
			return nil
		}
		if time.Now().After(deadline) {
			var names []string
			for pid := range seen {
				names = append(names, describe(pid))
			}
			return fmt.Errorf("realcli: %s still running %v after SIGKILL (exited: %v): %s", p.Name, stopWithin, exited, strings.Join(names, "; "))
		}
		// Processes that are not this one's children cannot be waited
		// for: poll /proc until they are gone.
		wait := p.exited
		if exited {
			wait = nil
		}
		select {
		case <-wait:
		case <-tick.C:
		}
	}
}

// survivors are the live processes that carry p's marker in their
// environment.
func (p *Proc) survivors() []int { return procenv.With(markerVar + "=" + p.marker) }

// startTime is a live process's start time (field 22 of its stat), or
// "" once it is gone or a zombie.
func startTime(pid int) string {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// The fields after the command name (in parentheses) start with the
	// state, field 3.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return ""
	}
	return f[19]
}

func describe(pid int) string {
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return fmt.Sprintf("%d %s", pid, strings.TrimSpace(string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))))
}
