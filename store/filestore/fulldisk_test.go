package filestore

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/protocol"
	"huddle/store"
)

// TestCommitOnAFullDiskRedeliversMarkedAndSaysItOnce: a team directory on
// a full tmpfs, where the message is in the inbox but the cursor cannot be
// committed. The message is handed again, each time after the first marked
// a redelivery, the failure said once however many retries; once space is freed the commit goes in, that is said,
// and nothing is handed again.
func TestCommitOnAFullDiskRedeliversMarkedAndSaysItOnce(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=256k"); err != nil {
		t.Skipf("this test needs a tmpfs, which this process may not mount: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmounting the tmpfs: %v", err)
		}
	})
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var mu sync.Mutex
	var warned []string
	var handed []store.Delivery
	s.SetWarn(func(member string, err error) {
		mu.Lock()
		defer mu.Unlock()
		warned = append(warned, err.Error())
	})
	ctx := context.Background()
	m := protocol.NewMessage(protocol.TypeMessage, protocol.Lead, "worker")
	m.Content = "the one message"
	if err := s.Append(ctx, "worker", &m); err != nil {
		t.Fatal(err)
	}
	// The disk is full to its last page: the cursor journal, not yet
	// written, has no room for its first record.
	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	page := bytes.Repeat([]byte{'x'}, 4096)
	for {
		if _, err := f.Write(page); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	f.Close()

	sub, err := s.Consume(ctx, "worker", func(_ context.Context, d store.Delivery) error {
		mu.Lock()
		defer mu.Unlock()
		handed = append(handed, d)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	snapshot := func() ([]store.Delivery, []string) {
		mu.Lock()
		defer mu.Unlock()
		return append([]store.Delivery(nil), handed...), append([]string(nil), warned...)
	}
	testkit.WaitFor(t, 30*time.Second, "the message handed again after a failed commit", func() bool {
		h, _ := snapshot()
		return len(h) >= 3
	})
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, time.Minute, "the commit going in once space is freed", func() bool {
		_, w := snapshot()
		return len(w) > 0 && w[len(w)-1] == "cursor commits work again"
	})
	h, w := snapshot()
	first := 0
	for i, d := range h {
		if d.Msg.ID != m.ID {
			continue
		}
		first++
		if (i == 0) == d.Redelivery {
			t.Errorf("hand-out %d of the message: redelivery %v, want %v", i+1, d.Redelivery, i > 0)
		}
	}
	if first < 3 {
		t.Errorf("the message was handed %d times, want at least 3 (one, then the retries)", first)
	}
	failures := 0
	for _, x := range w {
		if strings.HasPrefix(x, "committing the cursor after "+m.ID+" failed") {
			failures++
		}
	}
	if failures != 1 {
		t.Errorf("the failing commit was said %d times, want once: %q", failures, w)
	}
	// Nothing is handed again once the commit went in.
	after := len(h)
	last := protocol.NewMessage(protocol.TypeMessage, protocol.Lead, "worker")
	last.Content = "after the space was freed"
	if err := s.Append(ctx, "worker", &last); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 30*time.Second, "the message after the space was freed", func() bool {
		h, _ := snapshot()
		return len(h) > after && h[len(h)-1].Msg.ID == last.ID
	})
	h, _ = snapshot()
	for _, d := range h[after:] {
		if d.Msg.ID == m.ID {
			t.Errorf("the first message handed again after its commit went in")
		}
		if d.Msg.ID == last.ID && d.Redelivery {
			t.Errorf("the message after the space was freed is marked a redelivery")
		}
	}
}
