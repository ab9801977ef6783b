// Package storetest is the contract every store.Store keeps: one suite of
// tests (Run) that each store's package runs against itself, so the files
// and the NATS store are held to the same guarantees.
package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"huddle/protocol"
	"huddle/store"
)

// Opener opens a new handle on one team: for the files store the same
// directory again, for NATS a new connection. Each call is what a
// restarted process (or another machine) would get. The handle is closed
// when the test ends.
type Opener func(t *testing.T) store.Store

// Factory makes a fresh, empty team for one test and returns its Opener.
type Factory func(t *testing.T) Opener

// wait is the deadline of every condition the suite waits on.
const wait = 15 * time.Second

// Run runs the contract against the stores f makes.
func Run(t *testing.T, f Factory) {
	tests := []struct {
		name string
		fn   func(t *testing.T, open Opener)
	}{
		{"DeliveryInOrderAcrossRestarts", testDeliveryAcrossRestarts},
		{"FailingHandlerDeadLetters", testFailingHandler},
		{"AppendRefusesMisaddressed", testAppendRefuses},
		{"RacingApproversOneWinner", testRacingApprovers},
		{"PlanRoundTripRacingDecidersAcrossHandles", testPlanRoundTripRacingDeciders},
		{"PendingPlanResumedAfterRestart", testPendingPlanResumed},
		{"ForgedAndStaleResponsesRefused", testForgedAndStale},
		{"ArchiveTakesFinalOutOfLive", testArchive},
		{"RescheduleMovesAPendingDeadline", testReschedule},
		{"PermissionAllowedForTheSession", testPermissionAllowedForTheSession},
		{"ReviewRacingMergersOneWinner", testReviewRace},
		{"InvalidNamesRefused", testInvalidNames},
		{"DeadLetters", testDeadLetters},
		{"WatchDeadLettersTellsEachOne", testWatchDeadLetters},
		{"UnreadCountsWhatIsNotCommitted", testUnread},
		{"WatchInboxFollowsFromTheEndAndTakesNothing", testWatchInbox},
		{"WatchAnswersHandsOnWhatComesAfter", testWatchAnswers},
		{"LeaseOneHolderTakenOverAfterExpiry", testLease},
		{"RestartAskedOfTheLeaseHolder", testRestartAsk},
		{"LogsFollowedAndRead", testLogs},
		{"MembersHeartbeatAndLost", testMembers},
		{"WatchTellsEveryChange", testWatch},
		{"TraceSpansWatched", testTraces},
		{"ConfigCreatedOnce", testConfig},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, f(t))
		})
	}
}

func ctxOf(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*wait)
	t.Cleanup(cancel)
	return ctx
}

// AppendN appends n messages from from to member's inbox in st, their
// contents "prefix 0" to "prefix n-1", and returns their ids in order.
func AppendN(t *testing.T, st store.Store, from, member, prefix string, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*wait)
	defer cancel()
	var ids []string
	for i := range n {
		m := message(from, member, fmt.Sprintf("%s %d", prefix, i))
		if err := st.Append(ctx, member, m); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	return ids
}

// waitFor waits until cond holds, failing the test at the deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

// stopAtEnd stops sub when the test ends and reports its error.
func stopAtEnd(t *testing.T, sub store.Subscription) {
	t.Cleanup(func() {
		if err := sub.Stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
}

// CommitThenHold consumes member's inbox in st, commits the first n
// messages and holds the next one until the consumer is stopped (its
// handler returns when its context ends, so it is not committed), and
// waits until st counts what is left unread after the n: the state of a
// member that handled some of its inbox and is busy with the next. Stop
// the subscription when done.
func CommitThenHold(t *testing.T, ctx context.Context, st store.Store, member string, n, total int) store.Subscription {
	t.Helper()
	var mu sync.Mutex
	handled := 0
	sub, err := st.Consume(ctx, member, func(hctx context.Context, _ store.Delivery) error {
		mu.Lock()
		handled++
		k := handled
		mu.Unlock()
		if k <= n {
			return nil
		}
		<-hctx.Done()
		return hctx.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, fmt.Sprintf("%d of %s's %d messages committed", n, member, total), func() bool {
		left, err := st.Unread(ctx, member)
		return err == nil && left == total-n
	})
	// And the next one held: a stop that came while the consumer was still
	// asking for it would leave it handed out to no one (on NATS, until
	// AckWait), not given back by the handler's interruption.
	waitFor(t, fmt.Sprintf("%s's message %d held", member, n+1), func() bool {
		mu.Lock()
		defer mu.Unlock()
		return handled > n
	})
	return sub
}

// Drain consumes member's inbox in st until it has handed out at least n
// messages, stops the consumer and returns them: for a test elsewhere that
// checks what a command or a runtime put in a store.
func Drain(t *testing.T, ctx context.Context, st store.Store, member string, n int) []protocol.Message {
	t.Helper()
	var mu sync.Mutex
	var got []protocol.Message
	sub, err := st.Consume(ctx, member, func(_ context.Context, d store.Delivery) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, d.Msg)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, fmt.Sprintf("%d messages in %s's inbox", n, member), func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= n
	})
	if err := sub.Stop(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	return got
}
