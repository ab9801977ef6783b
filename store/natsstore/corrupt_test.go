package natsstore

import (
	"testing"

	"huddle/store"
	"huddle/store/storetest"

	"huddle/store/natsserver"
)

// TestCorruptRecordsNamed holds the NATS store to storetest.RunCorrupt: a
// value a foreign writer put under a record's key is named, not left out.
func TestCorruptRecordsNamed(t *testing.T) {
	srv, err := natsserver.Start(natsserver.Options{Addr: "127.0.0.1:0", DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	s, err := Open(t.Context(), srv.URL("crew"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storetest.RunCorrupt(t, s, func(t *testing.T, kind store.ChangeKind, name string) {
		key := keyMember + token(name)
		if kind == store.ChangeRequest {
			key = keyRequest + token(name)
		}
		if _, err := s.kv.Put(t.Context(), key, []byte(`{"id": "torn`)); err != nil {
			t.Fatal(err)
		}
	})
}
