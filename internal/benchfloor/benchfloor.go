// Package benchfloor holds the physical floors that benchmarks in several
// packages measure beside what they time (docs/PERFORMANCE.md): an fsync
// of a small file on a real disk, and the percentiles they report.
package benchfloor

import (
	"os"
	"slices"
	"syscall"
	"testing"
	"time"
)

// RealDiskDir is a temp directory on a disk an fsync has to reach: the
// benchmark's own when it is not tmpfs, else one under the home directory
// (removed at the end). It skips the benchmark when there is none.
func RealDiskDir(tb testing.TB) string {
	dir := tb.TempDir()
	if !onTmpfs(dir) {
		return dir
	}
	home, err := os.UserHomeDir()
	if err != nil {
		tb.Fatal(err)
	}
	dir, err = os.MkdirTemp(home, "huddle-bench-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	if onTmpfs(dir) {
		tb.Skip("no real disk: both the temp and the home directory are tmpfs")
	}
	return dir
}

// onTmpfs tells whether dir is on a tmpfs, whose fsync reaches no disk.
func onTmpfs(dir string) bool {
	const tmpfsMagic = 0x01021994
	var st syscall.Statfs_t
	return syscall.Statfs(dir, &st) == nil && st.Type == tmpfsMagic
}

// Fsync creates path, writes data, fsyncs and closes it, and returns how
// long that took; the file is removed untimed.
func Fsync(tb testing.TB, path string, data []byte) time.Duration {
	t0 := time.Now()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		tb.Fatal(err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	d := time.Since(t0)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		tb.Fatal(err)
	}
	return d
}

// Percentiles sorts d and returns its median and 99th percentile.
func Percentiles(d []time.Duration) (p50, p99 time.Duration) {
	slices.Sort(d)
	return d[len(d)/2], d[min(len(d)-1, len(d)*99/100)]
}
