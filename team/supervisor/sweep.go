package supervisor

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// markVar is the environment variable that marks an exec teammate's run
// and everything it starts: a process that left the teammate's group
// (setsid) still inherits it.
const markVar = "HUDDLE_RUN_MARK"

// sweepMarked kills every process of this user whose environment holds
// markVar=mark, walking /proc a few times, since one may fork while the
// walk goes on. Without /proc it does nothing: the group's kill is all.
func sweepMarked(mark string) {
	want := []byte(markVar + "=" + mark + "\x00")
	for range 3 {
		entries, err := os.ReadDir("/proc")
		if err != nil {
			return
		}
		killed := 0
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || pid == os.Getpid() {
				continue
			}
			env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
			if err != nil || !bytes.Contains(append([]byte{0}, env...), append([]byte{0}, want...)) {
				continue // gone, another user's, or not marked
			}
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed++
			}
		}
		if killed == 0 {
			return
		}
	}
}
