package natsstore_test

import (
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
)

// startTokenServer runs a server with JetStream that wants token, on a
// free loopback port, and returns its HOST:PORT.
func startTokenServer(t *testing.T, token string) string {
	t.Helper()
	ns, err := natsserver.NewServer(&natsserver.Options{
		Host: "127.0.0.1", Port: natsserver.RANDOM_PORT, JetStream: true, StoreDir: t.TempDir(),
		Authorization: token, NoSigs: true, NoLog: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("token server did not start")
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	return ns.Addr().String()
}
