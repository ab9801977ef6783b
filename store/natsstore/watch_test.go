package natsstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/protocol"
	"huddle/store"
)

// TestWatchSurvivesAServerRestart: a watch whose server goes away and comes
// back on the same address and data is told of the changes made after it
// returned, those made before the watching connection is back included.
func TestWatchSurvivesAServerRestart(t *testing.T) {
	srv := startRestartable(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url := srv.srv.URL("watchrestart")
	s := openURL(t, url)
	var mu sync.Mutex
	told := map[store.Change]bool{}
	sub, err := s.Watch(ctx, func(c store.Change) { mu.Lock(); told[c] = true; mu.Unlock() })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	has := func(c store.Change) func() bool {
		return func() bool { mu.Lock(); defer mu.Unlock(); return told[c] }
	}
	if err := s.PutMember(ctx, &protocol.Member{Name: "before", Status: protocol.MemberIdle, Since: time.Now()}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 20*time.Second, "the member put before the restart", has(store.Change{Kind: store.ChangeMember, Name: "before"}))

	srv.restart(t, s)
	other := openURL(t, url) // a writer on a connection of its own, maybe before s is back
	r := protocol.NewRequest(protocol.KindShutdown, "sd-after", protocol.Lead, "alice", time.Now(), time.Hour)
	if err := other.CreateRequest(ctx, &r); err != nil {
		t.Fatal(err)
	}
	if err := other.PutMember(ctx, &protocol.Member{Name: "after", Status: protocol.MemberIdle, Since: time.Now()}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 20*time.Second, "the request created after the restart", has(store.Change{Kind: store.ChangeRequest, Name: "sd-after"}))
	testkit.WaitFor(t, 20*time.Second, "the member put after the restart", has(store.Change{Kind: store.ChangeMember, Name: "after"}))
}
