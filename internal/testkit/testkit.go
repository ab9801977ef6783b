// Package testkit holds what the tests of several packages need alike:
// waiting on a condition with a deadline, listing a directory tree, and
// telling that a process's stdin pipe is full. Only tests import it.
package testkit

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// WaitFor polls cond until it holds, failing the test after within: the
// tests wait on a condition, never on a duration.
func WaitFor(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Tree lists every file and directory under root with its size (-1 for a
// directory), so a test can show that an operation created or changed
// nothing.
func Tree(t testing.TB, root string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out[rel] = info.Size()
		if d.IsDir() {
			out[rel] = -1
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// StdinFull reports whether the stdin pipe of process pid holds as much as
// it can: a writer to it would block.
func StdinFull(pid int) bool {
	f, err := os.OpenFile(fmt.Sprintf("/proc/%d/fd/0", pid), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	raw, err := f.SyscallConn()
	if err != nil {
		return false
	}
	var queued int32
	var size uintptr
	var errno1, errno2 syscall.Errno
	_ = raw.Control(func(fd uintptr) {
		_, _, errno1 = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&queued)))
		const getPipeSize = 1032 // F_GETPIPE_SZ
		size, _, errno2 = syscall.Syscall(syscall.SYS_FCNTL, fd, getPipeSize, 0)
	})
	return errno1 == 0 && errno2 == 0 && size > 0 && int64(queued) >= int64(size)-4096
}

// Buffer is a buffer a process or a goroutine writes while the test reads
// it (a command's stderr, a program's output).
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
