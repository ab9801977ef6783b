package llm

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSymlinkFlippedFromOutsideNeverEscapes races write_file and read_file
// against a process outside the tools that swaps the member's sub/, a real
// directory, with a symlink to a directory outside (renameat2
// RENAME_EXCHANGE, atomically), thousands of times: no write lands outside
// and no read returns the outside file, whatever the interleaving.
func TestSymlinkFlippedFromOutsideNeverEscapes(t *testing.T) {
	const tries = 4000
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("OUTSIDE-SECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := newToolAgent(t, nil)
	sub, swap := filepath.Join(a.dir, "sub"), filepath.Join(a.dir, "swap")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "secret"), []byte("inside"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, swap); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var flipper sync.WaitGroup
	flipper.Add(1)
	go func() {
		defer flipper.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := unix.Renameat2(unix.AT_FDCWD, sub, unix.AT_FDCWD, swap, unix.RENAME_EXCHANGE); err != nil {
				t.Errorf("flip: %v", err)
				return
			}
		}
	}()
	ctx := context.Background()
	var wrote, read int
	for i := range tries {
		args, _ := json.Marshal(map[string]string{"path": "sub/f", "content": "payload"})
		a.runTool(ctx, call("w", "write_file", string(args)))
		if _, err := os.Lstat(filepath.Join(outside, "f")); err == nil {
			wrote++
			_ = os.Remove(filepath.Join(outside, "f"))
		}
		text, _, _ := a.runTool(ctx, call("r", "read_file", `{"path":"sub/secret"}`))
		if strings.Contains(text, "OUTSIDE-SECRET") {
			read++
		}
		if i%500 == 0 && t.Failed() {
			break
		}
	}
	close(stop)
	flipper.Wait()
	t.Logf("%d tries: %d writes and %d reads escaped", tries, wrote, read)
	if wrote > 0 || read > 0 {
		t.Errorf("a symlink flipped from outside let %d of %d writes and %d of %d reads escape the member's directory", wrote, tries, read, tries)
	}
}
