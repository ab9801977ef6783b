package teamdir

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// TempPrefix starts the name of every temp file in a team directory: the
// temp file of X is .tmp-<base of X>-<random>, in X's directory. Readers
// skip names that start with a dot; Sweep removes what a crash leaves.
const TempPrefix = ".tmp-"

// CreateTemp creates the temp file that will become path (mode 0600), in
// path's directory so that a rename or link into place stays on one file
// system. It opens with open(2) and wraps the descriptor (os.NewFile):
// os.OpenFile would also try to add a regular file to Go's poller, which
// refuses it, four fcntl and an epoll_ctl each time for nothing.
func CreateTemp(path string) (*os.File, error) {
	dir, base := filepath.Dir(path), TempPrefix+filepath.Base(path)+"-"
	for range 10000 {
		name := filepath.Join(dir, base+strconv.FormatUint(uint64(rand.Uint32()), 10))
		fd, err := openExclusive(name)
		if errors.Is(err, syscall.EEXIST) {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "createtemp", Path: name, Err: err}
		}
		return os.NewFile(uintptr(fd), name), nil
	}
	return nil, &fs.PathError{Op: "createtemp", Path: filepath.Join(dir, base+"*"), Err: fs.ErrExist}
}

func openExclusive(name string) (int, error) {
	for {
		fd, err := syscall.Open(name, syscall.O_RDWR|syscall.O_CREAT|syscall.O_EXCL|syscall.O_CLOEXEC, FileMode)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

// WriteFileAtomic writes data to path by write-temp + fsync + rename, the
// way every whole-file rewrite in a team directory is made (docs/ARCHITECTURE.md, "The team directory and the store").
func WriteFileAtomic(path string, data []byte) error { return replaceFile(path, data, true, 0) }

// ReplaceFile writes data to path by write-temp + rename, without the fsync:
// a reader never sees a torn file and a process crash loses nothing, but
// after a power loss the file may hold an older version. For records that
// are rewritten all the time and rebuilt on start (a member's live status).
func ReplaceFile(path string, data []byte) error { return replaceFile(path, data, false, 0) }

// ReplaceFileMode is ReplaceFile leaving path with the mode mode: a file
// another program owns keeps its mode (a Claude Code inbox).
func ReplaceFileMode(path string, data []byte, mode os.FileMode) error {
	return replaceFile(path, data, false, mode)
}

// replaceFile writes data to a temp file beside path, fsync'd when sync,
// with mode when it is not 0 (CreateTemp's 0600 otherwise), and renames it
// over path.
func replaceFile(path string, data []byte, sync bool, mode os.FileMode) error {
	tmp, err := CreateTemp(path)
	if err != nil {
		return err
	}
	// Removed only when it did not become path: a removal of a name the
	// rename took already fails, but it still locks the directory, which
	// every writer of a busy directory (members/) waits on.
	renamed := false
	defer func() {
		if !renamed {
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if mode != 0 {
		if err := tmp.Chmod(mode); err != nil {
			tmp.Close()
			return err
		}
	}
	if sync {
		if err := tmp.Sync(); err != nil {
			tmp.Close()
			return err
		}
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	// rename(2) itself: os.Rename first stats the target, to refuse a
	// directory, which rename(2) refuses anyway.
	if err := syscall.Rename(tmp.Name(), path); err != nil {
		return &os.LinkError{Op: "rename", Old: tmp.Name(), New: path, Err: err}
	}
	renamed = true
	return nil
}

// LinkExclusive creates path holding data, or reports false when path
// already exists. The data is written to a temp file, fsync'd and linked
// into place, and the directory is fsync'd so the name outlives a power
// loss: creation is exclusive, as with O_EXCL, but the file is never seen
// empty, neither by a racing writer nor after a crash. How the first
// resolver of a request wins (requests/<id>.decision). An error after the
// link reports true: the file is there, its durability is what failed.
func LinkExclusive(path string, data []byte) (bool, error) {
	tmp, err := CreateTemp(path)
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write(data)
	if serr := tmp.Sync(); werr == nil {
		werr = serr
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return false, werr
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return false, nil
		}
		return false, err
	}
	// The fsync above made the data durable, not the new name: until the
	// directory is synced, a power loss can take the link back, and with
	// it a decision already reported as made.
	if err := syncDir(filepath.Dir(path)); err != nil {
		return true, fmt.Errorf("sync %s: %w", filepath.Dir(path), err)
	}
	return true, nil
}

// syncDir fsyncs a directory, making the names created in it durable.
// A variable so a test can see that LinkExclusive calls it after the link.
var syncDir = func(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	serr := d.Sync()
	if cerr := d.Close(); serr == nil {
		serr = cerr
	}
	return serr
}

// writeTemp writes data to a new temp file beside path, unsynced, and
// returns its name.
func writeTemp(path string, data []byte) (string, error) {
	tmp, err := CreateTemp(path)
	if err != nil {
		return "", err
	}
	_, werr := tmp.Write(data)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = os.Remove(tmp.Name())
		return "", werr
	}
	return tmp.Name(), nil
}

// syncFS makes every write to the file system that holds dir durable
// (syncfs(2)): one call for a batch of files, where an fsync each would
// wait on the disk once a file.
func syncFS(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	for {
		if err := unix.Syncfs(int(d.Fd())); err != unix.EINTR {
			if err != nil {
				return fmt.Errorf("syncfs %s: %w", dir, err)
			}
			return nil
		}
	}
}
