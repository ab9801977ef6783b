package view

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"huddle/store"
	"huddle/store/filestore"
)

// TestFollowStoreReadsFollowsAndEnds: a store's copy of a log is read
// from its start, in order (what no Next took yet is cut to the newest
// keep lines), a line appended later comes with the next Next, and Close
// ends a Next that waits with io.EOF.
func TestFollowStoreReadsFollowsAndEnds(t *testing.T) {
	st, err := filestore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var lines [][]byte
	for i := range 10 {
		lines = append(lines, fmt.Appendf(nil, "line %d\n", i))
	}
	if err := st.AppendLog(ctx, "alice", store.LogStderr, lines); err != nil {
		t.Fatal(err)
	}
	s := FollowStore(st, "alice", store.LogStderr, 3)
	var got []string
	for len(got) == 0 || got[len(got)-1] != "line 9\n" {
		b, err := s.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 3 {
			t.Fatalf("one Next gave %d lines, more than the 3 kept", len(b))
		}
		for _, l := range b {
			got = append(got, string(l))
		}
	}
	// In order; what a slow taker lost is older lines, so the last three
	// (keep) are the last three written.
	prev := -1
	for _, l := range got {
		var n int
		if _, err := fmt.Sscanf(l, "line %d\n", &n); err != nil || n <= prev {
			t.Fatalf("got %q, want lines in order", got)
		}
		prev = n
	}
	if len(got) < 3 || got[len(got)-3] != "line 7\n" || got[len(got)-2] != "line 8\n" {
		t.Fatalf("got %q, want the newest three lines at the end", got)
	}
	if err := st.AppendLog(ctx, "alice", store.LogStderr, [][]byte{[]byte("later\n")}); err != nil {
		t.Fatal(err)
	}
	b, err := s.Next(ctx)
	if err != nil || len(b) != 1 || string(b[0]) != "later\n" {
		t.Fatalf("the line appended later: %q %v", b, err)
	}
	next := make(chan error, 1)
	go func() {
		_, err := s.Next(ctx)
		next <- err
	}()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-next; !errors.Is(err, io.EOF) {
		t.Fatalf("a Next waiting when closed: %v, want io.EOF", err)
	}
	<-s.Done()
}
