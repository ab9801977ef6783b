package tui

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"huddle/protocol"
	"huddle/replay"
	"huddle/team"
)

// screenProbe keeps the last screen its model drew, so a flow can wait on
// what is on screen rather than on the renderer's byte stream (which only
// carries the cells that changed).
type screenProbe struct {
	tea.Model
	mu   sync.Mutex
	last string
}

func (p *screenProbe) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if do, ok := msg.(probeDo); ok {
		do.fn(p.Model) // on the program's loop: no race with Update
		close(do.done)
		return p, nil
	}
	_, cmd := p.Model.Update(msg)
	return p, cmd
}

// probeDo runs fn on the model inside the program's loop.
type probeDo struct {
	fn   func(tea.Model)
	done chan struct{}
}

// inLoop runs fn on the model of a running test program, between two
// updates, and waits for it.
func inLoop(t *testing.T, tm *teatest.TestModel, fn func(m *Model)) {
	t.Helper()
	done := make(chan struct{})
	tm.Send(probeDo{fn: func(m tea.Model) {
		if r, ok := m.(*ReplayModel); ok {
			m = r.Model
		}
		fn(m.(*Model))
	}, done: done})
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("the program did not run the probe")
	}
}

func (p *screenProbe) View() tea.View {
	v := p.Model.View()
	p.mu.Lock()
	p.last = ansi.Strip(v.Content)
	p.mu.Unlock()
	return v
}

func (p *screenProbe) screen() string { p.mu.Lock(); defer p.mu.Unlock(); return p.last }

// waitFor waits until the screen holds what cond wants, and returns it.
func (p *screenProbe) waitFor(t *testing.T, what string, cond func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		s := p.screen()
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; the screen:\n%s", what, s)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// notesTimeline is a session of n events a second apart, ending a minute
// ago: reservas starts working, then sends the lead note-01, note-02, …
func notesTimeline(t *testing.T, n int) *replay.Timeline {
	t.Helper()
	tj := team.DemoTeam()
	tm, err := team.Parse(tj)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now().Add(-time.Minute - time.Duration(n)*time.Second).UTC()
	tl := &replay.Timeline{TeamJSON: tj, Team: tm}
	tl.Events = append(tl.Events, replay.Event{At: start, Kind: replay.KindStatus,
		Member: &protocol.Member{Name: "reservas", Role: "bookings", Status: protocol.MemberWorking, Activity: "checking availability", Since: start}})
	for i := 1; i < n; i++ {
		at := start.Add(time.Duration(i) * time.Second)
		tl.Events = append(tl.Events, replay.Event{At: at, Kind: replay.KindMessage, Inbox: protocol.Lead, Offset: int64(i),
			Message: &protocol.Message{ID: fmt.Sprintf("m%02d", i), Type: protocol.TypeMessage, From: "reservas", To: protocol.Lead, TS: at, Content: fmt.Sprintf("note-%02d", i)}})
	}
	return tl
}

var replayPos = regexp.MustCompile(`replay (\d+)/(\d+) · (\d\d:\d\d:\d\d) · ×([0-9.]+) · (\w+)`)

func TestFlowReplayPauseStepAndReadOnly(t *testing.T) {
	const n = 30
	tl := notesTimeline(t, n)
	st := NewStyles(false, true)
	probe := &screenProbe{Model: NewReplay(replay.NewPlayer(tl, 1), Options{Styles: &st})}
	tm := teatest.NewTestModel(t, probe, teatest.WithInitialTermSize(120, 36))
	t.Cleanup(func() { _ = tm.Quit() })

	probe.waitFor(t, "the first event", func(s string) bool { return strings.Contains(s, "checking availability") })
	pressKey(tm, "4") // the messages, newest selected
	tm.Send(tea.KeyPressMsg{Code: tea.KeySpace, Text: " "})
	s := probe.waitFor(t, "paused", func(s string) bool { return replayPos.MatchString(s) && replayPos.FindStringSubmatch(s)[5] == "paused" })
	pos, _ := strconv.Atoi(replayPos.FindStringSubmatch(s)[1])
	if pos < 1 || pos >= n {
		t.Fatalf("paused at %d of %d; want somewhere inside", pos, n)
	}
	// The header's clock and the status line show the replayed time.
	shown := tl.Events[pos-1].At.Local().Format("15:04:05")
	header, _, _ := strings.Cut(s, "\n")
	if !strings.HasSuffix(strings.TrimSpace(header), shown) || !strings.Contains(replayPos.FindString(s), shown) {
		t.Fatalf("the replayed time %s is not the header's clock and in the status line:\n%s", shown, s)
	}

	// → shows one event more: the next note.
	next := fmt.Sprintf("note-%02d", pos)
	if strings.Contains(s, next) {
		t.Fatalf("%s is on screen before its event:\n%s", next, s)
	}
	pressKey(tm, "right")
	want := fmt.Sprintf("replay %d/%d", pos+1, n)
	s = probe.waitFor(t, want, func(s string) bool { return strings.Contains(s, want) })
	if !strings.Contains(s, next) || !strings.Contains(s, "· paused") {
		t.Fatalf("after one step the screen does not show %s, paused:\n%s", next, s)
	}
	// ← (here p) takes it back.
	pressKey(tm, "p")
	want = fmt.Sprintf("replay %d/%d", pos, n)
	s = probe.waitFor(t, want, func(s string) bool { return strings.Contains(s, want) })
	if strings.Contains(s, next) {
		t.Fatalf("after a step back %s is still on screen:\n%s", next, s)
	}

	// The actions refuse, and nothing moves.
	for _, k := range []string{"a", "r", "s", "m", "b", "R"} {
		pressKey(tm, "esc")
		probe.waitFor(t, "the flash cleared", func(s string) bool { return !strings.Contains(s, ReadOnlyFlash) })
		pressKey(tm, k)
		s = probe.waitFor(t, k+" refused", func(s string) bool { return strings.Contains(s, ReadOnlyFlash) })
		if strings.Contains(s, "message to") || strings.Contains(s, "broadcast to every") || strings.Contains(s, "shut down?") {
			t.Fatalf("%s opened a dialog in a replay:\n%s", k, s)
		}
	}
	pressKey(tm, "n") // stepping clears the flash and shows the status again
	want = fmt.Sprintf("replay %d/%d", pos+1, n)
	probe.waitFor(t, want, func(s string) bool { return strings.Contains(s, want) && !strings.Contains(s, ReadOnlyFlash) })

	// Speed, then the ends.
	pressKey(tm, "+")
	probe.waitFor(t, "×2", func(s string) bool { return strings.Contains(s, "· ×2 ·") })
	pressKey(tm, "-")
	pressKey(tm, "-")
	probe.waitFor(t, "×0.5", func(s string) bool { return strings.Contains(s, "· ×0.5 ·") })
	pressKey(tm, "G")
	s = probe.waitFor(t, "the end", func(s string) bool { return strings.Contains(s, fmt.Sprintf("replay %d/%d", n, n)) })
	if !strings.Contains(s, fmt.Sprintf("note-%02d", n-1)) || !strings.Contains(s, "· end") {
		t.Fatalf("at the end the last note is not on screen:\n%s", s)
	}
	pressKey(tm, "g")
	s = probe.waitFor(t, "the start", func(s string) bool { return strings.Contains(s, fmt.Sprintf("replay 0/%d", n)) })
	if strings.Contains(s, "note-01") {
		t.Fatalf("at the start a note is on screen:\n%s", s)
	}
	// Playing from the start shows the events again, by itself.
	tm.Send(tea.KeyPressMsg{Code: tea.KeySpace, Text: " "})
	probe.waitFor(t, "playing again", func(s string) bool {
		return strings.Contains(s, "checking availability") && strings.Contains(s, "· playing")
	})
	pressKey(tm, "q")
	tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
}

// TestReplayOfAnEmptySession: a team that never ran replays as its roster,
// and no key moves it anywhere or breaks it.
func TestReplayOfAnEmptySession(t *testing.T) {
	tm, err := team.Parse(team.DemoTeam())
	if err != nil {
		t.Fatal(err)
	}
	st := NewStyles(false, true)
	m := NewReplay(replay.NewPlayer(&replay.Timeline{TeamJSON: team.DemoTeam(), Team: tm}, 1), Options{Styles: &st})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 36})
	m.Init()
	for _, k := range []string{"n", "p", "right", "left", "G", "g", "+", "-"} {
		m.Update(press(k))
	}
	m.Update(tea.KeyPressMsg{Code: tea.KeySpace, Text: " "})
	s := ansi.Strip(m.View().Content)
	if !strings.Contains(s, "replay 0/0") || !strings.Contains(s, "· end") || !strings.Contains(s, "reservas") {
		t.Fatalf("an empty session:\n%s", s)
	}
}
