package inbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"

	"huddle/protocol"
	"huddle/teamdir"
)

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
	buf := lineBufs.Get().(*[]byte)
	defer putLineBuf(buf)
	b, err := encodeAll((*buf)[:0], member, msgs)
	*buf = b
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

// lineBufs hold the encoded lines of one append between its encoding and
// its write(2), which keeps nothing of them: a writer allocates nothing
// per message for them.
var lineBufs = sync.Pool{New: func() any { return new(make([]byte, 0, 1024)) }}

// putLineBuf returns a buffer to lineBufs; one grown past 64 KiB by a
// large message is let go, so the pool stays small.
func putLineBuf(buf *[]byte) {
	if cap(*buf) <= 64<<10 {
		lineBufs.Put(buf)
	}
}

// encodeAll appends msgs to out as lines of member's inbox, each ending
// with a newline, after the checks Append makes of each.
func encodeAll(out []byte, member string, msgs []*protocol.Message) ([]byte, error) {
	for _, msg := range msgs {
		if msg.To == "" {
			msg.To = member
		}
		if msg.To != member {
			return out, fmt.Errorf("inbox: message to %q cannot go to the inbox of %q", msg.To, member)
		}
		start := len(out)
		var err error
		if out, err = protocol.AppendEncode(out, msg); err != nil {
			return out, fmt.Errorf("inbox: %w", err)
		}
		if n := len(out) - start + 1; n > protocol.MaxLine {
			return out, fmt.Errorf("inbox %s: %w (%d bytes)", member, protocol.ErrTooLarge, n)
		}
		out = append(out, '\n')
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
	buf := lineBufs.Get().(*[]byte)
	defer putLineBuf(buf)
	b, err := encodeAll((*buf)[:0], a.member, msgs)
	*buf = b
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
