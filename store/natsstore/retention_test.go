package natsstore_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"huddle/internal/testkit"
	"huddle/protocol"
	"huddle/store"
	"huddle/store/natsstore"
	"huddle/store/storetest"
)

// retentionOptions make a purge cycle short, so that a test waits for
// its effect, not for a minute.
func retentionOptions() natsstore.Options {
	o := testOptions
	o.PurgeInterval = 10 * time.Millisecond
	return o
}

// openTeam opens n handles on a fresh team with opts.
func openTeam(t *testing.T, opts natsstore.Options, n int) []*natsstore.Store {
	t.Helper()
	url := server.URL(fmt.Sprintf("t%d", teams.Add(1)))
	var out []*natsstore.Store
	for range n {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		s, err := natsstore.Open(ctx, url, opts)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		out = append(out, s)
	}
	return out
}

// stored is how many messages member's subject holds in the inbox stream,
// read from the server's state (Store.Held).
func stored(t *testing.T, s *natsstore.Store, member string) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := s.Held(ctx, member)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestCommittedMessagesLeaveTheStream: what a member's consumer committed
// is purged from the stream; another member's messages, not consumed, all
// stay.
func TestCommittedMessagesLeaveTheStream(t *testing.T) {
	s := openTeam(t, retentionOptions(), 1)[0]
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ids := storetest.AppendN(t, s, "lead", "alice", "to alice", 20)
	storetest.AppendN(t, s, "lead", "bob", "to bob", 3)
	var got seen
	sub, err := s.Consume(ctx, "alice", func(_ context.Context, d store.Delivery) error { got.add(d.Msg.ID); return nil })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	testkit.WaitFor(t, 20*time.Second, "every message delivered", func() bool { return got.has(ids...) })
	testkit.WaitFor(t, 20*time.Second, "alice's subject emptied by the purge", func() bool { return stored(t, s, "alice") == 0 })
	if n := stored(t, s, "bob"); n != 3 {
		t.Fatalf("bob's subject holds %d messages, want the 3 no one consumed", n)
	}
	// Later messages are purged too, once committed.
	more := storetest.AppendN(t, s, "lead", "alice", "later", 5)
	testkit.WaitFor(t, 20*time.Second, "the later messages delivered", func() bool { return got.has(more...) })
	testkit.WaitFor(t, 20*time.Second, "alice's subject emptied again", func() bool { return stored(t, s, "alice") == 0 })
	if n := got.count(); n != len(ids)+len(more) {
		t.Fatalf("%d deliveries, want %d: a purge must not bring anything back", n, len(ids)+len(more))
	}
}

// TestUncommittedMessageSurvivesThePurge: the purges of a consumer that
// holds a message uncommitted remove what it committed before and never
// that message; stopped, the consumer leaves it to the next one, which
// gets it marked as a redelivery.
func TestUncommittedMessageSurvivesThePurge(t *testing.T) {
	handles := openTeam(t, retentionOptions(), 2)
	first, second := handles[0], handles[1]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 4 {
		if err := first.Append(ctx, "alice", note(i)); err != nil {
			t.Fatal(err)
		}
	}
	held := make(chan struct{})
	box := &inbox{}
	sub, err := first.Consume(ctx, "alice", func(hctx context.Context, d store.Delivery) error {
		if d.Msg.Content == "n3" {
			close(held)
			<-hctx.Done() // stopped mid-handler: not committed
			return hctx.Err()
		}
		return box.handler(hctx, d)
	})
	if err != nil {
		t.Fatal(err)
	}
	<-held
	testkit.WaitFor(t, 20*time.Second, "the three committed messages purged", func() bool { return stored(t, first, "alice") == 1 })
	if err := sub.Stop(); err != nil {
		t.Fatal(err)
	}
	if n := stored(t, first, "alice"); n != 1 {
		t.Fatalf("alice's subject holds %d messages after the stop, want the uncommitted one", n)
	}
	sub, err = second.Consume(ctx, "alice", box.handler)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	testkit.WaitFor(t, 20*time.Second, "the held message redelivered", func() bool { return strings.Contains(box.String(), "n3") })
	if got, want := box.String(), "n0 n1 n2 n3*"; got != want {
		t.Fatalf("delivered %q, want %q", got, want)
	}
	testkit.WaitFor(t, 20*time.Second, "the redelivered message purged once committed", func() bool { return stored(t, second, "alice") == 0 })
}

// answer is an invocation result to caller.
func answer(caller, requestID string) *protocol.Message {
	req := protocol.InvocationRequest{RequestID: requestID, CorrelationID: "corr-" + requestID, Caller: caller,
		Target: "alice", Action: "ping", Prompt: "ping", TimeoutSec: 5}
	res := protocol.Fail(&req, 0, protocol.ErrIPC, "test answer", nil)
	m := protocol.NewMessage(protocol.TypeInvocationResult, "alice", caller)
	m.Result = &res
	return &m
}

// TestTakenAnswerIsRemoved: an answer a watch takes leaves the stream once
// the watch stops, the answers it did not take stay; in the inbox of a
// member, which its durable consumer reads, nothing taken is removed: the
// consumer has it to commit.
func TestTakenAnswerIsRemoved(t *testing.T) {
	handles := openTeam(t, testOptions, 2)
	s, other := handles[0], handles[1]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// alice has a durable consumer, stopped before anything came.
	csub, err := other.Consume(ctx, "alice", func(context.Context, store.Delivery) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := csub.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, caller := range []string{"ops", "alice"} {
		var took atomic.Int64
		sub, err := s.WatchAnswers(ctx, caller, func(d store.Delivery) bool {
			if d.Msg.Result.RequestID != "req-taken" {
				return false
			}
			took.Add(1)
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"req-left-1", "req-taken", "req-left-2"} {
			if err := other.Append(ctx, caller, answer(caller, id)); err != nil {
				t.Fatal(err)
			}
		}
		testkit.WaitFor(t, 20*time.Second, "the answer taken", func() bool { return took.Load() == 1 })
		if err := sub.Stop(); err != nil {
			t.Fatal(err)
		}
		want := uint64(2)
		if caller == "alice" {
			want = 3
		}
		if n := stored(t, s, caller); n != want {
			t.Fatalf("%s's subject holds %d messages, want %d", caller, n, want)
		}
	}
}

// TestStaleAnswersSwept: a watch of the inbox of a caller no consumer
// reads deletes the results there older than AnswerMaxAge, and leaves a
// message of another type. (A watch's sweep of a member's inbox, which a
// durable consumer reads, is refused as its removal of a taken answer is:
// TestTakenAnswerIsRemoved.)
func TestStaleAnswersSwept(t *testing.T) {
	opts := retentionOptions()
	opts.AnswerMaxAge = time.Millisecond
	s := openTeam(t, opts, 1)[0]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, id := range []string{"req-late-1", "req-late-2"} {
		if err := s.Append(ctx, "ops", answer("ops", id)); err != nil {
			t.Fatal(err)
		}
	}
	storetest.AppendN(t, s, "lead", "ops", "not a result", 1)
	sub, err := s.WatchAnswers(ctx, "ops", func(store.Delivery) bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	testkit.WaitFor(t, 20*time.Second, "the stale results swept", func() bool { return stored(t, s, "ops") == 1 })
	// A result that comes while the watch runs, taken by no one, is swept
	// by a later sweep.
	if err := s.Append(ctx, "ops", answer("ops", "req-late-3")); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 20*time.Second, "the later stale result swept", func() bool { return stored(t, s, "ops") == 1 })
}

// TestContractWhilePurging holds the store to the store contract with a
// purge cycle every 10 ms, so that every consumer of the suite purges
// while it delivers, redelivers and dead-letters.
func TestContractWhilePurging(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Opener {
		url := server.URL(fmt.Sprintf("t%d", teams.Add(1)))
		return func(t *testing.T) store.Store {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			s, err := natsstore.Open(ctx, url, retentionOptions())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
	})
}

// TestPurgeAcrossAServerRestart: the server restarted under a consumer
// that purged what it committed: nothing purged comes back, what comes
// after is delivered once each, and purged in turn.
func TestPurgeAcrossAServerRestart(t *testing.T) {
	srv := startRestartable(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := natsstore.Open(ctx, srv.srv.URL("purge"), retentionOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	box, sub := consumeFirstThree(t, ctx, s)
	defer sub.Stop()
	testkit.WaitFor(t, 20*time.Second, "the first three purged", func() bool { return stored(t, s, "alice") == 0 })

	srv.restart(t, s)
	appendRetried(t, ctx, s, 4, 6)
	testkit.WaitFor(t, 20*time.Second, "all six", func() bool { return strings.HasSuffix(box.String(), "n6") })
	if got := withoutMarkedRepeats(t, box.String()); got != "n1 n2 n3 n4 n5 n6" {
		t.Fatalf("the consumer got %q", box.String())
	}
	testkit.WaitFor(t, 20*time.Second, "the last three purged", func() bool { return stored(t, s, "alice") == 0 })
}

// TestDeadLettersAndSpansAgeOut: a dead letter carries a TTL of
// DeadLetterMaxAge and the server removes it when that has passed; the
// trace stream keeps spans TraceMaxAge, 7 days unless told, forever when
// told a negative age.
func TestDeadLettersAndSpansAgeOut(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	opts := testOptions
	opts.DeadLetterMaxAge = time.Second
	s := openTeam(t, opts, 1)[0]
	if err := s.DeadLetter(ctx, protocol.DeadLetterLine{Source: "inbox/alice", Offset: 1, Reason: "test", Raw: "{"}); err != nil {
		t.Fatal(err)
	}
	dls, _, err := s.DeadLetters(ctx)
	if err != nil || len(dls) != 1 {
		t.Fatalf("dead letters: %v %+v", err, dls)
	}
	testkit.WaitFor(t, 20*time.Second, "the dead letter expired", func() bool {
		dls, _, err := s.DeadLetters(ctx)
		return err == nil && len(dls) == 0
	})

	traceAge := func(s *natsstore.Store) time.Duration {
		js, err := jetstream.New(s.Conn())
		if err != nil {
			t.Fatal(err)
		}
		st, err := js.Stream(ctx, "huddle_"+s.Team()+"_traces")
		if err != nil {
			t.Fatal(err)
		}
		return st.CachedInfo().Config.MaxAge
	}
	if got := traceAge(s); got != 7*24*time.Hour {
		t.Fatalf("trace stream MaxAge %v, want 7 days", got)
	}
	opts.TraceMaxAge = -1
	if got := traceAge(openTeam(t, opts, 1)[0]); got != 0 {
		t.Fatalf("trace stream MaxAge %v, want none", got)
	}
}
