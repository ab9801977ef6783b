package natsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"huddle/protocol"
	"huddle/store"
)

// fetchWait is how long one pull waits for a message before the consumer
// asks again: an idle inbox costs one request this often.
const fetchWait = 30 * time.Second

// Append publishes each message to member's subject with its id as
// Nats-Msg-Id, so an id appended twice within the dedupe window is stored
// once. Every message is checked before the first is sent; a failure in the
// middle (the connection lost) can leave a prefix stored, and appending the
// same batch again stores only the rest.
func (s *Store) Append(ctx context.Context, member string, msgs ...*protocol.Message) error {
	if err := protocol.ValidateName(member); err != nil {
		return err
	}
	lines := make([][]byte, len(msgs))
	for i, m := range msgs {
		if m.To == "" {
			m.To = member
		}
		if m.To != member {
			return fmt.Errorf("append: message to %q does not belong in the inbox of %q", m.To, member)
		}
		if m.ID == "" {
			m.ID = protocol.NewMessageID()
		}
		b, err := protocol.Encode(m)
		if err != nil {
			return fmt.Errorf("append: %w", err)
		}
		if len(b) > protocol.MaxLine {
			return fmt.Errorf("append: %w", protocol.ErrTooLarge)
		}
		lines[i] = b
	}
	subject := s.n.inbox(member)
	for i, b := range lines {
		_, err := s.js.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: b},
			jetstream.WithMsgID(msgs[i].ID), jetstream.WithExpectStream(s.n.inboxStream))
		if err != nil {
			return fmt.Errorf("append to %s: %w", member, scrub(err, s.t.Secrets()))
		}
	}
	return nil
}

// Consume runs member's durable consumer: explicit acks, one message
// unacknowledged at a time (MaxAckPending 1, so the order holds across
// redeliveries), each pulled with one request.
func (s *Store) Consume(ctx context.Context, member string, h store.Handler) (store.Subscription, error) {
	if err := protocol.ValidateName(member); err != nil {
		return nil, err
	}
	if h == nil {
		return nil, errors.New("consume: no handler")
	}
	cons, err := s.js.CreateOrUpdateConsumer(ctx, s.n.inboxStream, jetstream.ConsumerConfig{
		Durable:       durable(member),
		Description:   "inbox of " + member,
		FilterSubject: s.n.inbox(member),
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       s.opts.AckWait,
		MaxDeliver:    s.opts.MaxDeliver,
		MaxAckPending: 1,
	})
	if err != nil {
		return nil, fmt.Errorf("consume %s: %w", member, scrub(err, s.t.Secrets()))
	}
	c := &consumer{s: s, member: member, cons: cons, h: h}
	return s.run(ctx, c.run, nil), nil
}

// handedWindow is how many of the ids it handed out last a consumer
// remembers, as the files consumer's dedupe set.
const handedWindow = 1024

// maxPause is the longest pause between two tries of a consumer whose
// pulls or acks fail: ReconnectWait doubles up to it.
const maxPause = 4 * time.Second

type consumer struct {
	s      *Store
	member string
	cons   jetstream.Consumer
	h      store.Handler
	// commits counts the commits the server confirmed, so that an idle
	// inbox costs its retention no request (retention.go).
	commits atomic.Uint64

	// The rest is the loop's alone.

	// handed are the ids of the last handedWindow messages handed to h
	// (order, a ring from next): one handed out again is a redelivery,
	// whatever the server remembers. A broker killed -9 forgets the acks
	// of its last tenth of a second or so (it writes a consumer's state
	// at most ten times a second) and hands those messages out again as
	// new; an ack lost with the connection leaves its message to come
	// again.
	handed map[string]struct{}
	order  []string
	next   int
	// unsure says the server may hold a message this consumer, or the one
	// before it, was handed and never acknowledged: reclaim gives it back
	// before the next pull.
	unsure bool
	// pause is the wait before the next try while pulls or acks fail (0
	// while they work); the failure was said once, its end will be.
	pause time.Duration
}

// run pulls and delivers until ctx ends, and meanwhile removes from the
// stream what was committed (retain).
func (c *consumer) run(ctx context.Context) {
	retained := make(chan struct{})
	go func() {
		defer close(retained)
		c.retain(ctx)
	}()
	c.loop(ctx)
	<-retained
}

// loop pulls one message at a time until ctx ends. It starts unsure: the
// consumer before it may have died holding a message. A pull that fails
// (the server away) is tried again after a pause that doubles while
// failures last.
func (c *consumer) loop(ctx context.Context) {
	c.unsure = true
	for ctx.Err() == nil {
		if c.unsure {
			if err := c.reclaim(ctx); err != nil {
				if ctx.Err() == nil {
					pause(ctx, c.failed("taking over what the inbox's last consumer held", err))
				}
				continue
			}
			c.unsure = false
			c.working()
		}
		fctx, cancel := context.WithTimeout(ctx, fetchWait)
		batch, err := c.cons.Fetch(1, jetstream.FetchContext(fctx))
		if err != nil {
			cancel()
			if ctx.Err() == nil {
				c.unsure = true
				pause(ctx, c.failed("pulling", err))
			}
			continue
		}
		for msg := range batch.Messages() {
			c.handle(ctx, msg)
		}
		cancel()
		if err := batch.Error(); err != nil && ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) {
			c.unsure = true
			pause(ctx, c.failed("pulling", err))
		}
	}
}

// failed says the first failure in a row and returns the wait before the
// next try: ReconnectWait, doubling up to maxPause while failures last.
func (c *consumer) failed(what string, err error) time.Duration {
	if c.pause == 0 {
		c.s.warnOf(c.member, fmt.Errorf("the inbox of %s: %s failed; tried again, backing off, until it works: %w", c.member, what, scrub(err, c.s.t.Secrets())))
		c.pause = c.s.opts.ReconnectWait
	} else {
		c.pause = min(2*c.pause, maxPause)
	}
	return c.pause
}

// working says that pulls and acks work again, once after failures.
func (c *consumer) working() {
	if c.pause != 0 {
		c.pause = 0
		c.s.warnOf(c.member, fmt.Errorf("the inbox of %s is consumed again", c.member))
	}
}

// reclaim gives back at once a message the server holds handed out and
// unacknowledged on member's consumer. One consumer runs a member at a
// time (its lease says which), so such a message is one the consumer
// before this one died holding (a kill -9), or one this one's ack was
// lost for: the server would hand it out again only after AckWait. With
// MaxAckPending 1 it is the last one handed out, and a nak on its ack
// subject ($JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer
// seq>.<timestamp>.<pending>; the server reads the two sequences) keeps
// its count of deliveries: it comes back at once, marked, and MaxDeliver
// still counts it.
func (c *consumer) reclaim(ctx context.Context) error {
	ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	info, err := c.cons.Info(ictx)
	if err != nil {
		return err
	}
	if info.NumAckPending == 0 {
		return nil
	}
	subject := fmt.Sprintf("$JS.ACK.%s.%s.1.%d.%d.0.0", c.s.n.inboxStream, durable(c.member), info.Delivered.Stream, info.Delivered.Consumer)
	// The server answers once it has taken the nak in: the next pull finds
	// the message.
	_, err = c.s.nc.RequestWithContext(ictx, subject, []byte("-NAK"))
	return err
}

// handle hands one message to the handler and commits it (a double ack,
// confirmed by the server) once the handler returned nil or the message
// was dead-lettered. A handler interrupted by the stop leaves it to the
// next consumer: a nak, so it comes back at once, marked. A message the
// server hands out again, or whose id this consumer handed to its handler
// lately (handed), is marked a redelivery.
func (c *consumer) handle(ctx context.Context, msg jetstream.Msg) {
	meta, err := msg.Metadata()
	if err != nil {
		_ = msg.Term() // not a JetStream message: nothing to deliver
		return
	}
	seq := int64(meta.Sequence.Stream)
	source := "inbox/" + c.member
	m, err := decodeInbox(c.member, msg.Data(), meta.Sequence.Stream)
	switch {
	case err != nil:
		c.reject(ctx, msg, source, seq, err.Error())
		return
	case m.To != c.member:
		c.reject(ctx, msg, source, seq, fmt.Sprintf("message to %q found in the inbox of %q", m.To, c.member))
		return
	case int(meta.NumDelivered) >= c.s.opts.MaxDeliver:
		c.reject(ctx, msg, source, seq, fmt.Sprintf("handed out %d times and never committed", meta.NumDelivered))
		return
	}
	d := store.Delivery{Msg: m, Seq: seq, Redelivery: meta.NumDelivered > 1 || c.handedBefore(m.ID)}
	var herr error
	for attempt := range store.Retries {
		if herr = c.h(ctx, d); herr == nil {
			break
		}
		if ctx.Err() != nil {
			c.nak(msg)
			return
		}
		if attempt < store.Retries-1 && !pause(ctx, store.RetryDelay(attempt)) {
			c.nak(msg)
			return
		}
	}
	if herr != nil {
		c.reject(ctx, msg, source, seq, "handler: "+herr.Error())
		return
	}
	c.ack("committing "+m.ID+" (it is handed out again, marked a redelivery)", msg)
}

// handedBefore reports whether id is among the ids handed out lately,
// and remembers it as the latest.
func (c *consumer) handedBefore(id string) bool {
	if _, ok := c.handed[id]; ok {
		return true
	}
	if c.handed == nil {
		c.handed = map[string]struct{}{}
	}
	if len(c.order) < handedWindow {
		c.order = append(c.order, id)
	} else {
		delete(c.handed, c.order[c.next])
		c.order[c.next] = id
		c.next = (c.next + 1) % handedWindow
	}
	c.handed[id] = struct{}{}
	return false
}

// nak gives a message back at once, on a context of its own: the
// consumer's has ended.
func (c *consumer) nak(msg jetstream.Msg) { _ = msg.Nak() }

// ack commits a message. When the server does not confirm it (the
// connection lost, the broker killed), the message is handed out again,
// marked (handed): at once if the server kept it as unacknowledged
// (reclaim, before the next pull), else as soon as the server hands it out
// again. The failure is said once, until a commit works; what says what
// was committed.
func (c *consumer) ack(what string, msg jetstream.Msg) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := msg.DoubleAck(ctx); err != nil {
		c.unsure = true
		c.failed(what, err) // the next reclaim waits, if it fails too
		return
	}
	c.commits.Add(1)
	c.working()
}

func (c *consumer) reject(ctx context.Context, msg jetstream.Msg, source string, seq int64, reason string) {
	dl := protocol.DeadLetterLine{Source: source, Offset: seq, Reason: reason, Raw: string(msg.Data())}
	if err := c.s.DeadLetter(ctx, dl); err != nil {
		c.nak(msg) // not recorded: not committed either
		return
	}
	c.ack(fmt.Sprintf("committing message %d once dead-lettered", seq), msg)
}

// DeadLetter publishes one record to the team's dead-letter subject, its
// raw input cut to 4 KiB, with a TTL of Options.DeadLetterMaxAge.
func (s *Store) DeadLetter(ctx context.Context, dl protocol.DeadLetterLine) error {
	if len(dl.Raw) > 4096 {
		dl.Raw = dl.Raw[:4096]
	}
	if dl.TS == "" {
		dl.TS = protocol.FormatTime(time.Now())
	}
	b, err := json.Marshal(dl)
	if err != nil {
		return err
	}
	opts := []jetstream.PublishOpt{jetstream.WithExpectStream(s.n.inboxStream)}
	if s.opts.DeadLetterMaxAge > 0 {
		opts = append(opts, jetstream.WithMsgTTL(s.opts.DeadLetterMaxAge))
	}
	if _, err := s.js.Publish(ctx, s.n.deadLetters, b, opts...); err != nil {
		return fmt.Errorf("dead letter: %w", scrub(err, s.t.Secrets()))
	}
	return nil
}

// DeadLetters reads the dead-letter subject from its start with an ordered
// consumer; an entry that is not a dead letter is counted in skipped.
func (s *Store) DeadLetters(ctx context.Context) ([]protocol.DeadLetterLine, int, error) {
	var out []protocol.DeadLetterLine
	skipped := 0
	err := s.readAll(ctx, s.n.inboxStream, s.n.deadLetters, func(msg jetstream.Msg) {
		var dl protocol.DeadLetterLine
		if json.Unmarshal(msg.Data(), &dl) != nil || dl.Source == "" {
			skipped++
			return
		}
		out = append(out, dl)
	})
	if err != nil {
		return nil, 0, fmt.Errorf("dead letters: %w", err)
	}
	return out, skipped, nil
}

// readAll hands fn every message of filter (a subject, or a wildcard) in
// stream, oldest first, up to the last one there when it started (or
// until a pull brings nothing: the rest was removed meanwhile).
func (s *Store) readAll(ctx context.Context, stream, filter string, fn func(jetstream.Msg)) error {
	st, err := s.js.Stream(ctx, stream)
	if err != nil {
		return scrub(err, s.t.Secrets())
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return scrub(err, s.t.Secrets())
	}
	var want uint64
	for _, n := range info.State.Subjects {
		want += n
	}
	if want == 0 {
		return nil
	}
	oc, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}})
	if err != nil {
		return scrub(err, s.t.Secrets())
	}
	for got := uint64(0); got < want; {
		batch, err := oc.Fetch(256, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return scrub(err, s.t.Secrets())
		}
		n := 0
		for msg := range batch.Messages() {
			fn(msg)
			got++
			n++
			if meta, err := msg.Metadata(); (err == nil && meta.NumPending == 0) || got == want {
				// The end: a fetch waits for its whole batch, or its
				// wait, unless left here.
				return nil
			}
		}
		if n == 0 {
			// Nothing came: what was counted is gone meanwhile (a dead
			// letter's TTL, a purge), or the pull failed.
			if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
				return scrub(err, s.t.Secrets())
			}
			return ctx.Err()
		}
	}
	return nil
}

// subscription is a goroutine of the store's, stopped by Stop or Close.
type subscription struct {
	s      *Store
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
	stop   func()
}

// run starts loop on a context of its own and tracks it; stop, when not
// nil, runs when it is stopped, before the loop is waited for.
func (s *Store) run(ctx context.Context, loop func(ctx context.Context), stop func()) *subscription {
	ctx, cancel := context.WithCancel(ctx)
	sub := &subscription{s: s, cancel: cancel, done: make(chan struct{}), stop: stop}
	s.track(sub, true)
	go func() {
		defer close(sub.done)
		loop(ctx)
	}()
	return sub
}

func (sub *subscription) Stop() error {
	sub.once.Do(func() {
		sub.cancel()
		if sub.stop != nil {
			sub.stop()
		}
		<-sub.done
		sub.s.track(sub, false)
	})
	return nil
}

// pause waits d or until ctx ends; false when ctx ended.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// WatchInbox follows member's inbox from its current end without taking
// anything from it: an ordered consumer, acknowledged by no one, so the
// member's durable consumer (whoever holds its lease) still gets every
// message. It is how a one-shot caller outside the runtime (huddle call
// --store) sees the answer to its own call, as an observer of the inbox
// file does on a team directory. A message that does not decode is
// skipped: it is the durable consumer's to dead-letter.
func (s *Store) WatchInbox(ctx context.Context, member string, fn func(store.Delivery)) (store.Subscription, error) {
	return s.watch(ctx, member, func(d store.Delivery) bool { fn(d); return false }, nil)
}

// watch is WatchInbox with a say in what happens next: a message take
// returns true for is removed (removeTaken) before the watch's Stop
// returns; loop, when not nil, runs beside the watch until it stops.
func (s *Store) watch(ctx context.Context, member string, take func(store.Delivery) bool, loop func(ctx context.Context)) (store.Subscription, error) {
	if err := protocol.ValidateName(member); err != nil {
		return nil, err
	}
	oc, err := s.js.OrderedConsumer(ctx, s.n.inboxStream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{s.n.inbox(member)},
		DeliverPolicy:  jetstream.DeliverNewPolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("watch inbox of %s: %w", member, scrub(err, s.t.Secrets()))
	}
	// handling is held while a message is handled, so that Stop returns
	// only after the last removal it started.
	var handling sync.Mutex
	stopped := false
	cc, err := oc.Consume(func(msg jetstream.Msg) {
		handling.Lock()
		defer handling.Unlock()
		meta, err := msg.Metadata()
		if err != nil || stopped {
			return
		}
		m, err := decodeInbox(member, msg.Data(), meta.Sequence.Stream)
		if err != nil || m.To != member {
			return
		}
		if take(store.Delivery{Msg: m, Seq: int64(meta.Sequence.Stream)}) {
			s.removeTaken(member, meta.Sequence.Stream)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("watch inbox of %s: %w", member, scrub(err, s.t.Secrets()))
	}
	stop := func() {
		cc.Stop()
		<-cc.Closed()
		handling.Lock()
		stopped = true
		handling.Unlock()
	}
	if loop == nil {
		loop = func(ctx context.Context) { <-ctx.Done() }
	}
	return s.run(ctx, loop, stop), nil
}

// WatchDeadLetters calls fn as it starts and after each dead letter
// published from then on: an ordered consumer of the dead-letter subject,
// new messages only.
func (s *Store) WatchDeadLetters(ctx context.Context, fn func()) (store.Subscription, error) {
	oc, err := s.js.OrderedConsumer(ctx, s.n.inboxStream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{s.n.deadLetters},
		DeliverPolicy:  jetstream.DeliverNewPolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("watch dead letters: %w", scrub(err, s.t.Secrets()))
	}
	cc, err := oc.Consume(func(jetstream.Msg) { fn() })
	if err != nil {
		return nil, fmt.Errorf("watch dead letters: %w", scrub(err, s.t.Secrets()))
	}
	fn()
	stop := func() {
		cc.Stop()
		<-cc.Closed()
	}
	return s.run(ctx, func(ctx context.Context) { <-ctx.Done() }, stop), nil
}
