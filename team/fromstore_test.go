package team_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"huddle/internal/testkit/teamkit"
	"huddle/protocol"
	"huddle/store"
	"huddle/store/storekinds"
	"huddle/store/storetest"
	"huddle/team"
	"huddle/teamdir"
)

// inboxOn consumes member's inbox in st until it holds n messages.
func inboxOn(t *testing.T, ctx context.Context, st store.Store, member string, n int) []protocol.Message {
	t.Helper()
	got := storetest.Drain(t, ctx, st, member, n)
	if len(got) != n {
		t.Fatalf("%s's inbox holds %d messages, want %d: %+v", member, len(got), n, got)
	}
	return got
}

func TestLoadTeamOnEmptyStore(t *testing.T) {
	for name, open := range storekinds.Open {
		t.Run(name, func(t *testing.T) {
			_, err := team.LoadFrom(context.Background(), open(t))
			if err == nil || !strings.Contains(err.Error(), "no team in the store") {
				t.Fatalf("LoadFrom of an empty store = %v, want no team", err)
			}
		})
	}
}

func TestSendAndBroadcastOn(t *testing.T) {
	teamkit.EachStore(t, func(t *testing.T, ctx context.Context, st store.Store, tm *team.Team) {
		if err := team.Send(ctx, st, tm, protocol.Lead, "ana", "hello ana"); err != nil {
			t.Fatal(err)
		}
		if err := team.Send(ctx, st, tm, protocol.Lead, "zed", "x"); err == nil || err.Error() != `no member "zed" in team crew` {
			t.Fatalf("send to a stranger = %v", err)
		}
		if err := team.Send(ctx, st, tm, "zed", "ana", "x"); err == nil || !strings.HasPrefix(err.Error(), "from: ") {
			t.Fatalf("send from a stranger = %v", err)
		}
		n, err := team.Broadcast(ctx, st, tm, "bo", "all hands")
		if err != nil || n != 2 {
			t.Fatalf("Broadcast = %d, %v; want 2 members", n, err)
		}
		got := inboxOn(t, ctx, st, "ana", 2)
		if got[0].Type != protocol.TypeMessage || got[0].From != protocol.Lead || got[0].Content != "hello ana" {
			t.Fatalf("ana's first message = %+v", got[0])
		}
		if got[1].Type != protocol.TypeBroadcast || got[1].From != "bo" || got[1].Content != "all hands" {
			t.Fatalf("ana's second message = %+v", got[1])
		}
		if cy := inboxOn(t, ctx, st, "cy", 1); cy[0].Type != protocol.TypeBroadcast || cy[0].To != "cy" {
			t.Fatalf("cy's message = %+v", cy[0])
		}
	})
}

func TestDecideOn(t *testing.T) {
	teamkit.EachStore(t, func(t *testing.T, ctx context.Context, st store.Store, tm *team.Team) {
		plan := teamkit.NewPlan(t, ctx, st, "ana")
		if _, err := team.Decide(ctx, st, plan.ID, protocol.EventReject, "", ""); err == nil || !strings.Contains(err.Error(), "reject needs feedback") {
			t.Fatalf("reject without feedback = %v", err)
		}
		if _, err := team.Decide(ctx, st, plan.ID, protocol.EventCancel, "", ""); err == nil || !strings.Contains(err.Error(), "is not a decision") {
			t.Fatalf("cancel as a decision = %v", err)
		}
		if _, err := team.Decide(ctx, st, "plan-nothere", protocol.EventApprove, "", ""); err == nil || err.Error() != "no request plan-nothere" {
			t.Fatalf("unknown request = %v", err)
		}
		r, err := team.Decide(ctx, st, plan.ID, protocol.EventReject, "smaller steps", "")
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != protocol.RequestRejected || r.ResolvedBy != protocol.Lead || r.Feedback != "smaller steps" {
			t.Fatalf("decided record = %+v", r)
		}
		_, err = team.Decide(ctx, st, plan.ID, protocol.EventApprove, "", "")
		var already *store.AlreadyError
		if !errors.As(err, &already) || already.By != protocol.Lead || already.Status != protocol.RequestRejected {
			t.Fatalf("second decision = %v, want *store.AlreadyError rejected by lead", err)
		}
		got := inboxOn(t, ctx, st, "ana", 1)[0]
		if got.Type != protocol.TypePlanApprovalResponse || got.RequestID != plan.ID || got.Approve == nil || *got.Approve || got.Feedback != "smaller steps" {
			t.Fatalf("ana was told %+v", got)
		}
		sd, err := team.RequestShutdown(ctx, st, tm, "bo", "done")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := team.Decide(ctx, st, sd.ID, protocol.EventApprove, "", ""); err == nil || !strings.Contains(err.Error(), "only its teammate answers it") {
			t.Fatalf("deciding a shutdown request = %v", err)
		}
	})
}

// TestDecideOnRace: of many leads deciding at once, one wins and every
// other is told who did.
func TestDecideOnRace(t *testing.T) {
	teamkit.EachStore(t, func(t *testing.T, ctx context.Context, st store.Store, tm *team.Team) {
		plan := teamkit.NewPlan(t, ctx, st, "bo")
		const n = 6
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = team.Decide(ctx, st, plan.ID, protocol.EventApprove, "", fmt.Sprintf("lead%d", i))
			}()
		}
		wg.Wait()
		winner := ""
		for i, err := range errs {
			if err == nil {
				if winner != "" {
					t.Fatalf("two winners: %s and lead%d", winner, i)
				}
				winner = fmt.Sprintf("lead%d", i)
			}
		}
		if winner == "" {
			t.Fatalf("no winner: %v", errs)
		}
		for _, err := range errs {
			var already *store.AlreadyError
			if err != nil && (!errors.As(err, &already) || already.By != winner) {
				t.Fatalf("a loser got %v, want already approved by %s", err, winner)
			}
		}
		if got := inboxOn(t, ctx, st, "bo", 1)[0]; got.Type != protocol.TypePlanApprovalResponse || got.Approve == nil || !*got.Approve {
			t.Fatalf("bo was told %+v", got)
		}
	})
}

func TestRequestShutdownOnEachStore(t *testing.T) {
	teamkit.EachStore(t, func(t *testing.T, ctx context.Context, st store.Store, tm *team.Team) {
		if _, err := team.RequestShutdown(ctx, st, tm, "zed", ""); err == nil || err.Error() != `no member "zed" in team crew` {
			t.Fatalf("shutdown of a stranger = %v", err)
		}
		// ana has no record yet: asked, and the request waits.
		r, err := team.RequestShutdown(ctx, st, tm, "ana", "wrap up")
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != protocol.RequestPending || r.To != "ana" || r.Deadline.Sub(r.Created) != 45*time.Second {
			t.Fatalf("request = %+v", r)
		}
		got := inboxOn(t, ctx, st, "ana", 1)[0]
		if got.Type != protocol.TypeShutdownRequest || got.RequestID != r.ID || got.Reason != "wrap up" {
			t.Fatalf("ana was asked %+v", got)
		}
		stored, err := st.Request(ctx, r.ID)
		if err != nil || stored.Status != protocol.RequestPending {
			t.Fatalf("stored request = %+v, %v", stored, err)
		}
		// cy stopped while bo's runtime is alive: cancelled at once. A
		// team directory's runtime is alive while it holds runtime.lock.
		put(t, ctx, st, "cy", protocol.MemberStopped)
		put(t, ctx, st, "bo", protocol.MemberIdle)
		unlock := func() {}
		if d, ok := st.(interface{ Dir() string }); ok {
			var err error
			if unlock, err = teamdir.LockRuntime(d.Dir()); err != nil {
				t.Fatal(err)
			}
		}
		r, err = team.RequestShutdown(ctx, st, tm, "cy", "")
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != protocol.RequestCancelled || r.ResponseReason != "cy is already stopped" {
			t.Fatalf("request to a stopped member = %+v", r)
		}
		// bo stopped too, its runtime gone: no runtime is alive, so the
		// request waits for the next one.
		put(t, ctx, st, "bo", protocol.MemberStopped)
		unlock()
		r, err = team.RequestShutdown(ctx, st, tm, "cy", "")
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != protocol.RequestPending {
			t.Fatalf("request while the team is down = %+v", r)
		}
		if got := inboxOn(t, ctx, st, "cy", 1)[0]; got.RequestID != r.ID {
			t.Fatalf("cy was asked %+v", got)
		}
	})
}

func put(t *testing.T, ctx context.Context, st store.Store, name string, status protocol.MemberStatus) {
	t.Helper()
	if err := st.PutMember(ctx, &protocol.Member{Name: name, Status: status, Since: time.Now()}); err != nil {
		t.Fatal(err)
	}
}

func TestDownOn(t *testing.T) {
	live := store.MemberState{Member: protocol.Member{Name: "a", Status: protocol.MemberIdle}}
	lost := live
	lost.Lost = true
	stopped := store.MemberState{Member: protocol.Member{Name: "b", Status: protocol.MemberStopped}}
	for _, c := range []struct {
		name   string
		states []store.MemberState
		down   bool
	}{
		{"never ran", nil, false},
		{"a member alive", []store.MemberState{live, stopped}, false},
		{"every live member lost", []store.MemberState{lost, stopped}, true},
		{"every member stopped", []store.MemberState{stopped}, true},
	} {
		if got := team.DownByRecords(c.states); got != c.down {
			t.Errorf("%s: DownByRecords = %v, want %v", c.name, got, c.down)
		}
	}
}

// TestDeadLettersOn: a store's dead letters read as deadletter.jsonl's do:
// who caused them and through whom, from the refused line.
func TestDeadLettersOn(t *testing.T) {
	teamkit.EachStore(t, func(t *testing.T, ctx context.Context, st store.Store, tm *team.Team) {
		raw := `{"id":"m1","type":"message","from":"bo","to":"ana","content":"x"}`
		if err := st.DeadLetter(ctx, protocol.DeadLetterLine{Source: "inbox/ana.jsonl", Offset: 3, Reason: "bad", Raw: raw}); err != nil {
			t.Fatal(err)
		}
		got, skipped, err := team.DeadLetters(ctx, st)
		if err != nil || skipped != 0 || len(got) != 1 {
			t.Fatalf("DeadLetters = %+v, %d, %v", got, skipped, err)
		}
		d := got[0]
		if d.Source != "inbox/ana.jsonl" || d.Member != "ana" || d.By != "bo" || d.Type != "message" || d.MessageID != "m1" || d.Reason != "bad" || d.At.IsZero() {
			t.Fatalf("dead letter %+v", d)
		}
	})
}
