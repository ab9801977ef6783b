package tui

import (
	"fmt"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"

	"huddle/team/view"
)

// TestGoldenScreens compares the settled View().Content with golden files
// at 80×24 and 140×40, with the fixed colour profile (attributes only). Run
// with -update to rewrite them after a deliberate change.
func TestGoldenScreens(t *testing.T) {
	scenarios := []struct {
		name  string
		setup func(t *testing.T, m *Model, c *testClock)
	}{
		{"empty team", func(t *testing.T, m *Model, c *testClock) {
			tm := demoTeam(t)
			var members []view.MemberView
			for _, spec := range tm.Members {
				members = append(members, view.MemberView{Spec: spec})
			}
			m.Update(SnapshotMsg(view.Snapshot{Version: 1, Team: tm, Members: members}))
		}},
		{"pending plan selected", func(t *testing.T, m *Model, c *testClock) {
			m.Update(SnapshotMsg(busySnapshot(t)))
			c.Advance(time.Second) // past the grace period
			m.Update(tickMsg(c.Now()))
		}},
		{"rejected plan with feedback", func(t *testing.T, m *Model, c *testClock) {
			m.Update(SnapshotMsg(busySnapshot(t)))
			send(m, "j")
		}},
		{"trace tree", func(t *testing.T, m *Model, c *testClock) {
			m.Update(SnapshotMsg(busySnapshot(t)))
			send(m, "3", "j", "j", "j", "j", "j") // the 2-hop chain's first call
		}},
		{"full help", func(t *testing.T, m *Model, c *testClock) {
			m.Update(SnapshotMsg(busySnapshot(t)))
			send(m, "?")
		}},
	}
	for _, sc := range scenarios {
		for _, size := range [][2]int{{80, 24}, {140, 40}} {
			t.Run(fmt.Sprintf("%s/%dx%d", sc.name, size[0], size[1]), func(t *testing.T) {
				m, c := newTestModel(t, size[0], size[1])
				sc.setup(t, m, c)
				golden.RequireEqual(t, m.View().Content)
			})
		}
	}
}
