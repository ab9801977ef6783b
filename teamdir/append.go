package teamdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ErrTooLarge is returned for a line over protocol.MaxLine.
var ErrTooLarge = errors.New("line exceeds 1 MiB")

// AppendLine appends line, which must end with a newline, to the file at
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
	for len(line) > 0 {
		n, err := syscall.Write(fd, line)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("append %s: %w", filepath.Base(path), err)
		}
		// Only a full disk or a signal makes a regular-file write short;
		// the rest still goes in under the same lock.
		line = line[n:]
	}
	return nil
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
