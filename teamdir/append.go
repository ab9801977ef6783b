package teamdir

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// AppendLine appends line (or several whole lines), which must end with a newline, to the file at
// path the way every append in a team directory is made (docs/ARCHITECTURE.md, "The team directory and the store"): under an
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
// an append costs flock, write, fstat and unlock instead of an open and a
// close as well. It is for a writer that appends to the same file many
// times. Its methods may be called from several goroutines: a mutex orders
// them, since every goroutine shares the descriptor and so the flock (which
// excludes other open files, other processes, not the holder's own).
//
// The kept descriptor stays right while the file is appended to, truncated
// in place (an inbox's compaction, a foreign reader draining it) or locked
// by others. A file unlinked or renamed over has no link left: fstat's
// st_nlink, checked under the lock just after each write, is 0. The
// Appender then opens the path again and writes the lines again there, so
// no line stays only in a file nobody can open. (The check follows the
// write so that a reader's wake-up, which the write causes, does not wait
// for it; a reader that still had the old file open may so see the lines
// twice, with the same ids, which an inbox's consumer handles once.) A file
// renamed away to another name keeps its link and keeps the lines; nothing
// in a team directory renames an appended file away (docs/ARCHITECTURE.md, "Every file and its writer").
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
	// At most a few times, should the file keep being replaced.
	for range 8 {
		linked, err := a.appendLocked(lines)
		if err != nil || linked {
			return err
		}
		if err := a.reopen(); err != nil {
			return err
		}
	}
	return fmt.Errorf("append %s: the file keeps being replaced", filepath.Base(a.path))
}

// appendLocked writes lines under the flock and reports whether the file
// still had its name once they were in.
func (a *Appender) appendLocked(lines []byte) (linked bool, err error) {
	if err := flockFD(a.fd, syscall.LOCK_EX); err != nil {
		return false, fmt.Errorf("append %s: lock: %w", filepath.Base(a.path), err)
	}
	err = writeAll(a.fd, a.path, lines)
	if err == nil {
		var st syscall.Stat_t
		if serr := syscall.Fstat(a.fd, &st); serr != nil {
			err = fmt.Errorf("append %s: %w", filepath.Base(a.path), serr)
		}
		linked = st.Nlink > 0
	}
	if uerr := flockFD(a.fd, syscall.LOCK_UN); err == nil && uerr != nil {
		err = fmt.Errorf("append %s: unlock: %w", filepath.Base(a.path), uerr)
	}
	return linked, err
}

// reopen closes the descriptor of a file that lost its name and opens the
// path again.
func (a *Appender) reopen() error {
	syscall.Close(a.fd)
	a.fd = -1
	fd, err := openAppend(a.path)
	if err != nil {
		return fmt.Errorf("append: %w", &fs.PathError{Op: "open", Path: a.path, Err: err})
	}
	a.fd = fd
	return nil
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

// writeAll writes b whole to fd, which the caller holds the exclusive
// flock of, or leaves the file as it was: only a full disk, a quota or an
// I/O error makes a regular-file write short or fail, and a line cut there
// would stay, the next append glued onto it, an acknowledged message read
// back as invalid JSON. So on a failure part-way the file is cut back by
// what went in (every writer appends under the same flock, so nothing of
// another's follows).
func writeAll(fd int, path string, b []byte) error { return WriteWhole(fd, path, b) }

// WriteWhole appends b to fd, the open file at path that only the caller
// appends to (or only under its flock), as writeAll says: whole, or the
// file cut back to where it was. Where it was is learnt only when a write
// stops short: no other write went in meanwhile, so it is the size then
// less what went in; the whole write, the usual case, costs no stat.
func WriteWhole(fd int, path string, b []byte) error {
	written := 0
	for len(b) > 0 {
		n, err := syscall.Write(fd, b)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			if written > 0 {
				if terr := cutBack(fd, written); terr != nil {
					return fmt.Errorf("append %s: %w (and cutting back the part written: %v)", filepath.Base(path), err, terr)
				}
			}
			return fmt.Errorf("append %s: %w", filepath.Base(path), err)
		}
		written += n
		b = b[n:]
	}
	return nil
}

// cutBack truncates the file of fd by the written bytes its last writes
// appended.
func cutBack(fd, written int) error {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return err
	}
	return syscall.Ftruncate(fd, st.Size-int64(written))
}
