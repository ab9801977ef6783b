package team

import (
	"context"
	"errors"
	"testing"
	"time"

	"huddle/internal/testkit/files"
	"huddle/protocol"
)

// TestWaitRequestSeesTheDecision: a wait started before the decision
// returns the decided record; one on a decided (and archived) request
// returns at once; ctx ends a wait on a pending one.
func TestWaitRequestSeesTheDecision(t *testing.T) {
	dir := t.TempDir()
	r := protocol.NewRequest(protocol.KindPlan, "pl-waitwaitwait", "alice", protocol.Lead, time.Now(), time.Hour)
	r.Plan = "p"
	mustCreate(t, dir, &r)
	got := make(chan *protocol.Request, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	go func() { // owner: this test; ends with the decision or ctx
		rec, err := dirWaitRequest(ctx, dir, r.ID)
		if err != nil {
			t.Error(err)
		}
		got <- rec
	}()
	if _, err := dirDecide(dir, r.ID, protocol.EventApprove, `say "ok"`, protocol.Lead); err != nil {
		t.Fatal(err)
	}
	if rec := <-got; rec == nil || rec.Status != protocol.RequestApproved || rec.Feedback != `say "ok"` {
		t.Fatalf("waited for %+v", rec)
	}
	if err := files.Open(t, dir).Archive(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	if rec, err := dirWaitRequest(ctx, dir, r.ID); err != nil || rec.Status != protocol.RequestApproved {
		t.Fatalf("archived: %+v %v", rec, err)
	}

	p := protocol.NewRequest(protocol.KindPlan, "pl-stillpending", "alice", protocol.Lead, time.Now(), time.Hour)
	p.Plan = "p"
	mustCreate(t, dir, &p)
	short, stop := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer stop()
	if _, err := dirWaitRequest(short, dir, p.ID); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a pending request past ctx: %v", err)
	}
	if _, err := dirWaitRequest(ctx, dir, "../x"); err == nil {
		t.Fatal("a bad id was waited for")
	}
}
