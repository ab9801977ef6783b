package natsstore

// Retention of the inbox stream (docs/ARCHITECTURE.md, "The team directory and the store"): a member's committed
// messages are purged by its own consumer, an answer a caller took is
// deleted by the caller's watch, and answers no one waits for anymore are
// swept by the next watch of that inbox. Nothing a durable consumer has
// not committed is ever removed.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"huddle/protocol"
	"huddle/store"
)

// retain purges the member's subject, every PurgeInterval, of what its
// consumer committed: everything up to the ack floor read one cycle
// before (all at or below an ack floor is acknowledged; with one message
// out at a time, the message in hand is above it). Lagging a cycle keeps
// a committed message in the stream at least one interval, for a watch
// of the inbox (huddle call --caller MEMBER) that reads behind the
// consumer. The floor is the server's, so a consumer started again, after
// a crash or a server restart, purges what an earlier one committed.
func (c *consumer) retain(ctx context.Context) {
	t := time.NewTicker(c.s.opts.PurgeInterval)
	defer t.Stop()
	var floor, purged uint64
	read := false
	var commitsRead uint64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if floor > purged && c.s.purgeBelow(ctx, c.s.n.inbox(c.member), floor+1) == nil {
			purged = floor
		}
		// Nothing committed since the floor was read: it has not moved.
		if n := c.commits.Load(); !read || n != commitsRead {
			info, err := c.cons.Info(ctx)
			if err != nil {
				continue
			}
			floor, commitsRead, read = info.AckFloor.Stream, n, true
		}
	}
}

// purgeBelow removes every message of subject whose sequence is below seq.
// A sequence of 0 would purge the whole subject: never sent.
func (s *Store) purgeBelow(ctx context.Context, subject string, seq uint64) error {
	if seq <= 1 {
		return nil
	}
	return s.inbox.Purge(ctx, jetstream.WithPurgeSubject(subject), jetstream.WithPurgeSequence(seq))
}

// WatchAnswers is WatchInbox for a caller that waits for the answers to
// its calls in caller's inbox: take returns true for the message it took
// (ipc.Router.Take), and that message is then deleted from the stream,
// unless a member's durable consumer reads that inbox (huddle call
// --caller MEMBER): that consumer commits it and purges it itself. While
// the watch runs it also sweeps the inbox, at its start and every
// PurgeInterval, of invocation results older than AnswerMaxAge (sweep).
func (s *Store) WatchAnswers(ctx context.Context, caller string, take func(store.Delivery) bool) (store.Subscription, error) {
	return s.watch(ctx, caller, take, func(ctx context.Context) {
		var from uint64
		t := time.NewTicker(s.opts.PurgeInterval)
		defer t.Stop()
		for {
			from = s.sweep(ctx, caller, from)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	})
}

// removeTaken deletes the message at seq of member's subject, which a
// watch took, when no durable consumer reads that subject. It runs on a
// context of its own: the watch's may have ended.
func (s *Store) removeTaken(member string, seq uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if s.consumed(ctx, member) {
		return
	}
	_ = s.inbox.DeleteMsg(ctx, seq) // left: the sweep removes it later
}

// consumed says whether a durable consumer reads member's subject; when
// that cannot be told, it is taken to.
func (s *Store) consumed(ctx context.Context, member string) bool {
	_, err := s.js.Consumer(ctx, s.n.inboxStream, durable(member))
	return !errors.Is(err, jetstream.ErrConsumerNotFound)
}

// sweep deletes the invocation results of member's subject stored before
// now - AnswerMaxAge, reading from sequence from on, and returns where the
// next sweep starts. Only results go: each answers a call whose caller
// waited at most its timeout, far less than AnswerMaxAge, so no one will
// take it, and a member that has never run (no durable consumer yet)
// drops a result to a call it did not make; any other message is left. A
// subject a durable consumer reads is left to that consumer (retain).
func (s *Store) sweep(ctx context.Context, member string, from uint64) uint64 {
	subject := s.n.inbox(member)
	if s.consumed(ctx, member) {
		return from
	}
	if n, err := s.Held(ctx, member); err != nil || n == 0 {
		return from
	}
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}, DeliverPolicy: jetstream.DeliverAllPolicy}
	if from > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, from
	}
	oc, err := s.inbox.OrderedConsumer(ctx, cfg)
	if err != nil {
		return from
	}
	cutoff := time.Now().Add(-s.opts.AnswerMaxAge)
	for {
		batch, err := oc.Fetch(256, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return from
		}
		n := 0
		for msg := range batch.Messages() {
			n++
			meta, err := msg.Metadata()
			if err != nil || !meta.Timestamp.Before(cutoff) {
				return from
			}
			m, err := protocol.Decode(msg.Data(), protocol.Fallback{To: member})
			if err == nil && m.Type == protocol.TypeInvocationResult {
				if s.inbox.DeleteMsg(ctx, meta.Sequence.Stream) != nil {
					return from
				}
			}
			from = meta.Sequence.Stream + 1
			if meta.NumPending == 0 {
				return from
			}
		}
		if n == 0 || batch.Error() != nil {
			return from
		}
	}
}

// Held is how many messages member's inbox subject holds in the stream
// now, by the server's state: what retention has not removed yet,
// committed or not.
func (s *Store) Held(ctx context.Context, member string) (uint64, error) {
	if err := protocol.ValidateName(member); err != nil {
		return 0, err
	}
	subject := s.n.inbox(member)
	info, err := s.inbox.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		return 0, scrub(err, s.t.Secrets())
	}
	return info.State.Subjects[subject], nil
}

// Unread counts the messages of member's inbox its durable consumer has
// not committed: the consumer's NumPending (not handed out yet) and
// NumAckPending (handed out, not acknowledged). A member whose consumer
// never started has committed nothing: every message its subject holds.
func (s *Store) Unread(ctx context.Context, member string) (int, error) {
	if err := protocol.ValidateName(member); err != nil {
		return 0, err
	}
	cons, err := s.js.Consumer(ctx, s.n.inboxStream, durable(member))
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		n, err := s.Held(ctx, member)
		if err != nil {
			return 0, fmt.Errorf("unread of %s: %w", member, err)
		}
		return int(n), nil
	}
	if err != nil {
		return 0, fmt.Errorf("unread of %s: %w", member, scrub(err, s.t.Secrets()))
	}
	// Looking the consumer up read its state: one request in all.
	info := cons.CachedInfo()
	return int(info.NumPending) + info.NumAckPending, nil
}
