package natsstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"huddle/protocol"
	"huddle/store"
)

// The members' logs and transcripts are the stream huddle_<team>_logs,
// one subject per member and kind, huddle.<team>.logs.<member>.<kind>.
// A message holds whole lines, up to maxLogBatch bytes of them. The stream
// is bounded (Options.LogMaxBytes, LogMaxAge, LogMaxPerMember), the oldest
// messages going first: a member that writes a lot cannot grow the server
// without bound.

// maxLogBatch is how many bytes of lines one message holds at the most:
// MaxLogLine, so a line of that length has one to itself.
const maxLogBatch = store.MaxLogLine

func (n names) log(member string, kind store.LogKind) string {
	return n.logPrefix + token(member) + "." + string(kind)
}

// AppendLog publishes lines with the connection's plain publish, which
// returns at once: no acknowledgement is awaited, and while the server is
// away the lines wait in the connection's reconnect buffer until it is
// full, then are refused (the error). The stream stores them as they come.
func (s *Store) AppendLog(ctx context.Context, member string, kind store.LogKind, lines [][]byte) error {
	if err := checkLog(member, kind); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	subject := s.n.log(member, kind)
	var batch []byte
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := s.nc.Publish(subject, batch)
		batch = nil
		if err != nil {
			return fmt.Errorf("log of %s: %w", member, scrub(err, s.t.Secrets()))
		}
		return nil
	}
	for _, l := range lines {
		l = store.CutLogLine(l)
		if len(batch)+len(l) > maxLogBatch {
			if err := flush(); err != nil {
				return err
			}
		}
		batch = append(batch, l...)
	}
	return flush()
}

// ReadLog reads the member's subject with an ordered consumer, up to its
// last message as it was when called, and on with follow.
func (s *Store) ReadLog(ctx context.Context, member string, kind store.LogKind, follow bool, fn func(line []byte)) error {
	if err := checkLog(member, kind); err != nil {
		return err
	}
	subject := s.n.log(member, kind)
	var last uint64
	m, err := s.logs.GetLastMsgForSubject(ctx, subject)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		if !follow {
			return fmt.Errorf("log of %s: %w", member, store.ErrNotFound)
		}
	case err != nil:
		return fmt.Errorf("log of %s: %w", member, scrub(err, s.t.Secrets()))
	default:
		last = m.Sequence
	}
	oc, err := s.js.OrderedConsumer(ctx, s.n.logStream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}, DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		return fmt.Errorf("log of %s: %w", member, scrub(err, s.t.Secrets()))
	}
	it, err := oc.Messages()
	if err != nil {
		return fmt.Errorf("log of %s: %w", member, scrub(err, s.t.Secrets()))
	}
	defer it.Stop()
	if last == 0 && !follow {
		return nil
	}
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			if follow && ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("log of %s: %w", member, scrub(err, s.t.Secrets()))
		}
		for data := msg.Data(); len(data) > 0; {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				i = len(data) - 1
			}
			fn(data[:i+1])
			data = data[i+1:]
		}
		if !follow {
			md, err := msg.Metadata()
			if err != nil {
				return fmt.Errorf("log of %s: %w", member, err)
			}
			if md.Sequence.Stream >= last {
				return nil
			}
		}
	}
}

func checkLog(member string, kind store.LogKind) error {
	if err := protocol.ValidateName(member); err != nil {
		return err
	}
	if !kind.Valid() {
		return fmt.Errorf("log of %s: no kind %q", member, kind)
	}
	return nil
}
