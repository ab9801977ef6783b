package supervisor

import (
	"errors"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// exitReader is an agent's stdout, read until the agent exits and then
// only for what it left in the pipe: a child that keeps the pipe open
// (a shell's background job, a tool's server) neither hides the agent's
// death nor speaks as the agent after it.
type exitReader struct {
	f  *os.File
	mu sync.Mutex
	// exited is set when the agent has exited; left is then how many
	// bytes of what the pipe held at that moment are still to be read.
	exited bool
	left   int
}

// newExitReader reads the pipe's read end f (from os.Pipe: its reads
// take deadlines).
func newExitReader(f *os.File) *exitReader { return &exitReader{f: f} }

// agentExited says the agent has exited: what the pipe holds now is the
// last of its output. A read waiting for more is woken.
func (r *exitReader) agentExited() {
	n := 0
	if rc, err := r.f.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) {
			n, _ = unix.IoctlGetInt(int(fd), unix.TIOCINQ) // FIONREAD: the bytes a pipe holds
		})
	}
	r.mu.Lock()
	r.exited, r.left = true, n
	r.mu.Unlock()
	_ = r.f.SetReadDeadline(time.Now())
}

func (r *exitReader) Read(p []byte) (int, error) {
	for {
		r.mu.Lock()
		exited, left := r.exited, r.left
		r.mu.Unlock()
		if exited {
			if left <= 0 {
				return 0, io.EOF
			}
			p = p[:min(len(p), left)]
			_ = r.f.SetReadDeadline(time.Time{})
		}
		n, err := r.f.Read(p)
		r.mu.Lock()
		if r.exited {
			r.left -= n
		}
		r.mu.Unlock()
		if n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
			return n, err
		}
		// Woken by agentExited: read what it left, if anything.
	}
}

// Close closes the read end: a child still writing gets EPIPE.
func (r *exitReader) Close() error { return r.f.Close() }
