package filestore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync/atomic"

	"huddle/inbox"
	"huddle/protocol"
	"huddle/store"
	"huddle/teamdir"
)

// Append writes msgs to member's inbox with one write under the inbox's
// flock (inbox.AppendBatch).
func (s *Store) Append(ctx context.Context, member string, msgs ...*protocol.Message) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if err := protocol.ValidateName(member); err != nil {
		return err
	}
	if len(msgs) == 0 {
		return nil
	}
	return inbox.AppendBatch(s.dir, member, msgs)
}

// Consume starts member's consumer (inbox.Consumer), woken by a watch on
// inbox/. A stop while the handler was interrupted is left unrecorded in
// the cursor journal, as a crash would leave it, so the next consumer
// marks that message Redelivery; any other stop is recorded clean.
func (s *Store) Consume(ctx context.Context, member string, h store.Handler) (store.Subscription, error) {
	if err := protocol.ValidateName(member); err != nil {
		return nil, err
	}
	if h == nil {
		return nil, errors.New("consume: no handler")
	}
	d := &inboxDrainer{h: h}
	opts := s.opts.Inbox
	opts.Retries = store.Retries
	if fn := s.warn.Load(); fn != nil {
		opts.Warn = *fn
	}
	c, err := inbox.NewConsumer(s.dir, member, d.handle, opts)
	if err != nil {
		return nil, fmt.Errorf("consume %s: %w", member, err)
	}
	d.c = c
	dir := teamdir.InboxDirPath(s.dir)
	if err := os.MkdirAll(dir, teamdir.DirMode); err != nil {
		c.Close()
		return nil, fmt.Errorf("consume %s: %w", member, err)
	}
	sub, err := s.follow(ctx, dir, member+".jsonl", d, opts.Rescan)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("consume %s: %w", member, err)
	}
	return sub, nil
}

// inboxDrainer drives one member's inbox.Consumer for a subscription: one
// allocation for what a thousand idle consumers hold.
type inboxDrainer struct {
	c           *inbox.Consumer
	h           store.Handler
	interrupted atomic.Bool // a handler was interrupted by the stop
}

func (d *inboxDrainer) handle(ctx context.Context, del inbox.Delivery) error {
	err := d.h(ctx, store.Delivery{Msg: del.Msg, Seq: del.Offset, Redelivery: del.Redelivery})
	if err != nil && ctx.Err() != nil {
		d.interrupted.Store(true)
	}
	return err
}

func (d *inboxDrainer) drain(ctx context.Context, moved bool) error {
	if moved {
		return d.c.Drain(ctx)
	}
	return d.c.DrainWritten(ctx) // one pread, no stat of the name
}

func (d *inboxDrainer) finish() error {
	if d.interrupted.Load() {
		// A clean-stop record would say the interrupted message was never
		// handed out.
		return d.c.Abandon()
	}
	return d.c.Close()
}

// DeadLetter appends one line to deadletter.jsonl (inbox.WriteDeadLetter).
func (s *Store) DeadLetter(ctx context.Context, dl protocol.DeadLetterLine) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	return inbox.WriteDeadLetter(s.dir, dl.Source, dl.Offset, dl.Reason, []byte(dl.Raw))
}

// DeadLetters reads deadletter.jsonl; a line that is not a dead letter is
// counted in skipped, and a last line without its newline is being
// written: it is left for the next read.
func (s *Store) DeadLetters(ctx context.Context) ([]protocol.DeadLetterLine, int, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, 0, err
	}
	b, err := os.ReadFile(teamdir.DeadLetterPath(s.dir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("dead letters: %w", err)
	}
	var out []protocol.DeadLetterLine
	skipped := 0
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break // being written
		}
		line := bytes.TrimSpace(b[:i])
		b = b[i+1:]
		if len(line) == 0 {
			continue
		}
		var dl protocol.DeadLetterLine
		if json.Unmarshal(line, &dl) != nil || dl.Source == "" {
			skipped++
			continue
		}
		out = append(out, dl)
	}
	return out, skipped, nil
}

// WatchInbox follows member's inbox from its current end without taking
// anything from it (natsstore.Store.WatchInbox's twin): a read-only
// inbox.Observer, drained when the inbox file changes (one fsnotify watch
// on inbox/), so the member's consumer still gets every message. Seq is
// the logical offset. A line that does not decode is skipped: it is the
// consumer's to dead-letter. Each read takes all that was appended: a
// screen's store (Options.Pace) reads once a burst.
func (s *Store) WatchInbox(ctx context.Context, member string, fn func(store.Delivery)) (store.Subscription, error) {
	if err := protocol.ValidateName(member); err != nil {
		return nil, err
	}
	dir := teamdir.InboxDirPath(s.dir)
	if err := os.MkdirAll(dir, teamdir.DirMode); err != nil {
		return nil, fmt.Errorf("watch inbox of %s: %w", member, err)
	}
	obs, err := inbox.NewObserver(s.dir, member, false, func(d inbox.Delivery) {
		fn(store.Delivery{Msg: d.Msg, Seq: d.Offset})
	})
	if err != nil {
		return nil, fmt.Errorf("watch inbox of %s: %w", member, err)
	}
	sub, err := s.follow(ctx, dir, member+".jsonl", observing{obs}, s.opts.Inbox.Rescan)
	if err != nil {
		obs.Close()
		return nil, fmt.Errorf("watch inbox of %s: %w", member, err)
	}
	return sub, nil
}

// observing drains an inbox.Observer and closes it when its subscription
// ends (it keeps the cursor journal open).
type observing struct{ obs *inbox.Observer }

func (o observing) drain(context.Context, bool) error { return o.obs.Drain() }
func (o observing) finish() error                     { return o.obs.Close() }

// WatchAnswers is WatchInbox for a caller that waits in caller's inbox
// for the answers to its calls. A taken answer stays in the file, as
// every line does: the inbox is append-only, and compaction drops what
// its consumer read (docs/ARCHITECTURE.md, "The team directory and the
// store", retention).
func (s *Store) WatchAnswers(ctx context.Context, caller string, take func(store.Delivery) bool) (store.Subscription, error) {
	return s.WatchInbox(ctx, caller, func(d store.Delivery) { take(d) })
}
