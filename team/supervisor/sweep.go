package supervisor

import (
	"syscall"

	"huddle/internal/procenv"
)

// markVar is the environment variable that marks an exec teammate's run
// and everything it starts: a process that left the teammate's group
// (setsid) still inherits it.
const markVar = "HUDDLE_RUN_MARK"

// sweepMarked kills every process of this user whose environment holds
// markVar=mark, looking a few times, since one may fork while the kills go
// on. Without /proc it does nothing: the group's kill is all.
func sweepMarked(mark string) {
	for range 3 {
		killed := 0
		for _, pid := range procenv.With(markVar + "=" + mark) {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed++
			}
		}
		if killed == 0 {
			return
		}
	}
}
