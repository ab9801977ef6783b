package teamdir

import (
	"errors"
	"os"
	"syscall"
)

// OpenRead opens the file at path to read it (flag adds to it: os.O_RDWR
// for a reader that also truncates), asking the kernel not to update the
// file's access time. Under relatime, the default mount option, the first
// read after each write would update it: every delivery of a message is
// such a read, and the update dirties the inode, costing the reader about
// a microsecond and a half in a delivery's path (BenchmarkDelivery…) and
// the disk a write-back of the inode, for a time nobody reads. Only the
// file's owner, or a process with CAP_FOWNER, may ask (O_NOATIME); for
// anyone else the file is opened as usual.
func OpenRead(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOATIME, 0)
	if errors.Is(err, syscall.EPERM) {
		return os.OpenFile(path, flag, 0)
	}
	return f, err
}
