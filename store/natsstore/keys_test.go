package natsstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"huddle/protocol"

	"huddle/store/natsserver"
)

// TestKeysListedUnderRewrites: members heartbeat and move status all the
// time, so a listing runs beside rewrites of the keys it lists; every
// listing must hold every member (a key listing by consumer missed about
// one in twenty here).
func TestKeysListedUnderRewrites(t *testing.T) {
	srv, err := natsserver.Start(natsserver.Options{Addr: "127.0.0.1:0", DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	ctx := context.Background()
	w, err := Open(ctx, srv.URL("crew"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r, err := Open(ctx, srv.URL("crew"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	names := []string{"alice", "bob", "carol", "dave"}
	for _, n := range names {
		if err := w.PutMember(ctx, &protocol.Member{Name: n, Status: protocol.MemberWorking, Since: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		i := 0
		for {
			select {
			case <-stop:
				return
			default:
			}
			n := names[i%len(names)]
			i++
			if i%2 == 0 {
				_ = w.Heartbeat(ctx, n)
			} else {
				_ = w.PutMember(ctx, &protocol.Member{Name: n, Status: protocol.MemberIdle, Since: time.Now(), Activity: fmt.Sprint(i)})
			}
		}
	}()
	defer func() { close(stop); <-done }()
	missing := 0
	for i := 0; i < 500; i++ {
		ms, _, err := r.Members(ctx, time.Minute)
		if err != nil {
			t.Logf("err %v", err)
			missing++
			continue
		}
		if len(ms) != len(names) {
			missing++
			if missing < 5 {
				t.Logf("round %d: %d members", i, len(ms))
			}
		}
	}
	if missing > 0 {
		t.Fatalf("%d of 500 listings missed a member", missing)
	}
}
