package natsstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"huddle/protocol"
	"huddle/store"
)

// Messages reads every message the inboxes hold now, in stream order, up
// to the stream's last inbox message when called, without taking any: an
// ordered consumer acknowledged by no one, so every member's durable
// consumer still gets what it has not committed. What a consumer committed
// is purged one to two PurgeIntervals later, and a taken answer at once
// (retention.go): those are not read. Msg.To is the inbox; Seq the stream
// sequence. A message that does not decode, or names another inbox than
// its subject, is skipped, as WatchInbox skips it. Dead letters are not
// inbox messages.
func (s *Store) Messages(ctx context.Context) ([]store.Delivery, error) {
	st, err := s.js.Stream(ctx, s.n.inboxStream)
	if err != nil {
		return nil, fmt.Errorf("messages: %w", scrub(err, s.t.secrets))
	}
	filter := s.n.inboxPrefix + ">"
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return nil, fmt.Errorf("messages: %w", scrub(err, s.t.secrets))
	}
	var want uint64
	for _, n := range info.State.Subjects {
		want += n
	}
	if want == 0 {
		return nil, nil
	}
	oc, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}})
	if err != nil {
		return nil, fmt.Errorf("messages: %w", scrub(err, s.t.secrets))
	}
	var out []store.Delivery
	for got := uint64(0); got < want; {
		batch, err := oc.Fetch(256, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return nil, fmt.Errorf("messages: %w", scrub(err, s.t.secrets))
		}
		n := 0
		last := false
		for msg := range batch.Messages() {
			got++
			n++
			meta, err := msg.Metadata()
			if err != nil {
				continue
			}
			if d, ok := s.inboxDelivery(msg.Subject(), msg.Data(), meta.Sequence.Stream); ok {
				out = append(out, d)
			}
			if meta.NumPending == 0 || got == want {
				// The end: a fetch waits for its whole batch, or its
				// wait, unless left here.
				last = true
				break
			}
		}
		if last {
			break
		}
		if n == 0 {
			// Nothing came: what was counted was purged meanwhile, or the
			// pull failed.
			if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
				return nil, fmt.Errorf("messages: %w", scrub(err, s.t.secrets))
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			break
		}
	}
	return out, nil
}

// inboxDelivery decodes one message of an inbox subject as WatchInbox does.
func (s *Store) inboxDelivery(subject string, data []byte, seq uint64) (store.Delivery, bool) {
	tok, ok := strings.CutPrefix(subject, s.n.inboxPrefix)
	if !ok {
		return store.Delivery{}, false
	}
	member := strings.ReplaceAll(tok, "=", ".")
	if protocol.ValidateName(member) != nil {
		return store.Delivery{}, false
	}
	m, err := protocol.Decode(data, protocol.Fallback{To: member, ID: "x" + strconv.FormatUint(seq, 10) + "-" + member})
	if err != nil || m.To != member {
		return store.Delivery{}, false
	}
	return store.Delivery{Msg: m, Seq: int64(seq)}, true
}
