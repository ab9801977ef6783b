package teamdir

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A crash can leave a temp file of every writer; Sweep removes each one and
// leaves the real files, and a temp file young enough to be in use.
func TestSweepRemovesLeftoversOnly(t *testing.T) {
	dir := t.TempDir()
	mk := func(rel string, age time.Duration) string {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), DirMode); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x\n"), FileMode); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(-age)
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
		return p
	}
	old := 2 * SweepAge
	real := []string{
		mk("team.json", old), mk("traces.jsonl", old), mk("executions.jsonl", old), mk("deadletter.jsonl", old),
		mk("runtime.lock", old), mk(".puruto-ipc.json", old),
		mk("inbox/bob.jsonl", old), mk("inbox/bob.cursor", old), mk("inbox/bob.jsonl.prev", old), mk("cursors/bob.cursor", old),
		mk("members/bob.json", old), mk("members/bob.log", old),
		mk("requests/pl-000000000001.json", old), mk("requests/pl-000000000001.decision", old),
		// In use by a writer in another process: too young to be a leftover.
		mk("requests/.tmp-pl-000000000002.json-123", 0),
	}
	// What each writer's temp file is called (one scheme), and the names
	// used before it.
	var leftovers []string
	for _, target := range []string{
		"inbox/bob.cursor", "cursors/bob.cursor", "inbox/bob.jsonl.prev", "members/bob.json", "requests/pl-000000000001.json",
		"requests/pl-000000000001.decision", "executions.jsonl",
	} {
		f, err := func() (*os.File, error) {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, target)), DirMode); err != nil {
				return nil, err
			}
			return CreateTemp(filepath.Join(dir, target))
		}()
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		rel, _ := filepath.Rel(dir, f.Name())
		leftovers = append(leftovers, mk(rel, old))
	}
	leftovers = append(leftovers, mk("inbox/.prev-4242", old), mk("requests/.decision-4242", old), mk(".tmp-99", old))

	if err := Sweep(dir); err != nil {
		t.Fatal(err)
	}
	for _, p := range leftovers {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("leftover %s still there (%v)", p, err)
		}
	}
	for _, p := range real {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("real file %s: %v", p, err)
		}
	}
}

func TestSweepMissingDirectories(t *testing.T) {
	if err := Sweep(filepath.Join(t.TempDir(), "none")); err != nil {
		t.Fatal(err)
	}
}
