package natsstore_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"huddle/store"
	"huddle/store/natsserver"
	"huddle/store/natsstore"
	"huddle/store/storetest"
)

// server is one embedded server for the package's tests; each test gets a
// team (streams and bucket) of its own on it.
var server *natsserver.Server

func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		os.Exit(playRole(role))
	}
	dir, err := os.MkdirTemp("", "natsstore-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	server, err = natsserver.Start(natsserver.Options{Addr: "127.0.0.1:0", DataDir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	server.Shutdown()
	os.RemoveAll(dir)
	os.Exit(code)
}

var teams atomic.Int64

// testOptions keep redeliveries after a lost ack short.
var testOptions = natsstore.Options{AckWait: 5 * time.Second}

func openURL(t *testing.T, url string) *natsstore.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	s, err := natsstore.Open(ctx, url, testOptions)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func factory(t *testing.T) storetest.Opener {
	url := server.URL(fmt.Sprintf("t%d", teams.Add(1)))
	return func(t *testing.T) store.Store { return openURL(t, url) }
}

// TestContract holds the NATS store to the store contract.
func TestContract(t *testing.T) { storetest.Run(t, factory) }
