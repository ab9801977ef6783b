package natsstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"

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
	var out []store.Delivery
	err := s.readAll(ctx, s.n.inboxStream, s.n.inboxPrefix+">", func(msg jetstream.Msg) {
		meta, err := msg.Metadata()
		if err != nil {
			return
		}
		if d, ok := s.inboxDelivery(msg.Subject(), msg.Data(), meta.Sequence.Stream); ok {
			out = append(out, d)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("messages: %w", err)
	}
	return out, nil
}

// inboxDelivery decodes one message of an inbox subject, as WatchInbox
// does, with its member from the subject.
func (s *Store) inboxDelivery(subject string, data []byte, seq uint64) (store.Delivery, bool) {
	tok, ok := strings.CutPrefix(subject, s.n.inboxPrefix)
	if !ok {
		return store.Delivery{}, false
	}
	member := strings.ReplaceAll(tok, "=", ".")
	if protocol.ValidateName(member) != nil {
		return store.Delivery{}, false
	}
	m, err := decodeInbox(member, data, seq)
	if err != nil || m.To != member {
		return store.Delivery{}, false
	}
	return store.Delivery{Msg: m, Seq: int64(seq)}, true
}

// decodeInbox decodes a message of member's inbox at stream sequence seq:
// one that came without an id is named by the inbox and the sequence, the
// same name wherever it is read (consumer, watch, Messages).
func decodeInbox(member string, data []byte, seq uint64) (protocol.Message, error) {
	return protocol.Decode(data, protocol.Fallback{To: member, ID: "x" + strconv.FormatUint(seq, 10) + "-" + member})
}
