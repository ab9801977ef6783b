// Package procenv finds processes by what their environment holds, as
// /proc shows it: the one mark a process keeps whatever group or session
// it moves to. It imports nothing of huddle.
package procenv

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
)

// With lists the processes of this user, other than this one, whose
// environment holds the variable kv ("NAME=value") as it started. Without
// /proc it lists none.
func With(kv string) []int {
	want := []byte(kv)
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue // gone, or another user's
		}
		for v := range bytes.SplitSeq(env, []byte{0}) {
			if bytes.Equal(v, want) {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}
