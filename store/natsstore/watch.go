package natsstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"huddle/store"
)

// Watch follows the bucket's stream from its end with an ordered consumer
// filtered to the request, decision and member keys, headers only (the
// watch says which key changed, not what it holds). The client recreates
// an ordered consumer after a reconnect from where it was, as WatchSpans's,
// so a change made while the connection was down is told once it is back
// (TestWatchSurvivesAServerRestart).
func (s *Store) Watch(ctx context.Context, fn func(store.Change)) (store.Subscription, error) {
	prefix := "$KV." + s.n.bucket + "."
	oc, err := s.js.OrderedConsumer(ctx, "KV_"+s.n.bucket, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{prefix + keyRequest + ">", prefix + keyDecision + ">", prefix + keyMember + ">"},
		DeliverPolicy:  jetstream.DeliverNewPolicy,
		HeadersOnly:    true,
	})
	if err != nil {
		return nil, fmt.Errorf("watch: %w", scrub(err, s.t.secrets))
	}
	cc, err := oc.Consume(func(msg jetstream.Msg) {
		if c, ok := changeOf(strings.TrimPrefix(msg.Subject(), prefix)); ok {
			fn(c)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("watch: %w", scrub(err, s.t.secrets))
	}
	stop := func() {
		cc.Stop()
		<-cc.Closed()
	}
	return s.run(ctx, func(ctx context.Context) { <-ctx.Done() }, stop), nil
}

// changeOf is the change a key of the bucket stands for.
func changeOf(key string) (store.Change, bool) {
	for _, k := range []struct {
		prefix string
		kind   store.ChangeKind
	}{{keyRequest, store.ChangeRequest}, {keyDecision, store.ChangeRequest}, {keyMember, store.ChangeMember}} {
		if tok, ok := strings.CutPrefix(key, k.prefix); ok && tok != "" {
			return store.Change{Kind: k.kind, Name: strings.ReplaceAll(tok, "=", ".")}, true
		}
	}
	return store.Change{}, false
}
