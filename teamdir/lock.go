package teamdir

import (
	"fmt"
	"os"
	"syscall"
)

// LockRuntime takes the team directory's runtime lock, so two runtimes never
// consume the same inboxes, and writes this process's pid into it. The lock
// is held until unlock is called (or the process ends).
func LockRuntime(dir string) (unlock func(), err error) {
	p := RuntimeLockPath(dir)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, FileMode)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", p, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b, _ := os.ReadFile(p)
		f.Close()
		return nil, fmt.Errorf("another huddle runtime already runs the team in %s (pid %s)", dir, string(b))
	}
	if err := writePID(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", p, err)
	}
	return func() { f.Close() }, nil
}

// writePID replaces the lock file's content with this process's pid, for
// the error a second runtime gives.
func writePID(f *os.File) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt([]byte(fmt.Sprint(os.Getpid())), 0)
	return err
}
