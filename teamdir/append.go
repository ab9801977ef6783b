package teamdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// ErrTooLarge is returned for a line over protocol.MaxLine.
var ErrTooLarge = errors.New("line exceeds 1 MiB")

// AppendLine appends line (or several whole lines), which must end with a newline, to the file at
// path the way every append in a team directory is made (docs/DESIGN.md §3): under an
// exclusive flock, with one write. It uses the raw descriptor: open, flock,
// write and close are the only system calls, and closing releases the lock.
// A missing directory is an fs.ErrNotExist error; the caller makes it.
func AppendLine(path string, line []byte) error {
	if len(line) == 0 || line[len(line)-1] != '\n' {
		return fmt.Errorf("append %s: line does not end with a newline", filepath.Base(path))
	}
	fd, err := openAppend(path)
	if err != nil {
		return fmt.Errorf("append: %w", &fs.PathError{Op: "open", Path: path, Err: err})
	}
	defer syscall.Close(fd)
	if err := flockFD(fd, syscall.LOCK_EX); err != nil {
		return fmt.Errorf("append %s: lock: %w", filepath.Base(path), err)
	}
	return writeAll(fd, path, line)
}

func openAppend(path string) (int, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_APPEND|syscall.O_CREAT|syscall.O_CLOEXEC, FileMode)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

// LockExclusive takes the exclusive flock of an append-only file, the one
// AppendLine takes: while it is held no line goes in (a compaction).
func LockExclusive(f *os.File) error { return flockFD(int(f.Fd()), syscall.LOCK_EX) }

// LockShared takes the shared flock of an append-only file: a reader that
// holds it sees a compaction wholly before or wholly after.
func LockShared(f *os.File) error { return flockFD(int(f.Fd()), syscall.LOCK_SH) }

// Unlock releases LockExclusive or LockShared.
func Unlock(f *os.File) error { return flockFD(int(f.Fd()), syscall.LOCK_UN) }

func flockFD(fd, how int) error {
	for {
		err := syscall.Flock(fd, how)
		if err != syscall.EINTR {
			return err
		}
	}
}

// Appender appends to one file the way AppendLine does — whole lines, one
// write(2) under an exclusive flock — through a descriptor it keeps open, so
// an append costs flock, fstat, write and unlock instead of an open and a
// close as well. It is for a writer that appends to the same file many
// times. Its methods may be called from several goroutines: a mutex orders
// them, since every goroutine shares the descriptor and so the flock (which
// excludes other open files, other processes, not the holder's own).
//
// The kept descriptor stays right while the file is appended to, truncated
// in place (an inbox's compaction, a foreign reader draining it) or locked
// by others. A file unlinked or renamed over since the last append has no
// link left (fstat's st_nlink is 0, checked under the lock before each
// write): the Appender opens the path again and writes there, so no line
// goes into a file nobody can read. A file renamed away to another name
// keeps its link and keeps the lines; nothing in a team directory renames
// an appended file away (docs/DESIGN.md §11).
type Appender struct {
	mu   sync.Mutex
	path string
	fd   int // -1 when closed or not opened yet
}

// OpenAppender opens (creating it 0600) the file at path for appends. A
// missing directory is an fs.ErrNotExist error; the caller makes it.
func OpenAppender(path string) (*Appender, error) {
	fd, err := openAppend(path)
	if err != nil {
		return nil, fmt.Errorf("append: %w", &fs.PathError{Op: "open", Path: path, Err: err})
	}
	return &Appender{path: path, fd: fd}, nil
}

// Append writes lines — one or more whole lines, the last ending with a
// newline — with one write under the file's exclusive flock, so readers
// and other writers see all of them or none.
func (a *Appender) Append(lines []byte) error {
	if len(lines) == 0 || lines[len(lines)-1] != '\n' {
		return fmt.Errorf("append %s: line does not end with a newline", filepath.Base(a.path))
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.fd < 0 {
		return fmt.Errorf("append %s: %w", filepath.Base(a.path), fs.ErrClosed)
	}
	if err := a.lockLinked(); err != nil {
		return err
	}
	err := writeAll(a.fd, a.path, lines)
	if uerr := flockFD(a.fd, syscall.LOCK_UN); err == nil && uerr != nil {
		err = fmt.Errorf("append %s: unlock: %w", filepath.Base(a.path), uerr)
	}
	return err
}

// lockLinked takes the flock of a file that still has its name: a file
// unlinked or replaced since the last append is closed and the path opened
// again (at most a few times, should it keep being replaced).
func (a *Appender) lockLinked() error {
	for range 8 {
		if err := flockFD(a.fd, syscall.LOCK_EX); err != nil {
			return fmt.Errorf("append %s: lock: %w", filepath.Base(a.path), err)
		}
		var st syscall.Stat_t
		if err := syscall.Fstat(a.fd, &st); err != nil {
			_ = flockFD(a.fd, syscall.LOCK_UN)
			return fmt.Errorf("append %s: %w", filepath.Base(a.path), err)
		}
		if st.Nlink > 0 {
			return nil
		}
		syscall.Close(a.fd) // releases the lock
		a.fd = -1
		fd, err := openAppend(a.path)
		if err != nil {
			return fmt.Errorf("append: %w", &fs.PathError{Op: "open", Path: a.path, Err: err})
		}
		a.fd = fd
	}
	return fmt.Errorf("append %s: the file keeps being replaced", filepath.Base(a.path))
}

// Close closes the descriptor; later appends fail.
func (a *Appender) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.fd < 0 {
		return nil
	}
	err := syscall.Close(a.fd)
	a.fd = -1
	return err
}

// writeAll writes b whole to fd: only a full disk or a signal makes a
// regular-file write short, and the rest still goes in under the same lock.
func writeAll(fd int, path string, b []byte) error {
	for len(b) > 0 {
		n, err := syscall.Write(fd, b)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("append %s: %w", filepath.Base(path), err)
		}
		b = b[n:]
	}
	return nil
}
