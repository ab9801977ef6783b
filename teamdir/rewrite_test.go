package teamdir

import (
	"os"
	"path/filepath"
	"testing"
)

// TestReplaceFileModeKeepsTheMode: the file is replaced whole, with the
// mode asked for, and no temp file is left beside it.
func TestReplaceFileModeKeepsTheMode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "lead.json")
	if err := os.WriteFile(path, []byte("[]"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := ReplaceFileMode(path, []byte(`[{"from":"a"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != `[{"from":"a"}]` {
		t.Fatalf("content %q, %v", b, err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v, want 0644", fi.Mode().Perm())
	}
	if err := ReplaceFile(path, []byte("[]")); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("ReplaceFile's mode %v, want CreateTemp's 0600", fi.Mode().Perm())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("left beside it: %v", entries)
	}
}
