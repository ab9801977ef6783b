// Package storekinds opens, for a test, a fresh store of each kind huddle
// has: the tests that hold a piece of huddle to the same behaviour on
// both range over Open.
package storekinds

import (
	"context"
	"testing"
	"time"

	"huddle/store"
	"huddle/store/filestore"
	"huddle/store/natsserver"
	"huddle/store/natsstore"
)

// Open opens a fresh, empty store of each kind, closed when the test ends:
// "files" on a team directory of its own, "nats" on an embedded NATS
// server of its own, team "crew".
var Open = map[string]func(t *testing.T) store.Store{
	"files": func(t *testing.T) store.Store {
		st, err := filestore.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	},
	"nats": func(t *testing.T) store.Store {
		srv, err := natsserver.Start(natsserver.Options{Addr: "127.0.0.1:0", DataDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Shutdown)
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		st, err := natsstore.Open(ctx, srv.URL("crew"), natsstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	},
}
