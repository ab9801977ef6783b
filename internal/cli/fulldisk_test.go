package cli

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestStatusSaysTheDiskIsFull: huddle status on a team directory whose
// disk is full says so, on stderr and above the table, and stops saying it
// once space is freed.
func TestStatusSaysTheDiskIsFull(t *testing.T) {
	root := t.TempDir()
	if err := syscall.Mount("tmpfs", root, "tmpfs", 0, "size=2m"); err != nil {
		t.Skipf("this test needs a tmpfs, which this process may not mount: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(root, 0); err != nil {
			t.Errorf("unmounting the tmpfs: %v", err)
		}
	})
	dir := filepath.Join(root, ".huddle")
	mustHuddle(t, "init", "--dir", dir)
	if r := huddle(t, "status", "--dir", dir).wantOK(t, "status with room"); strings.Contains(r.stdout+r.stderr, "disk is full") {
		t.Fatalf("status says the disk is full with room on it:\n%s%s", r.stdout, r.stderr)
	}
	filler := filepath.Join(root, "filler")
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
	r := huddle(t, "status", "--dir", dir)
	if r.code != ExitOK || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("status on a full disk: exit %d, stderr %q; want 0 and one warning line", r.code, r.stderr)
	}
	const said = "the team directory's disk is full"
	if !strings.Contains(r.stderr, "huddle: status: warning: "+said) || !strings.Contains(r.stdout, said) {
		t.Errorf("status on a full disk does not say so:\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if r := huddle(t, "status", "--dir", dir).wantOK(t, "status once space is freed"); strings.Contains(r.stdout+r.stderr, said) {
		t.Errorf("status still says the disk is full once space is freed:\n%s%s", r.stdout, r.stderr)
	}
}
