package replay

import (
	"fmt"
	"strconv"
	"time"

	"huddle/team/view"
)

// Screen-time bounds of a replay.
const (
	// MaxGap is the most screen time between two events: a long idle spell
	// of the session passes in MaxGap, whatever the speed.
	MaxGap = 2 * time.Second
	// Frame is the least screen time between two snapshots: events due
	// closer together than that are shown together.
	Frame = 16 * time.Millisecond
	// MinSpeed and MaxSpeed bound the speed.
	MinSpeed = 1.0 / 64
	MaxSpeed = 4096.0
)

// Player plays a timeline: a position in it, a speed, and paused or not.
// It keeps no clock of its own: a UI asks Delay how long to wait before
// calling Advance, so ticks stay in the UI's loop. A Player is used by one
// goroutine.
type Player struct {
	f      *Fold
	speed  float64
	paused bool
}

// NewPlayer returns a player at the start of tl, playing at speed (clamped
// to [MinSpeed, MaxSpeed]; 0 or less means 1).
func NewPlayer(tl *Timeline, speed float64) *Player {
	if speed <= 0 {
		speed = 1
	}
	return &Player{f: NewFold(tl), speed: min(max(speed, MinSpeed), MaxSpeed)}
}

// Pos is the number of events shown; Len the number there are.
func (p *Player) Pos() int { return p.f.Pos() }

// Len is the number of events of the timeline.
func (p *Player) Len() int { return p.f.Len() }

// AtEnd reports whether every event is shown.
func (p *Player) AtEnd() bool { return p.f.Pos() >= p.f.Len() }

// Snapshot is the team as it was at the position.
func (p *Player) Snapshot() view.Snapshot { return p.f.Snapshot() }

// Now is the replayed time: that of the last event shown, or of the first
// event before any is shown.
func (p *Player) Now() time.Time {
	evs := p.f.tl.Events
	switch {
	case len(evs) == 0:
		return time.Time{}
	case p.f.Pos() == 0:
		return evs[0].At
	}
	return evs[p.f.Pos()-1].At
}

// Paused reports whether the player is paused.
func (p *Player) Paused() bool { return p.paused }

// SetPaused pauses or resumes.
func (p *Player) SetPaused(v bool) { p.paused = v }

// Speed is how many seconds of the session pass in one second on screen.
func (p *Player) Speed() float64 { return p.speed }

// Faster doubles the speed and Slower halves it, within bounds.
func (p *Player) Faster() { p.speed = min(p.speed*2, MaxSpeed) }

// Slower halves the speed.
func (p *Player) Slower() { p.speed = max(p.speed/2, MinSpeed) }

// Step moves n events forward (n < 0: back).
func (p *Player) Step(n int) { p.f.Seek(p.f.Pos() + n) }

// Seek moves to position k: 0 is the start, Len the end.
func (p *Player) Seek(k int) { p.f.Seek(k) }

// Delay is the screen time until the next event: the session's gap scaled
// by the speed, at most MaxGap. ok is false at the end.
func (p *Player) Delay() (d time.Duration, ok bool) {
	evs, k := p.f.tl.Events, p.f.Pos()
	if k >= len(evs) {
		return 0, false
	}
	if k == 0 {
		return 0, true
	}
	gap := evs[k].At.Sub(evs[k-1].At)
	if gap <= 0 {
		return 0, true
	}
	return min(time.Duration(float64(gap)/p.speed), MaxGap), true
}

// Advance shows the next event and every one after it due within a Frame,
// so that a burst is one snapshot. It returns how many it showed.
func (p *Player) Advance() int {
	n := 0
	for {
		if p.AtEnd() {
			return n
		}
		p.Step(1)
		n++
		if d, ok := p.Delay(); !ok || d >= Frame {
			return n
		}
	}
}

// Status is the replay's status line: position, replayed time, speed and
// state, e.g. "replay 12/340 · 09:12:58 · ×4 · paused".
func (p *Player) Status() string {
	state := "playing"
	switch {
	case p.AtEnd():
		state = "end"
	case p.paused:
		state = "paused"
	}
	clock := "--:--:--"
	if now := p.Now(); !now.IsZero() {
		clock = now.Local().Format("15:04:05")
	}
	return fmt.Sprintf("replay %d/%d · %s · ×%s · %s", p.Pos(), p.Len(), clock, strconv.FormatFloat(p.speed, 'g', 4, 64), state)
}
