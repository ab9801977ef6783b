package inbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"huddle/protocol"
)

// Permissions of everything the team directory holds (DESIGN §3).
const (
	dirMode  = 0o700
	fileMode = 0o600
)

// ErrTooLarge is returned for a line over protocol.MaxLine.
var ErrTooLarge = errors.New("line exceeds 1 MiB")

// Dir is the directory of all inboxes under a team directory.
func Dir(teamDir string) string { return filepath.Join(teamDir, "inbox") }

// Path is the mailbox file of member under a team directory. It validates the
// name first, so an invalid name never becomes a path.
func Path(teamDir, member string) (string, error) {
	if err := protocol.ValidateName(member); err != nil {
		return "", fmt.Errorf("inbox: %w", err)
	}
	return filepath.Join(Dir(teamDir), member+".jsonl"), nil
}

// Append writes msg as one line to member's inbox under teamDir.
//
// The name is validated before any path is built; an empty msg.To is set to
// member and any other mismatch is refused; the message is validated and
// encoded; a line over 1 MiB is refused. The line is written with a single
// write(2) under an exclusive flock, so writers in any number of processes
// never interleave.
func Append(teamDir, member string, msg *protocol.Message) error {
	path, err := Path(teamDir, member)
	if err != nil {
		return err
	}
	if msg.To == "" {
		msg.To = member
	}
	if msg.To != member {
		return fmt.Errorf("inbox: message to %q cannot go to the inbox of %q", msg.To, member)
	}
	b, err := protocol.Encode(msg)
	if err != nil {
		return fmt.Errorf("inbox: %w", err)
	}
	if len(b)+1 > protocol.MaxLine {
		return fmt.Errorf("inbox %s: %w (%d bytes)", member, ErrTooLarge, len(b)+1)
	}
	err = appendLine(path, append(b, '\n'))
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(Dir(teamDir), dirMode); err != nil {
			return fmt.Errorf("inbox: %w", err)
		}
		err = appendLine(path, append(b, '\n'))
	}
	return err
}

// AppendLine appends line, which must end with a newline, to the file at
// path the way every append in a team directory is made (DESIGN §3): under an
// exclusive flock, with one write. Other append-only logs (traces.jsonl) use
// it.
func AppendLine(path string, line []byte) error {
	if len(line) == 0 || line[len(line)-1] != '\n' {
		return fmt.Errorf("append %s: line does not end with a newline", filepath.Base(path))
	}
	return appendLine(path, line)
}

// appendLine appends one complete line to path under an exclusive flock with
// one write. It uses the raw descriptor: open, flock, write and close are the
// only system calls, and closing releases the lock.
func appendLine(path string, line []byte) error {
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
		if n < len(line) {
			// Only a full disk or a signal makes a regular-file write short;
			// the rest still goes in under the same lock.
			line = line[n:]
			continue
		}
		return nil
	}
	return nil
}

func openAppend(path string) (int, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_APPEND|syscall.O_CREAT|syscall.O_CLOEXEC, fileMode)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

func flockFD(fd, how int) error {
	for {
		err := syscall.Flock(fd, how)
		if err != syscall.EINTR {
			return err
		}
	}
}

func flock(f *os.File, how int) error { return flockFD(int(f.Fd()), how) }
