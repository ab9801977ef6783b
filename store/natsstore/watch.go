package natsstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"huddle/store"
)

// Watch follows the bucket's stream from its end with an ordered consumer
// filtered to the keys of kinds (requests: req. and dec.; members:
// member.; restarts: restart.), headers only (the watch says which key
// changed, not what it holds). The client recreates an ordered consumer
// after a reconnect from where it was, as WatchSpans's, so a change made
// while the connection was down is told once it is back
// (TestWatchSurvivesAServerRestart).
func (s *Store) Watch(ctx context.Context, fn func(store.Change), kinds ...store.ChangeKind) (store.Subscription, error) {
	prefix := "$KV." + s.n.bucket + "."
	var filter []string
	for _, k := range changeKeys {
		if store.Watched(kinds, k.kind) {
			filter = append(filter, prefix+k.prefix+">")
		}
	}
	oc, err := s.js.OrderedConsumer(ctx, "KV_"+s.n.bucket, jetstream.OrderedConsumerConfig{
		FilterSubjects: filter,
		DeliverPolicy:  jetstream.DeliverNewPolicy,
		HeadersOnly:    true,
	})
	if err != nil {
		return nil, fmt.Errorf("watch: %w", scrub(err, s.t.Secrets()))
	}
	cc, err := oc.Consume(func(msg jetstream.Msg) {
		if c, ok := changeOf(strings.TrimPrefix(msg.Subject(), prefix)); ok {
			fn(c)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("watch: %w", scrub(err, s.t.Secrets()))
	}
	stop := func() {
		cc.Stop()
		<-cc.Closed()
	}
	return s.run(ctx, func(ctx context.Context) { <-ctx.Done() }, stop), nil
}

// changeKeys are the bucket's keys a Watch tells of, by kind.
var changeKeys = []struct {
	prefix string
	kind   store.ChangeKind
}{{keyRequest, store.ChangeRequest}, {keyDecision, store.ChangeRequest}, {keyMember, store.ChangeMember}, {keyRestart, store.ChangeRestart}}

// changeOf is the change a key of the bucket stands for.
func changeOf(key string) (store.Change, bool) {
	for _, k := range changeKeys {
		if tok, ok := strings.CutPrefix(key, k.prefix); ok && tok != "" {
			return store.Change{Kind: k.kind, Name: strings.ReplaceAll(tok, "=", ".")}, true
		}
	}
	return store.Change{}, false
}
