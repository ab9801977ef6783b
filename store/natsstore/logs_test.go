package natsstore_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"huddle/internal/testkit"
	"huddle/store"
)

// TestAppendLogNeverWaitsOnAServerAway: with the server gone, AppendLog
// returns at once while the connection's reconnect buffer takes the
// lines, and with an error (the lines dropped) once it is full; it never
// waits for the server. When the server is back, the log goes on.
func TestAppendLogNeverWaitsOnAServerAway(t *testing.T) {
	r := startRestartable(t)
	s := openURL(t, r.srv.URL("logs"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.AppendLog(ctx, "alice", store.LogStderr, [][]byte{[]byte("before\n")}); err != nil {
		t.Fatal(err)
	}
	// No ack is awaited: the line is stored once a read finds it.
	testkit.WaitFor(t, 20*time.Second, "the line before the outage stored", func() bool {
		return s.ReadLog(ctx, "alice", store.LogStderr, false, func([]byte) {}) == nil
	})
	r.stop(t, s)

	// 64 KiB of lines a call: the 8 MiB buffer is full within 200 calls.
	batch := bytes.Repeat([]byte(strings.Repeat("x", 1023)+"\n"), 63)
	done := make(chan int, 1)
	go func() {
		for i := range 1000 {
			if err := s.AppendLog(ctx, "alice", store.LogStderr, [][]byte{batch}); err != nil {
				done <- i
				return
			}
		}
		done <- -1
	}()
	var stored int
	select {
	case stored = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("AppendLog waited on the server that is away")
	}
	if stored <= 0 {
		t.Fatalf("AppendLog refused nothing with the server away (%d), or refused the first batch", stored)
	}

	r.start(t)
	testkit.WaitFor(t, 20*time.Second, "the store to reconnect", func() bool { return s.Conn().Status() == nats.CONNECTED })
	if err := s.AppendLog(ctx, "alice", store.LogStderr, [][]byte{[]byte("after\n")}); err != nil {
		t.Fatal(err)
	}
	var first, last string
	testkit.WaitFor(t, 20*time.Second, "the line appended after the server came back", func() bool {
		first, last = "", ""
		err := s.ReadLog(ctx, "alice", store.LogStderr, false, func(l []byte) {
			if first == "" {
				first = string(l)
			}
			last = string(l)
		})
		return err == nil && last == "after\n"
	})
	if first != "before\n" {
		t.Fatalf("the log starts with %.40q, want the line stored before the outage", first)
	}
}
