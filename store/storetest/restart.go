package storetest

import (
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"huddle/store"
)

// testRestartAsk: a restart is asked of the holder of the member's lease
// only, once while it is not taken, and of two takers on two handles one
// takes it.
func testRestartAsk(t *testing.T, open Opener) {
	ctx := ctxOf(t)
	a, b := open(t), open(t)
	if err := a.AskRestart(ctx, "alice", "lead"); !errors.Is(err, store.ErrNoRuntime) {
		t.Fatalf("ask with no lease held: %v, want ErrNoRuntime", err)
	}
	if err := a.AskRestart(ctx, "../alice", "lead"); err == nil {
		t.Fatal("an invalid name was asked")
	}
	if _, err := a.TakeRestart(ctx, "a/b"); err == nil {
		t.Fatal("an invalid name was taken")
	}
	l, err := b.AcquireLease(ctx, "alice", "host-b", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		if err := a.AskRestart(ctx, "alice", "lead"); err != nil {
			t.Fatalf("round %d: ask: %v", round, err)
		}
		if err := a.AskRestart(ctx, "alice", "lead"); !errors.Is(err, store.ErrExists) {
			t.Fatalf("round %d: second ask: %v, want ErrExists", round, err)
		}
		// bob's lease is not held: alice's ask is no ask of bob.
		if err := a.AskRestart(ctx, "bob", "lead"); !errors.Is(err, store.ErrNoRuntime) {
			t.Fatalf("round %d: ask of bob: %v, want ErrNoRuntime", round, err)
		}
		if ask, err := b.TakeRestart(ctx, "bob"); err != nil || ask != nil {
			t.Fatalf("round %d: take of bob: %q %v, want none", round, ask, err)
		}
		var took atomic.Int32
		var wg sync.WaitGroup
		for _, s := range []store.Store{a, b} {
			wg.Go(func() {
				ask, err := s.TakeRestart(ctx, "alice")
				if err != nil {
					t.Errorf("take: %v", err)
				}
				if ask != nil {
					var v struct{ By string }
					if err := json.Unmarshal(ask, &v); err != nil || v.By != "lead" {
						t.Errorf("the ask taken: %q (%v), want by lead", ask, err)
					}
					took.Add(1)
				}
			})
		}
		wg.Wait()
		if n := took.Load(); n != 1 {
			t.Fatalf("round %d: %d takers took the ask, want 1", round, n)
		}
		if ask, err := b.TakeRestart(ctx, "alice"); err != nil || ask != nil {
			t.Fatalf("round %d: a take after it was taken: %q %v", round, ask, err)
		}
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
