package natsstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"huddle/ipc/trace"
	"huddle/store"
)

// AppendSpan publishes one span to the team's trace stream.
func (s *Store) AppendSpan(ctx context.Context, sp trace.Span) error {
	if err := sp.Validate(); err != nil {
		return err
	}
	b, err := json.Marshal(sp)
	if err != nil {
		return err
	}
	if _, err := s.js.Publish(ctx, s.n.traces, b, jetstream.WithExpectStream(s.n.traceStream)); err != nil {
		return fmt.Errorf("trace: %w", scrub(err, s.t.Secrets()))
	}
	return nil
}

// WatchSpans follows the trace stream with an ordered consumer (the client
// recreates it after a reconnect, from where it was). A message that is not
// a valid span is skipped.
func (s *Store) WatchSpans(ctx context.Context, fromStart bool, fn func(trace.Span)) (store.Subscription, error) {
	policy := jetstream.DeliverNewPolicy
	if fromStart {
		policy = jetstream.DeliverAllPolicy
	}
	oc, err := s.js.OrderedConsumer(ctx, s.n.traceStream, jetstream.OrderedConsumerConfig{DeliverPolicy: policy})
	if err != nil {
		return nil, fmt.Errorf("watch traces: %w", scrub(err, s.t.Secrets()))
	}
	cc, err := oc.Consume(func(msg jetstream.Msg) {
		var sp trace.Span
		if json.Unmarshal(msg.Data(), &sp) == nil && sp.Validate() == nil {
			fn(sp)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("watch traces: %w", scrub(err, s.t.Secrets()))
	}
	stop := func() {
		cc.Stop()
		<-cc.Closed()
	}
	return s.run(ctx, func(ctx context.Context) { <-ctx.Done() }, stop), nil
}

// Spans reads every span the trace stream holds now, oldest first, and how
// many messages were not valid spans: what a one-shot reader (huddle traces)
// needs, where a watch never says it has caught up. It reads up to the
// stream's last sequence as it was when called.
func (s *Store) Spans(ctx context.Context) ([]trace.Span, int64, error) {
	stream, err := s.js.Stream(ctx, s.n.traceStream)
	if err != nil {
		return nil, 0, fmt.Errorf("traces: %w", scrub(err, s.t.Secrets()))
	}
	info, err := stream.Info(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("traces: %w", scrub(err, s.t.Secrets()))
	}
	last := info.State.LastSeq
	if info.State.Msgs == 0 {
		return nil, 0, nil
	}
	oc, err := s.js.OrderedConsumer(ctx, s.n.traceStream, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		return nil, 0, fmt.Errorf("traces: %w", scrub(err, s.t.Secrets()))
	}
	it, err := oc.Messages()
	if err != nil {
		return nil, 0, fmt.Errorf("traces: %w", scrub(err, s.t.Secrets()))
	}
	defer it.Stop()
	var spans []trace.Span
	var skipped int64
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			return nil, 0, fmt.Errorf("traces: %w", scrub(err, s.t.Secrets()))
		}
		var sp trace.Span
		if json.Unmarshal(msg.Data(), &sp) == nil && sp.Validate() == nil {
			spans = append(spans, sp)
		} else {
			skipped++
		}
		md, err := msg.Metadata()
		if err != nil {
			return nil, 0, fmt.Errorf("traces: %w", err)
		}
		if md.Sequence.Stream >= last {
			return spans, skipped, nil
		}
	}
}
