package teamdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// SweepAge is how old a temp file must be for Sweep to remove it. A writer
// holds its temp file for milliseconds; one younger than this may belong
// to another process (huddle approve, huddle serve) about to rename it.
const SweepAge = time.Minute

// tempPrefixes are the temp names Sweep removes: the one scheme, and the
// names used before it (.prev-* of a compaction, .decision-* of a claim).
var tempPrefixes = []string{TempPrefix, ".prev-", ".decision-"}

// Sweep removes the temp files a crash left in the team directory and its
// inbox, cursors, members and requests directories: regular files whose name starts
// with a temp prefix and that are older than SweepAge. Real files are never
// touched. A missing directory is not an error.
func Sweep(dir string) error {
	if err := SweepIn(dir, InboxDirPath(dir), CursorsDirPath(dir), MembersDirPath(dir), RequestsDirPath(dir)); err != nil {
		return fmt.Errorf("sweep %s: %w", dir, err)
	}
	return nil
}

// SweepIn is Sweep over the directories dirs, each alone (not what is
// under it).
func SweepIn(dirs ...string) error {
	cutoff := time.Now().Add(-SweepAge)
	var errs []error
	for _, d := range dirs {
		ents, err := os.ReadDir(d)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, e := range ents {
			if !e.Type().IsRegular() || !isTemp(e.Name()) {
				continue
			}
			info, err := e.Info()
			if err != nil || info.ModTime().After(cutoff) {
				continue // gone already, or a writer may still own it
			}
			if err := os.Remove(filepath.Join(d, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func isTemp(name string) bool {
	for _, p := range tempPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
