package natsstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"huddle/internal/testtls"
	"huddle/store"
	"huddle/store/natsserver"
	"huddle/store/natsstore"
)

// TestTLSURL: against a server that takes TLS only, a tls:// URL with the
// team's CA (Options.CAFile) connects and works; without the CA the
// certificate is refused, tls:// or nats:// alike; a nats:// URL with the
// CA connects under TLS too (the client takes it up when the server asks
// for it): the connection is never made in the clear, nor to a server
// nobody vouched for.
func TestTLSURL(t *testing.T) {
	caFile, cfg := testtls.Server(t)
	srv, err := natsserver.Start(natsserver.Options{Addr: "127.0.0.1:0", DataDir: t.TempDir(), TLS: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url := "tls://" + srv.Addr() + "/crew"

	s, err := natsstore.Open(ctx, url, natsstore.Options{CAFile: caFile})
	if err != nil {
		t.Fatalf("tls:// with the CA: %v", err)
	}
	defer s.Close()
	if st, err := s.Conn().TLSConnectionState(); err != nil || !st.HandshakeComplete {
		t.Fatalf("the connection is not under TLS: %v", err)
	}
	if err := s.PutConfig(ctx, store.ConfigTeam, []byte(`{"name":"crew"}`)); err != nil {
		t.Fatal(err)
	}
	if b, err := s.Config(ctx, store.ConfigTeam); err != nil || string(b) != `{"name":"crew"}` {
		t.Fatalf("read back over TLS: %q, %v", b, err)
	}

	for _, c := range []struct {
		url  string
		opts natsstore.Options
	}{
		{url, natsstore.Options{}},                              // the system's roots do not vouch for it
		{"nats://" + srv.Addr() + "/crew", natsstore.Options{}}, // taken up to TLS, then the same
	} {
		octx, ocancel := context.WithTimeout(ctx, 10*time.Second)
		s, err := natsstore.Open(octx, c.url, c.opts)
		ocancel()
		if err == nil {
			s.Close()
			t.Fatalf("%s without the CA: opened", c.url)
		}
		if !strings.Contains(err.Error(), "certificate") && !strings.Contains(err.Error(), "tls") && !strings.Contains(err.Error(), "TLS") {
			t.Fatalf("%s without the CA: %v, want a TLS error", c.url, err)
		}
	}

	plain, err := natsstore.Open(ctx, "nats://"+srv.Addr()+"/crew", natsstore.Options{CAFile: caFile})
	if err != nil {
		t.Fatalf("nats:// with the CA: %v", err)
	}
	defer plain.Close()
	if st, err := plain.Conn().TLSConnectionState(); err != nil || !st.HandshakeComplete {
		t.Fatalf("nats:// with the CA is not under TLS: %v", err)
	}
}
