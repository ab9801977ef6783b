package storetest

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"huddle/store"
)

// testLogs: lines appended to a member's log on one handle are followed
// on another as they come, and read back whole, in order, one kind and
// one member apart from the others; a line too long is cut, one without
// a newline gets one.
func testLogs(t *testing.T, open Opener) {
	ctx := ctxOf(t)
	a, b := open(t), open(t)
	if err := b.ReadLog(ctx, "alice", store.LogStderr, false, func([]byte) {}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a log never written: %v, want ErrNotFound", err)
	}
	if err := a.AppendLog(ctx, "../alice", store.LogStderr, [][]byte{[]byte("x\n")}); err == nil {
		t.Fatal("an invalid name was appended to")
	}
	if err := a.AppendLog(ctx, "alice", "stdout", [][]byte{[]byte("x\n")}); err == nil {
		t.Fatal("an invalid kind was appended to")
	}
	if err := b.ReadLog(ctx, "alice", "stdout", false, func([]byte) {}); err == nil {
		t.Fatal("an invalid kind was read")
	}

	var mu sync.Mutex
	var followed []string
	fctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- b.ReadLog(fctx, "alice", store.LogStderr, true, func(l []byte) {
			mu.Lock()
			followed = append(followed, string(l))
			mu.Unlock()
		})
	}()
	long := bytes.Repeat([]byte("x"), store.MaxLogLine+10)
	want := []string{"one\n", "two\n", "no newline\n", string(long[:store.MaxLogLine-len("…\n")]) + "…\n", "last\n"}
	batches := [][][]byte{
		{[]byte("one\n"), []byte("two\n")},
		{[]byte("no newline"), append(long, '\n')},
		{[]byte("last\n")},
	}
	for _, lines := range batches {
		if err := a.AppendLog(ctx, "alice", store.LogStderr, lines); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.AppendLog(ctx, "alice", store.LogTranscript, [][]byte{[]byte(`{"kind":"turn"}` + "\n")}); err != nil {
		t.Fatal(err)
	}
	if err := a.AppendLog(ctx, "bob", store.LogStderr, [][]byte{[]byte("bob's\n")}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the follower to see alice's lines", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(followed) >= len(want)
	})
	stop()
	if err := <-done; err != nil {
		t.Fatalf("follow: %v", err)
	}
	mu.Lock()
	got := followed
	mu.Unlock()
	if strings.Join(got, "") != strings.Join(want, "") {
		t.Fatalf("followed %d lines %.200q, want %.200q", len(got), got, want)
	}
	var read []string
	if err := b.ReadLog(ctx, "alice", store.LogStderr, false, func(l []byte) { read = append(read, string(l)) }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(read, "") != strings.Join(want, "") {
		t.Fatalf("read %d lines %.200q, want %.200q", len(read), read, want)
	}
	var tr []string
	waitFor(t, "alice's transcript", func() bool {
		tr = nil
		err := b.ReadLog(ctx, "alice", store.LogTranscript, false, func(l []byte) { tr = append(tr, string(l)) })
		return err == nil
	})
	if len(tr) != 1 || tr[0] != `{"kind":"turn"}`+"\n" {
		t.Fatalf("alice's transcript: %q", tr)
	}
}
