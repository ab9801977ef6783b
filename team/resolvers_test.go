package team

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"

	"huddle/protocol"
	"huddle/store"
	"huddle/teamdir"
)

// dotFiles lists the temp files in one of the team directory's folders.
func dotFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestConcurrentResolversLeaveNoTempFile: many resolvers of one request
// at once: one wins, the rest are told who did, the record is the
// winner's, and requests/ holds no temp file left behind.
func TestConcurrentResolversLeaveNoTempFile(t *testing.T) {
	dir := t.TempDir()
	r := planRequest("pl-0123456789ab", "reservas", testTime)
	mustCreate(t, dir, r)
	const n = 8
	var wg sync.WaitGroup
	won := make(chan *protocol.Request, n)
	lost := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			ev := protocol.EventApprove
			if i%2 == 1 {
				ev = protocol.EventReject
			}
			got, err := Resolve(dir, r.ID, Resolution{Event: ev, By: "r" + string(rune('0'+i)), Text: "because"})
			if err != nil {
				lost <- err
				return
			}
			won <- got
		})
	}
	wg.Wait()
	close(won)
	close(lost)
	var winners []*protocol.Request
	for w := range won {
		winners = append(winners, w)
	}
	if len(winners) != 1 {
		t.Fatalf("%d resolvers won, want 1", len(winners))
	}
	for err := range lost {
		var already *store.AlreadyError
		if !errors.As(err, &already) || already.By != winners[0].ResolvedBy {
			t.Fatalf("a losing resolver got %v, want already %s by %s", err, winners[0].Status, winners[0].ResolvedBy)
		}
	}
	onDisk, err := LoadRequest(dir, r.ID)
	if err != nil || !reflect.DeepEqual(onDisk, winners[0]) {
		t.Fatalf("record on disk %+v (%v), want the winner's %+v", onDisk, err, winners[0])
	}
	if got := dotFiles(t, teamdir.RequestsDirPath(dir)); len(got) != 0 {
		t.Fatalf("requests/ holds %v", got)
	}
}
