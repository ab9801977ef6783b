package team

import (
	"context"
	"sync"
	"testing"
	"time"

	"huddle/protocol"
	"huddle/store"
	"huddle/store/filestore"
	"huddle/store/natsstore"
)

// snapshots keeps the newest snapshot an observer handed out.
type snapshots struct {
	mu   sync.Mutex
	last Snapshot
	n    int
}

func (s *snapshots) send(snap Snapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if snap.Version <= s.last.Version && s.n > 0 {
		panic("a snapshot's version went back")
	}
	s.last, s.n = snap, s.n+1
}

func (s *snapshots) get() Snapshot { s.mu.Lock(); defer s.mu.Unlock(); return s.last }

func memberIn(snap Snapshot, name string) protocol.Member {
	for _, mv := range snap.Members {
		if mv.Record.Name == name {
			return mv.Record
		}
	}
	return protocol.Member{}
}

// TestObserveOn: the store observer's snapshots follow a team in a store
// as it changes, made through another handle: a plan created shows
// pending, then decided; a member alive shows its status and the team up;
// once its heartbeats stop and the deadline passes, it shows lost (with
// what it was) and the team down, though no record changed; a span shows
// as a chain; on NATS a message sent shows in the Messages.
func TestObserveOn(t *testing.T) {
	eachStore(t, func(t *testing.T, ctx context.Context, st store.Store, tm *Team) {
		const within = 20 * time.Second
		const lostAfter = 2 * time.Second
		var snaps snapshots
		obs, err := ObserveOn(ctx, st, lostAfter, ObserveOptions{}, snaps.send)
		if err != nil {
			t.Fatal(err)
		}
		defer obs.Close()
		waitFor(t, within, "the team in a snapshot", func() bool {
			s := snaps.get()
			return s.Team != nil && s.Team.Name == "crew" && s.Store && len(s.Members) == 3 && !s.Down
		})

		// ana alive: heartbeaten until the test has seen it so.
		if err := st.PutMember(ctx, &protocol.Member{Name: "ana", Runtime: RuntimeExternal, Status: protocol.MemberWorking, Activity: "parsing", Since: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if err := st.PutMember(ctx, &protocol.Member{Name: "bo", Runtime: RuntimeExternal, Status: protocol.MemberStopped, Since: time.Now()}); err != nil {
			t.Fatal(err)
		}
		beat, stopBeat := context.WithCancel(ctx)
		beating := make(chan struct{})
		go func() {
			defer close(beating)
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-beat.Done():
					return
				case <-tick.C:
					_ = st.Heartbeat(beat, "ana")
				}
			}
		}()
		waitFor(t, within, "ana working and the team up", func() bool {
			s := snaps.get()
			return memberIn(s, "ana").Status == protocol.MemberWorking && memberIn(s, "bo").Status == protocol.MemberStopped && !s.Down
		})

		plan := newPlan(t, ctx, st, "ana")
		waitFor(t, within, "the plan pending", func() bool {
			s := snaps.get()
			return s.Pending == 1 && len(s.Requests) == 1 && s.Requests[0].ID == plan.ID && s.Requests[0].Status == protocol.RequestPending
		})
		if _, err := DecideOn(ctx, st, plan.ID, protocol.EventApprove, "", protocol.Lead); err != nil {
			t.Fatal(err)
		}
		waitFor(t, within, "the plan approved", func() bool {
			s := snaps.get()
			return s.Pending == 0 && len(s.Requests) == 1 && s.Requests[0].Status == protocol.RequestApproved && s.Requests[0].ResolvedBy == protocol.Lead
		})

		sp := benchCall(1)
		for _, s := range sp {
			if err := st.AppendSpan(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, within, "the call's chain", func() bool { return snaps.get().Chains.Len() == 1 })

		if _, ok := st.(*natsstore.Store); ok {
			if err := SendOn(ctx, st, tm, protocol.Lead, "cy", "hello cy"); err != nil {
				t.Fatal(err)
			}
			waitFor(t, within, "the message in Messages", func() bool {
				for _, mv := range snaps.get().Messages {
					if mv.Inbox == "cy" && mv.Msg.Content == "hello cy" {
						return true
					}
				}
				return false
			})
		}

		stopBeat()
		<-beating
		waitFor(t, within, "ana lost and the team down", func() bool {
			s := snaps.get()
			ana := memberIn(s, "ana")
			return ana.Status == StatusLost && ana.Activity != "" && s.Down &&
				NotRunning(s.Runtime) == "team not running (no member seen within "+lostAfter.String()+")"
		})
		// The deadlines stand still from when the last member was seen.
		if s := snaps.get(); !s.Runtime.OnStore || s.Runtime.LastAlive.IsZero() || PausedSince(s.Runtime).After(time.Now()) {
			t.Fatalf("the runtime state of a store team down: %+v", s.Runtime)
		}
		if bo := memberIn(snaps.get(), "bo"); bo.Status != protocol.MemberStopped {
			t.Fatalf("bo, stopped, shows %q once the team is down", bo.Status)
		}
	})
}

// TestObserveOnDeadLettersReadAgainChangeNothing: with more dead letters
// than a snapshot keeps, reading them again (every deadLettersEvery) when
// none came makes no new snapshot.
func TestObserveOnDeadLettersReadAgainChangeNothing(t *testing.T) {
	dir := t.TempDir()
	writeTeam(t, dir, Team{Name: "crew", Members: []MemberSpec{scripted("alice", "", Step{Wait: Duration(time.Hour)})}})
	st, err := filestore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range MaxDeadLetters + 5 {
		if err := st.DeadLetter(ctx, store.DeadLetter{Source: "inbox/alice.jsonl", Offset: int64(i), Reason: "bad line", Raw: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	var snaps snapshots
	obs, err := ObserveOn(ctx, st, 0, ObserveOptions{}, snaps.send)
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Close()
	waitFor(t, 20*time.Second, "the newest dead letters in a snapshot", func() bool {
		s := snaps.get()
		return len(s.DeadLetters) == MaxDeadLetters && s.DeadLetters[MaxDeadLetters-1].Offset == MaxDeadLetters+4
	})
	waitFor(t, 20*time.Second, "the snapshot sent", func() bool {
		obs.mu.Lock()
		defer obs.mu.Unlock()
		return !obs.m.dirty
	})
	obs.readDeadLetters()
	obs.mu.Lock()
	dirty := obs.m.dirty
	obs.mu.Unlock()
	if dirty {
		t.Fatal("reading the same dead letters again changed the model")
	}
}
