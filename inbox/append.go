package inbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"huddle/protocol"
	"huddle/teamdir"
)

// ErrTooLarge is returned for a line over protocol.MaxLine.
var ErrTooLarge = teamdir.ErrTooLarge

// path is member's mailbox file under teamDir; the name is validated first,
// so an invalid name never becomes a path.
func path(teamDir, member string) (string, error) {
	p, err := teamdir.InboxPath(teamDir, member)
	if err != nil {
		return "", fmt.Errorf("inbox: %w", err)
	}
	return p, nil
}

// Append writes msg as one line to member's inbox under teamDir.
//
// The name is validated before any path is built; an empty msg.To is set to
// member and any other mismatch is refused; the message is validated and
// encoded; a line over 1 MiB is refused. The line is written with a single
// write(2) under an exclusive flock, so writers in any number of processes
// never interleave.
func Append(teamDir, member string, msg *protocol.Message) error {
	p, err := path(teamDir, member)
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
	err = teamdir.AppendLine(p, append(b, '\n'))
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(teamdir.InboxDirPath(teamDir), teamdir.DirMode); err != nil {
			return fmt.Errorf("inbox: %w", err)
		}
		err = teamdir.AppendLine(p, append(b, '\n'))
	}
	return err
}
