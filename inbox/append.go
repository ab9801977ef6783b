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
// never interleave. Each call opens and closes the file: a writer that
// sends many messages to one inbox keeps an Appender instead.
func Append(teamDir, member string, msg *protocol.Message) error {
	return AppendBatch(teamDir, member, []*protocol.Message{msg})
}

// AppendBatch writes msgs to member's inbox as Append would, in order, all
// with one write(2) under one flock: a consumer or observer sees all of
// them or none. Nothing is written when any of them is refused.
func AppendBatch(teamDir, member string, msgs []*protocol.Message) error {
	p, err := path(teamDir, member)
	if err != nil {
		return err
	}
	b, err := encodeAll(member, msgs)
	if err != nil || len(b) == 0 {
		return err
	}
	err = teamdir.AppendLine(p, b)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(teamdir.InboxDirPath(teamDir), teamdir.DirMode); err != nil {
			return fmt.Errorf("inbox: %w", err)
		}
		err = teamdir.AppendLine(p, b)
	}
	return err
}

// encodeAll encodes msgs as lines of member's inbox, each ending with a
// newline, after the checks Append makes of each.
func encodeAll(member string, msgs []*protocol.Message) ([]byte, error) {
	var out []byte
	for _, msg := range msgs {
		if msg.To == "" {
			msg.To = member
		}
		if msg.To != member {
			return nil, fmt.Errorf("inbox: message to %q cannot go to the inbox of %q", msg.To, member)
		}
		b, err := protocol.Encode(msg)
		if err != nil {
			return nil, fmt.Errorf("inbox: %w", err)
		}
		if len(b)+1 > protocol.MaxLine {
			return nil, fmt.Errorf("inbox %s: %w (%d bytes)", member, ErrTooLarge, len(b)+1)
		}
		if len(msgs) == 1 {
			return append(b, '\n'), nil
		}
		out = append(append(out, b...), '\n')
	}
	return out, nil
}

// Appender appends to one member's inbox through a descriptor it keeps
// open (teamdir.Appender): each message is still one write(2) under the
// inbox's exclusive flock, so it mixes safely with Append, other processes
// and the consumer's compaction, which truncates the file in place under
// the same flock (an O_APPEND descriptor stays right across it). It is safe
// for concurrent use. Close it when done.
type Appender struct {
	member string
	a      *teamdir.Appender
}

// NewAppender opens member's inbox under teamDir for appends, creating the
// inbox directory and the file when missing.
func NewAppender(teamDir, member string) (*Appender, error) {
	p, err := path(teamDir, member)
	if err != nil {
		return nil, err
	}
	a, err := teamdir.OpenAppender(p)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(teamdir.InboxDirPath(teamDir), teamdir.DirMode); err != nil {
			return nil, fmt.Errorf("inbox: %w", err)
		}
		a, err = teamdir.OpenAppender(p)
	}
	if err != nil {
		return nil, fmt.Errorf("inbox: %w", err)
	}
	return &Appender{member: member, a: a}, nil
}

// Append writes msg as Append would.
func (a *Appender) Append(msg *protocol.Message) error {
	return a.AppendBatch([]*protocol.Message{msg})
}

// AppendBatch writes msgs as AppendBatch would: one write, one flock.
func (a *Appender) AppendBatch(msgs []*protocol.Message) error {
	b, err := encodeAll(a.member, msgs)
	if err != nil || len(b) == 0 {
		return err
	}
	if err := a.a.Append(b); err != nil {
		return fmt.Errorf("inbox: %w", err)
	}
	return nil
}

// Close closes the inbox file.
func (a *Appender) Close() error { return a.a.Close() }
