package tui

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/term"

	"huddle/team/view"
)

// firstFrame is the terminal a local UI writes to, and the first frame it
// draws there itself. Bubble Tea (v2.2.0) writes frames only when its
// renderer ticks, the first 1/FPS after the program starts; a team's first
// snapshot is usually folded well before that. So the first snapshot is
// drawn at once by a model of its own, the frame Bubble Tea draws at its
// first tick being the same. It is drawn only while Bubble Tea has written
// nothing: once it has, the terminal is Bubble Tea's alone, and a frame
// drawn under it would leave its renderer wrong about the screen.
type firstFrame struct {
	f *os.File

	once  sync.Once
	snaps chan view.Snapshot
	done  chan struct{} // closed when draw returns

	mu      sync.Mutex
	written bool // Bubble Tea wrote to the terminal
	drawn   bool // the first frame was drawn here
}

// newFirstFrame returns the firstFrame of f, or nil when f is not a
// terminal.
func newFirstFrame(f *os.File) *firstFrame {
	if !term.IsTerminal(f.Fd()) {
		return nil
	}
	return &firstFrame{f: f, snaps: make(chan view.Snapshot, 1), done: make(chan struct{})}
}

// Read, Write, Close and Fd make it the program's output (term.File):
// Bubble Tea sizes and restores the terminal by its descriptor.
func (t *firstFrame) Read(p []byte) (int, error) { return t.f.Read(p) }

func (t *firstFrame) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.written = true
	return t.f.Write(p)
}

// Close leaves the terminal open: it is the process's standard output.
func (t *firstFrame) Close() error { return nil }

func (t *firstFrame) Fd() uintptr { return t.f.Fd() }

// offer hands it the first snapshot; later ones go to the program alone.
func (t *firstFrame) offer(s view.Snapshot) {
	t.once.Do(func() { t.snaps <- s })
}

// draw waits for the first snapshot and draws it, unless Bubble Tea has
// written first or ctx ends.
func (t *firstFrame) draw(ctx context.Context, opts Options) {
	defer close(t.done)
	var snap view.Snapshot
	select {
	case <-ctx.Done():
		return
	case snap = <-t.snaps:
	}
	w, h, err := term.GetSize(t.f.Fd())
	if err != nil || w <= 0 || h <= 0 {
		return
	}
	m := New(opts)
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	m.Update(SnapshotMsg(snap))
	frame := m.View().Content
	var buf bytes.Buffer
	// The alternate screen, no cursor, from the top left; lines end in
	// \r\n, as the terminal is not yet raw.
	buf.WriteString("\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J")
	cw := &colorprofile.Writer{Forward: &buf, Profile: lipgloss.Writer.Profile}
	_, _ = cw.Write([]byte(strings.ReplaceAll(frame, "\n", "\r\n")))
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.written {
		return
	}
	if _, err := t.f.Write(buf.Bytes()); err == nil {
		t.drawn = true
	}
}

// release, once the program has ended, waits for draw and gives the
// terminal back its screen and cursor if the first frame was drawn here
// and Bubble Tea never wrote (it failed to start).
func (t *firstFrame) release() {
	<-t.done
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.drawn && !t.written {
		_, _ = t.f.WriteString("\x1b[?1049l\x1b[?25h")
	}
}
