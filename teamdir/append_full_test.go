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

// fullDisk is a place whose next write of more than a page goes in
// part-way and fails, as on a full disk: a 64 KiB tmpfs filled to its last
// free page (ENOSPC), or, where this process may not mount one (not root),
// a file size limit one page past the file's size (RLIMIT_FSIZE: EFBIG;
// Go ignores SIGXFSZ). It returns the directory, a func that makes the
// disk full once the file in it is written, and the error to expect; the
// space comes back when that func's own result is called.
func fullDisk(t *testing.T) (dir string, full func(file string) (free func()), want error) {
	t.Helper()
	dir = t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"); err != nil {
		t.Logf("no tmpfs (%v): a file size limit stands for the full disk", err)
		return dir, func(file string) func() {
			st, err := os.Stat(file)
			if err != nil {
				t.Fatal(err)
			}
			var old syscall.Rlimit
			if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: uint64(st.Size()) + 4096, Max: old.Max}); err != nil {
				t.Fatal(err)
			}
			return func() { _ = syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old) }
		}, syscall.EFBIG
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmounting the tmpfs: %v", err)
		}
	})
	return dir, func(string) func() {
		filler := fill(t, dir)
		return func() {
			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
		}
	}, syscall.ENOSPC
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
	dir, full, want := fullDisk(t)
	path := filepath.Join(dir, "inbox.jsonl")
	before := []byte("{\"n\":1}\n{\"n\":2}\n")
	if err := os.WriteFile(path, before, FileMode); err != nil {
		t.Fatal(err)
	}
	free := full(path)
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
		if !errors.Is(err, want) || !strings.Contains(err.Error(), want.Error()) {
			t.Errorf("%s on a full disk: %v, want %v", name, err, want)
		}
		if got, _ := os.ReadFile(path); !bytes.Equal(got, before) {
			t.Fatalf("%s on a full disk left %d bytes (%q…), want the %d it held", name, len(got), got[:min(len(got), 40)], len(before))
		}
	}
	free()
	line := []byte("{\"n\":3}\n")
	if err := a.Append(line); err != nil {
		t.Fatalf("an append once there is room: %v", err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, append(before, line...)) {
		t.Errorf("after the disk had room again: %q", got)
	}
}
