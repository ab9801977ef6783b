package teamdir

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// smallDisk mounts a 64 KiB tmpfs on a directory of the test's and
// returns it; the mount goes when the test ends. A machine where this
// process may not mount fails the test, saying so: the full disk is
// real, not injected.
func smallDisk(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"); err != nil {
		t.Fatalf("mounting a 64 KiB tmpfs (the test needs root or CAP_SYS_ADMIN): %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmounting the tmpfs: %v", err)
		}
	})
	return dir
}

// fill writes a file on the disk of dir until the disk is full, then frees
// one page, so the next write of more than a page goes in part-way and
// fails; it returns the file, to remove to free the disk.
func fill(t *testing.T, dir string) string {
	t.Helper()
	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	page := bytes.Repeat([]byte{'x'}, 4096)
	for {
		if _, err := f.Write(page); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(st.Size() - 4096); err != nil {
		t.Fatal(err)
	}
	return filler
}

// TestAppendOnAFullDiskLeavesTheFileAsItWas: an append the disk has room
// for only part of fails, saying the disk is full, and the file holds what
// it held before, byte for byte, for AppendLine and for an Appender; once
// there is room again the next append goes in whole after it, no torn
// line between.
func TestAppendOnAFullDiskLeavesTheFileAsItWas(t *testing.T) {
	dir := smallDisk(t)
	path := filepath.Join(dir, "inbox.jsonl")
	before := []byte("{\"n\":1}\n{\"n\":2}\n")
	if err := os.WriteFile(path, before, FileMode); err != nil {
		t.Fatal(err)
	}
	filler := fill(t, dir)
	big := append(bytes.Repeat([]byte{'y'}, 12<<10), '\n') // three pages: one fits
	a, err := OpenAppender(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for name, appendBig := range map[string]func() error{
		"AppendLine": func() error { return AppendLine(path, big) },
		"Appender":   func() error { return a.Append(big) },
	} {
		err := appendBig()
		if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "no space left") {
			t.Errorf("%s on a full disk: %v, want ENOSPC", name, err)
		}
		if got, _ := os.ReadFile(path); !bytes.Equal(got, before) {
			t.Fatalf("%s on a full disk left %d bytes (%q…), want the %d it held", name, len(got), got[:min(len(got), 40)], len(before))
		}
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	line := []byte("{\"n\":3}\n")
	if err := a.Append(line); err != nil {
		t.Fatalf("an append once there is room: %v", err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, append(before, line...)) {
		t.Errorf("after the disk had room again: %q", got)
	}
}
