package team

import (
	"os"
	"syscall"
)

// startWriteback starts writing f's dirty pages to disk and does not wait
// for them: sync_file_range(SYNC_FILE_RANGE_WRITE) over the whole file.
func startWriteback(f *os.File) error {
	const syncFileRangeWrite = 2
	for {
		_, _, e := syscall.Syscall6(syscall.SYS_SYNC_FILE_RANGE, f.Fd(), 0, 0, syncFileRangeWrite, 0, 0)
		if e != syscall.EINTR {
			if e != 0 {
				return e
			}
			return nil
		}
	}
}
