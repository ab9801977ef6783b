package cli

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// ptyRun is huddle running on a pseudo-terminal, as a person runs it: its
// stdout (and, unless given, stdin and stderr) is the terminal.
type ptyRun struct {
	cmd    *exec.Cmd
	master *os.File
	mu     sync.Mutex
	out    bytes.Buffer
	done   chan struct{} // closed when the process has exited and its output is read
	code   int
}

// startOnPTY starts huddle in cwd on a 120×36 terminal. stdin, when not
// nil, replaces the terminal as its standard input.
func startOnPTY(t testing.TB, cwd string, env []string, stdin *os.File, args ...string) *ptyRun {
	t.Helper()
	return startProgramOnPTY(t, huddleBinary(t), cwd, env, stdin, args...)
}

// startProgramOnPTY is startOnPTY for the program bin.
func startProgramOnPTY(t testing.TB, bin, cwd string, env []string, stdin *os.File, args ...string) *ptyRun {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = cwd
	cmd.Env = append(append(os.Environ(), "HUDDLE_DIR=", "TERM=xterm-256color", "NO_COLOR=1"), env...)
	if stdin != nil {
		cmd.Stdin = stdin
	}
	// The terminal is the session's controlling terminal through stdout
	// (fd 1), which is the terminal even when stdin is not.
	attrs := &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 1}
	master, err := pty.StartWithAttrs(cmd, &pty.Winsize{Rows: 36, Cols: 120}, attrs)
	if err != nil {
		t.Fatalf("start on a pty: %v", err)
	}
	p := &ptyRun{cmd: cmd, master: master, done: make(chan struct{})}
	read := make(chan struct{})
	go func() { // owner: this run; ends when the terminal closes (EIO)
		defer close(read)
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			p.mu.Lock()
			p.out.Write(buf[:n])
			p.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() { // owner: this run
		err := cmd.Wait()
		var exitErr *exec.ExitError
		if err != nil && !errors.As(err, &exitErr) {
			p.code = -1
		} else {
			p.code = cmd.ProcessState.ExitCode()
		}
		<-read
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
		master.Close()
	})
	return p
}

// output is what the terminal has shown so far.
func (p *ptyRun) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// waitFor waits until the terminal shows s.
func (p *ptyRun) waitFor(t testing.TB, s string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(p.output(), s) {
		if time.Now().After(deadline) {
			// What it shows when the wait ends, not when it began.
			t.Fatalf("timed out after 20s waiting for the terminal to show %s (it shows %s)", s, p.outputTail())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (p *ptyRun) outputTail() string {
	o := p.output()
	if len(o) > 600 {
		o = o[len(o)-600:]
	}
	return strings.ToValidUTF8(o, "?")
}

// typeKeys writes s as if typed.
func (p *ptyRun) typeKeys(t testing.TB, s string) {
	t.Helper()
	if _, err := p.master.WriteString(s); err != nil {
		t.Fatalf("type %q: %v", s, err)
	}
}

// Exit waits for the process to end and returns its exit code.
func (p *ptyRun) exit(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(30 * time.Second):
		t.Fatalf("huddle did not exit; the terminal shows %s", p.outputTail())
		return -1
	}
}
