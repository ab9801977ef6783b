package natsstore

import (
	"context"
	"testing"
	"time"

	"huddle/protocol"
	"huddle/store"

	"huddle/store/natsserver"
)

// TestArchivedRequestsLeaveTheLiveKeys: the live listing costs one read per
// key under req., so an archived record must leave req. altogether — its
// purge marker too, once the server expires it — or every tick of every
// runtime would read the team's whole history again.
func TestArchivedRequestsLeaveTheLiveKeys(t *testing.T) {
	srv, err := natsserver.Start(natsserver.Options{Addr: "127.0.0.1:0", DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	ctx := context.Background()
	s, err := Open(ctx, srv.URL("crew"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 20
	var ids []string
	for range n {
		r := protocol.NewRequest(protocol.KindPlan, protocol.NewRequestID(protocol.KindPlan), "alice", protocol.Lead, time.Now(), time.Hour)
		r.Plan = "p"
		if err := s.CreateRequest(ctx, &r); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Decide(ctx, r.ID, store.Decision{Event: protocol.EventApprove, By: protocol.Lead}); err != nil {
			t.Fatal(err)
		}
		if err := s.Archive(ctx, r.ID); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		keys, err := s.keys(ctx, keyRequest)
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d archived requests still under %s: %v", len(keys), n, keyRequest, keys[:min(3, len(keys))])
		}
		time.Sleep(20 * time.Millisecond) // polling a condition the server's expiry makes true
	}
	all, _, err := s.Requests(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != n {
		t.Fatalf("%d requests listed after the archive, want %d", len(all), n)
	}
	for _, id := range ids {
		if r, err := s.Request(ctx, id); err != nil || r.Status != protocol.RequestApproved {
			t.Fatalf("%s after the archive: %+v, %v", id, r, err)
		}
	}
}
