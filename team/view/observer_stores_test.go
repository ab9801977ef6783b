package view

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/internal/testkit/teamkit"
	"huddle/protocol"
	"huddle/store"
	"huddle/store/filestore"
	"huddle/store/storetest"
	"huddle/team"
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

// TestObserverOnEveryStore: the observer's snapshots follow a team in a
// store as it changes, made through another handle: a plan created shows
// pending, then decided; a member alive shows its status and the team up;
// once its heartbeats stop and the deadline passes, it shows lost (with
// what it was) and the team down, though no record changed; a span shows
// as a chain; a message sent shows in the Messages, and in its member's
// unread count.
func TestObserverOnEveryStore(t *testing.T) {
	teamkit.EachStore(t, func(t *testing.T, ctx context.Context, st store.Store, tm *team.Team) {
		const within = 20 * time.Second
		const lostAfter = 2 * time.Second
		var snaps snapshots
		obs, err := Observe(ctx, st, ObserveOptions{LostAfter: lostAfter}, snaps.send)
		if err != nil {
			t.Fatal(err)
		}
		defer obs.Close()
		testkit.WaitFor(t, within, "the team in a snapshot", func() bool {
			s := snaps.get()
			return s.Team != nil && s.Team.Name == "crew" && s.Store && len(s.Members) == 3 && !s.Down
		})

		// ana alive: heartbeaten until the test has seen it so.
		if err := st.PutMember(ctx, &protocol.Member{Name: "ana", Runtime: team.RuntimeExternal, Status: protocol.MemberWorking, Activity: "parsing", Since: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if err := st.PutMember(ctx, &protocol.Member{Name: "bo", Runtime: team.RuntimeExternal, Status: protocol.MemberStopped, Since: time.Now()}); err != nil {
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
		testkit.WaitFor(t, within, "ana working and the team up", func() bool {
			s := snaps.get()
			return memberIn(s, "ana").Status == protocol.MemberWorking && memberIn(s, "bo").Status == protocol.MemberStopped && !s.Down
		})

		plan := teamkit.NewPlan(t, ctx, st, "ana")
		testkit.WaitFor(t, within, "the plan pending", func() bool {
			s := snaps.get()
			return s.Pending == 1 && len(s.Requests) == 1 && s.Requests[0].ID == plan.ID && s.Requests[0].Status == protocol.RequestPending
		})
		if _, err := team.Decide(ctx, st, plan.ID, protocol.EventApprove, "", protocol.Lead); err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, within, "the plan approved", func() bool {
			s := snaps.get()
			return s.Pending == 0 && len(s.Requests) == 1 && s.Requests[0].Status == protocol.RequestApproved && s.Requests[0].ResolvedBy == protocol.Lead
		})

		sp := benchCall(1)
		for _, s := range sp {
			if err := st.AppendSpan(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
		testkit.WaitFor(t, within, "the call's chain", func() bool { return snaps.get().Chains.Len() == 1 })

		if err := team.Send(ctx, st, tm, protocol.Lead, "cy", "hello cy"); err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, within, "the message in Messages and cy's unread", func() bool {
			s := snaps.get()
			for _, mv := range s.Members {
				if mv.Record.Name == "cy" && mv.Unread != 1 {
					return false
				}
			}
			for _, mv := range s.Messages {
				if mv.Inbox == "cy" && mv.Msg.Content == "hello cy" {
					return true
				}
			}
			return false
		})

		stopBeat()
		<-beating
		testkit.WaitFor(t, within, "ana lost and the team down", func() bool {
			s := snaps.get()
			ana := memberIn(s, "ana")
			return ana.Status == team.StatusLost && ana.Activity != "" && s.Down &&
				team.NotRunning(s.Runtime) == "team not running (no member seen within "+lostAfter.String()+")"
		})
		// The deadlines stand still from when the last member was seen.
		if s := snaps.get(); !s.Runtime.ByRecords || s.Runtime.LastAlive.IsZero() || team.PausedSince(s.Runtime).After(time.Now()) {
			t.Fatalf("the runtime state of a store team down: %+v", s.Runtime)
		}
		if bo := memberIn(snaps.get(), "bo"); bo.Status != protocol.MemberStopped {
			t.Fatalf("bo, stopped, shows %q once the team is down", bo.Status)
		}
	})
}

// TestObserverDeadLettersReadAgainChangeNothing: with more dead letters
// than a snapshot keeps, reading them again (on a change told, or every
// refreshEvery on a store that does not watch them) when none came makes
// no new snapshot.
func TestObserverDeadLettersReadAgainChangeNothing(t *testing.T) {
	dir := t.TempDir()
	teamkit.WriteTeam(t, dir, team.Team{Name: "crew", Members: []team.MemberSpec{teamkit.Scripted("alice", "", team.Step{Wait: team.Duration(time.Hour)})}})
	st, err := filestore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range MaxDeadLetters + 5 {
		if err := st.DeadLetter(ctx, protocol.DeadLetterLine{Source: "inbox/alice.jsonl", Offset: int64(i), Reason: "bad line", Raw: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	var snaps snapshots
	obs, err := Observe(ctx, st, ObserveOptions{}, snaps.send)
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Close()
	testkit.WaitFor(t, 20*time.Second, "the newest dead letters in a snapshot", func() bool {
		s := snaps.get()
		return len(s.DeadLetters) == MaxDeadLetters && s.DeadLetters[MaxDeadLetters-1].Offset == MaxDeadLetters+4
	})
	var version uint64
	testkit.WaitFor(t, 20*time.Second, "the snapshot sent", func() bool {
		obs.mu.Lock()
		defer obs.mu.Unlock()
		version = obs.m.version
		return !obs.m.dirty
	})
	obs.readDeadLetters()
	obs.mu.Lock()
	dirty, now := obs.m.dirty, obs.m.version
	obs.mu.Unlock()
	// A change would leave the model dirty, or, had the sender's snapshot
	// come in between, a version further on.
	if dirty || now != version {
		t.Fatal("reading the same dead letters again changed the model")
	}
}

// unreadOf is member name's unread count in snap (-1 when it is not there).
func unreadOf(snap Snapshot, name string) int {
	for _, mv := range snap.Members {
		if mv.Record.Name == name {
			return mv.Unread
		}
	}
	return -1
}

// inboxIDs counts the messages of inbox in snap, by id.
func inboxIDs(snap Snapshot, inbox string) map[string]int {
	ids := map[string]int{}
	for _, mv := range snap.Messages {
		if mv.Inbox == inbox {
			ids[mv.Msg.ID]++
		}
	}
	return ids
}

// sendN appends n messages from the lead to member's inbox and returns
// their ids.
func sendN(t *testing.T, ctx context.Context, st store.Store, member, prefix string, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		m := protocol.NewMessage(protocol.TypeMessage, protocol.Lead, member)
		m.Content = fmt.Sprintf("%s %d", prefix, i)
		if err := st.Append(ctx, member, &m); err != nil {
			t.Error(err)
			return ids
		}
		ids = append(ids, m.ID)
	}
	return ids
}

// overlapStore makes both overlaps of an inbox watch and the seed happen
// in bo's inbox, for sure: when the observer reads the messages the store
// holds, it first appends one to bo and waits for the watch to deliver it
// (the seed then holds a message the watch delivered already), then
// appends another that the watch is held from delivering until release
// (the watch then delivers a message the seed held).
type overlapStore struct {
	store.Store
	t         *testing.T
	watched   chan string   // ids bo's watch delivered, while not held
	held      chan struct{} // closed: bo's watch is held
	release   chan struct{} // closed: bo's watch goes on
	heldOnce  sync.Once
	overlapID [2]string
}

func (s *overlapStore) WatchInbox(ctx context.Context, member string, fn func(store.Delivery)) (store.Subscription, error) {
	return s.Store.(store.InboxWatcher).WatchInbox(ctx, member, func(d store.Delivery) {
		if member == "bo" {
			select {
			case <-s.held:
				<-s.release
			default:
				s.watched <- d.Msg.ID
			}
		}
		fn(d)
	})
}

func (s *overlapStore) Messages(ctx context.Context) ([]store.Delivery, error) {
	s.heldOnce.Do(func() {
		first := sendN(s.t, ctx, s.Store, "bo", "seen by the watch first", 1)
		deadline := time.After(20 * time.Second)
	wait:
		for {
			select {
			case id := <-s.watched:
				if id == first[0] {
					break wait
				}
			case <-deadline:
				s.t.Error("bo's watch did not deliver the first message")
				break wait
			}
		}
		close(s.held)
		second := sendN(s.t, ctx, s.Store, "bo", "seen by the seed first", 1)
		s.overlapID = [2]string{first[0], second[0]}
	})
	return s.Store.(store.MessageReader).Messages(ctx)
}

// TestObserverSeedsMessagesAndUnread: an observer attached to a store
// after messages were appended (two of ana's five committed, the third
// handed out and given back) starts with what the store holds in its
// Messages (the three ana's consumer has not committed, the files store
// the committed two as well: its inbox keeps them) and with each member's
// unread count; messages appended to bo while it attaches (seen by its
// watch and its seed both: overlapStore), and after, show once each; a member record change (ana's consumer done) refreshes
// ana's count.
func TestObserverSeedsMessagesAndUnread(t *testing.T) {
	// No periodic read: each count shown is refreshed by what changed.
	defer func(every time.Duration) { refreshEvery = every }(refreshEvery)
	refreshEvery = time.Hour
	teamkit.EachStore(t, func(t *testing.T, ctx context.Context, st store.Store, _ *team.Team) {
		const within = 20 * time.Second
		const total, commit = 5, 2
		anaIDs := sendN(t, ctx, st, "ana", "to ana", total)
		cyIDs := sendN(t, ctx, st, "cy", "to cy", 1)
		sub := storetest.CommitThenHold(t, ctx, st, "ana", commit, total)
		if err := sub.Stop(); err != nil {
			t.Fatal(err)
		}

		// Two of bo's messages are appended while the observer attaches,
		// each seen by both its watch and its seed.
		const during, after = 2, 3
		ov := &overlapStore{Store: st, t: t, watched: make(chan string, 16), held: make(chan struct{}), release: make(chan struct{})}
		var snaps snapshots
		obs, err := Observe(ctx, ov, ObserveOptions{}, snaps.send)
		close(ov.release)
		if err != nil {
			t.Fatal(err)
		}
		defer obs.Close()
		testkit.WaitFor(t, within, "ana's and cy's messages and counts", func() bool {
			s := snaps.get()
			ana := inboxIDs(s, "ana")
			for _, id := range anaIDs[commit:] {
				if ana[id] != 1 {
					return false
				}
			}
			return inboxIDs(s, "cy")[cyIDs[0]] == 1 && unreadOf(s, "ana") == total-commit && unreadOf(s, "cy") == 1
		})
		if _, files := st.(*filestore.Store); files {
			// The inbox file keeps what was consumed until a compaction.
			ana := inboxIDs(snaps.get(), "ana")
			for _, id := range anaIDs[:commit] {
				if ana[id] != 1 {
					t.Fatalf("a committed message of ana's not in the seed: %v", ana)
				}
			}
		}
		ids := append(ov.overlapID[:], sendN(t, ctx, st, "bo", "after attaching", after)...)
		testkit.WaitFor(t, within, "every message of bo's and its count", func() bool {
			s := snaps.get()
			bo := inboxIDs(s, "bo")
			for _, id := range ids {
				if bo[id] == 0 {
					return false
				}
			}
			return unreadOf(s, "bo") == during+after
		})
		// The watch delivers bo's messages in order: the last one seen, no
		// copy of an earlier one can come after.
		s := snaps.get()
		bo := inboxIDs(s, "bo")
		for id, n := range bo {
			if n != 1 {
				t.Fatalf("bo's message %s shown %d times", id, n)
			}
		}
		if len(bo) != during+after {
			t.Fatalf("bo's inbox shows %d messages, want %d", len(bo), during+after)
		}
		for _, id := range anaIDs {
			if n := inboxIDs(s, "ana")[id]; n > 1 {
				t.Fatalf("ana's message %s shown %d times", id, n)
			}
		}

		// ana's consumer takes the rest and says so in its record.
		storetest.Drain(t, ctx, st, "ana", total-commit)
		if err := st.PutMember(ctx, &protocol.Member{Name: "ana", Runtime: team.RuntimeExternal, Status: protocol.MemberIdle, Since: time.Now()}); err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, within, "ana's unread count refreshed", func() bool { return unreadOf(snaps.get(), "ana") == 0 })
	})
}

// awayUnread is a store that cannot tell an unread count (away, or timing
// out), counting the asks.
type awayUnread struct {
	store.Store
	asks int
}

func (s *awayUnread) Unread(context.Context, string) (int, error) {
	s.asks++
	return 0, errors.New("store away")
}

// TestUnreadCountsStopAtTheFirstFailure: while the store cannot tell one
// count, the observer does not ask for the others (each ask may cost a
// timeout, with the loop waiting): all of them stay due, for the retry;
// a name no inbox can have is dropped.
func TestUnreadCountsStopAtTheFirstFailure(t *testing.T) {
	st := &awayUnread{}
	o := &Observer{st: st, ctx: t.Context(), unreadDue: map[string]bool{"alice": true, "bob": true, "carol": true, "../x": true}}
	o.readUnread()
	if st.asks != 1 {
		t.Fatalf("asked the store %d times for counts it could not tell, want 1", st.asks)
	}
	if want := map[string]bool{"alice": true, "bob": true, "carol": true}; !maps.Equal(o.unreadDue, want) {
		t.Fatalf("due after the failure: %v, want %v", o.unreadDue, want)
	}
}

// TestObserverOfADeskJudgesNoOneLost: on a desk (NoRuntime) a session's
// member whose hook wrote its record and then went quiet is shown as its
// record says, and the team is not down, where an observer of the same
// store that expects a runtime shows it lost and the team down.
func TestObserverOfADeskJudgesNoOneLost(t *testing.T) {
	dir := t.TempDir()
	if err := team.MakeDesk(dir); err != nil {
		t.Fatal(err)
	}
	st, err := filestore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const within = 20 * time.Second
	const lostAfter = 200 * time.Millisecond
	var desk, runtime snapshots
	for _, o := range []struct {
		s    *snapshots
		opts ObserveOptions
	}{{&desk, ObserveOptions{LostAfter: lostAfter, NoRuntime: true}}, {&runtime, ObserveOptions{LostAfter: lostAfter}}} {
		obs, err := Observe(ctx, st, o.opts, o.s.send)
		if err != nil {
			t.Fatal(err)
		}
		defer obs.Close()
	}
	if err := st.PutMember(ctx, &protocol.Member{Name: "codex-b2d258ff", Runtime: team.RuntimeExternal, Status: protocol.MemberWorking, Activity: "asks to use Bash", Since: time.Now()}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, within, "the session lost and the team down, to an observer expecting a runtime", func() bool {
		s := runtime.get()
		return memberIn(s, "codex-b2d258ff").Status == team.StatusLost && s.Down
	})
	// A change folded after that, on the desk: what it shows was judged
	// past the deadline too.
	plan := teamkit.NewPlan(t, ctx, st, "codex-b2d258ff")
	testkit.WaitFor(t, within, "the desk's snapshot with the request", func() bool {
		s := desk.get()
		return len(s.Requests) == 1 && s.Requests[0].ID == plan.ID
	})
	s := desk.get()
	if m := memberIn(s, "codex-b2d258ff"); m.Status != protocol.MemberWorking || m.Activity != "asks to use Bash" || s.Down || team.HasRun(s.Runtime) {
		t.Errorf("the desk shows %s %q, down %v, runtime %+v; want working, not down", m.Status, m.Activity, s.Down, s.Runtime)
	}
}
