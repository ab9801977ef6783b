package storetest

import (
	"slices"
	"sync"
	"testing"
	"time"

	"huddle/protocol"
	"huddle/store"
)

// changes records what a watch told, safe for its goroutine and the test's.
type changes struct {
	mu  sync.Mutex
	got []store.Change
}

func (c *changes) add(ch store.Change) { c.mu.Lock(); c.got = append(c.got, ch); c.mu.Unlock() }

// told reports whether a change of kind name was told (or one of any of
// its kind, which stands for it).
func (c *changes) told(kind store.ChangeKind, name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ch := range c.got {
		if ch.Kind == kind && (ch.Name == name || ch.Name == "") {
			return true
		}
	}
	return false
}

// testWatch: a watch on one handle is told of every kind of change made on
// another: a request created, a request decided, a member's record put for
// the first time and rewritten, a heartbeat. Each change is made to a
// record no other step touches since the watch started, so a change that
// is not told fails its step (it cannot be stood in for by another's).
func testWatch(t *testing.T, open Opener) {
	ctx := ctxOf(t)
	watcher, writer := open(t), open(t)
	decided := newPlan(t, "alice")
	if err := writer.CreateRequest(ctx, decided); err != nil {
		t.Fatal(err)
	}
	since := time.Now().UTC()
	for _, name := range []string{"beating", "moving"} {
		if err := writer.PutMember(ctx, &protocol.Member{Name: name, Status: protocol.MemberWorking, Since: since}); err != nil {
			t.Fatal(err)
		}
	}
	var c, onlyRequests changes
	sub, err := watcher.Watch(ctx, c.add)
	if err != nil {
		t.Fatal(err)
	}
	stopAtEnd(t, sub)
	sub, err = watcher.Watch(ctx, onlyRequests.add, store.ChangeRequest)
	if err != nil {
		t.Fatal(err)
	}
	stopAtEnd(t, sub)

	created := newPlan(t, "bob")
	if err := writer.CreateRequest(ctx, created); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the new request told", func() bool { return c.told(store.ChangeRequest, created.ID) })
	if _, err := writer.Decide(ctx, decided.ID, store.Decision{Event: protocol.EventApprove, By: protocol.Lead}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the decision told", func() bool { return c.told(store.ChangeRequest, decided.ID) })
	if r, err := watcher.Request(ctx, decided.ID); err != nil || r.Status != protocol.RequestApproved {
		t.Fatalf("the decided request read after its change: %+v, %v", r, err)
	}
	if err := writer.PutMember(ctx, &protocol.Member{Name: "newcomer", Status: protocol.MemberStarting, Since: since}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the new member told", func() bool { return c.told(store.ChangeMember, "newcomer") })
	if err := writer.PutMember(ctx, &protocol.Member{Name: "moving", Status: protocol.MemberIdle, Since: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the member's move told", func() bool { return c.told(store.ChangeMember, "moving") })
	if err := writer.Heartbeat(ctx, "beating"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the heartbeat told", func() bool { return c.told(store.ChangeMember, "beating") })
	if _, err := writer.AcquireLease(ctx, "restartee", "test", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := writer.AskRestart(ctx, "restartee", protocol.Lead); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the restart asked told", func() bool { return c.told(store.ChangeRestart, "restartee") })

	// The watch of requests alone: told of both requests, the last one
	// marking that what came before it has been told, and of nothing
	// else.
	last := newPlan(t, "carol")
	if err := writer.CreateRequest(ctx, last); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the last request told to the watch of requests", func() bool { return onlyRequests.told(store.ChangeRequest, last.ID) })
	if !onlyRequests.told(store.ChangeRequest, created.ID) || !onlyRequests.told(store.ChangeRequest, decided.ID) {
		t.Fatal("the watch of requests missed a request")
	}
	for _, w := range []*changes{&c, &onlyRequests} {
		w.mu.Lock()
		for _, ch := range w.got {
			if !slices.Contains(store.ChangeKinds, ch.Kind) || (w == &onlyRequests && ch.Kind != store.ChangeRequest) {
				t.Errorf("a change of another kind: %+v", ch)
			}
		}
		w.mu.Unlock()
	}
}
