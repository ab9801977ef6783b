package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"huddle/team"
	"huddle/teamdir"
)

// TestHeaderSaysTheTeamIsNotRunning: a snapshot taken while no runtime
// holds the lock puts "team not running (last ran pid N, …)" in the header
// and marks the pending countdown as paused, with the time it had left.
func TestHeaderSaysTheTeamIsNotRunning(t *testing.T) {
	m, _ := newTestModel(t, 140, 30)
	snap := busySnapshot(t)
	stopped := t0.Add(-4 * time.Minute)
	snap.Down = true
	snap.Runtime = teamdir.RuntimeState{Last: teamdir.RuntimeRecord{PID: 4242, Started: t0.Add(-time.Hour), Stopped: &stopped}}
	// The plan was created 12 s before t0, after the team stopped, with 10
	// minutes to answer: it keeps its whole span, paused.
	m.Update(SnapshotMsg(snap))
	screen := ansi.Strip(m.View().Content)
	header := strings.SplitN(screen, "\n", 2)[0]
	if !strings.Contains(header, "team not running (last ran pid 4242, stopped at") {
		t.Fatalf("header: %q", header)
	}
	if !strings.Contains(screen, "paused, 10m") {
		t.Fatalf("the pending countdown is not marked paused:\n%s", screen)
	}
	r := snap.Requests[0]
	if got := team.LeftWhenPaused(&r, snap.Runtime); got != 10*time.Minute {
		t.Fatalf("left when paused: %v", got)
	}
}
