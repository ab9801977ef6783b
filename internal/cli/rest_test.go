package cli

import (
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/tui"
)

// TestAttachSleepsAtRest: the real `huddle attach` on a pty, on a team
// where nothing changes, comes to a second in which it is woken fewer
// than tui.FPS/2 times (a renderer ticking at its frame rate is woken at
// least tui.FPS times a second, whatever else the machine does); a key
// still draws its frame, and the screen goes back to rest after it.
func TestAttachSleepsAtRest(t *testing.T) {
	p := attachQuietTeam(t)
	settle(t, p)
	pid := p.cmd.Process.Pid
	atRest := func(when string) {
		t.Helper()
		testkit.WaitFor(t, 20*time.Second, "a second of attach at rest "+when, func() bool {
			_, sw0 := taskUsage(t, pid)
			<-time.After(time.Second) // the window is the measurement
			_, sw1 := taskUsage(t, pid)
			return sw1-sw0 < tui.FPS/2
		})
	}
	atRest("after the first frame")
	before := len(p.output())
	p.typeKeys(t, "\t") // the focus moves to the next pane: the screen changes
	grown(t, p, before, 10*time.Second)
	p.waitFor(t, "[3 Traces]")
	atRest("after a key")
}
