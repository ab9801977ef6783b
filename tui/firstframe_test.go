package tui

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
)

// openTerminal is a pseudo-terminal of w×h: the side a program writes to,
// and what the terminal got, read until want is in it or the deadline.
func openTerminal(t *testing.T, w, h int) (tty *os.File, got func(want string) string) {
	t.Helper()
	master, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	t.Cleanup(func() { _ = master.Close(); _ = tty.Close() })
	if err := pty.Setsize(tty, &pty.Winsize{Cols: uint16(w), Rows: uint16(h)}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	return tty, func(want string) string {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		buf := make([]byte, 64<<10)
		for !strings.Contains(out.String(), want) {
			if err := master.SetReadDeadline(deadline); err != nil {
				t.Fatal(err)
			}
			n, err := master.Read(buf)
			out.Write(buf[:n])
			if err != nil {
				t.Fatalf("the terminal got %q, never %q: %v", out.String(), want, err)
			}
		}
		return out.String()
	}
}

// TestFirstFrameDrawnAtOnce: the first snapshot is drawn on the alternate
// screen as soon as it is offered, with no program running, and a program
// that never wrote leaves the terminal's own screen and cursor back.
func TestFirstFrameDrawnAtOnce(t *testing.T) {
	tty, got := openTerminal(t, 120, 36)
	ff := newFirstFrame(tty)
	if ff == nil {
		t.Fatal("a pseudo-terminal is not taken for a terminal")
	}
	ff.offer(busySnapshot(t))
	ff.offer(busySnapshot(t)) // a later snapshot goes to the program alone
	st := NewStyles(false, true)
	go ff.draw(context.Background(), Options{Dir: t.TempDir(), Styles: &st, Footer: "attached to .huddle"})
	screen := got("attached to .huddle")
	if !strings.HasPrefix(screen, "\x1b[?1049h") {
		t.Fatalf("the frame is not on the alternate screen: %q", screen[:min(len(screen), 40)])
	}
	for _, name := range []string{"reservas", "finanzas", "data", "auditor", "Roster"} {
		if !strings.Contains(screen, name) {
			t.Errorf("the first frame lacks %q:\n%s", name, screen)
		}
	}
	ff.release()
	if screen := got("\x1b[?1049l"); !strings.HasSuffix(screen, "\x1b[?1049l\x1b[?25h") {
		t.Fatalf("the terminal's screen and cursor are not given back: ends %q", screen[max(0, len(screen)-40):])
	}
}

// TestFirstFrameNeverDrawnOverTheProgram: once the program wrote, the
// terminal is its own; the first snapshot draws nothing and release gives
// nothing back, the program having the screen.
func TestFirstFrameNeverDrawnOverTheProgram(t *testing.T) {
	tty, got := openTerminal(t, 120, 36)
	ff := newFirstFrame(tty)
	if _, err := ff.Write([]byte("program|")); err != nil {
		t.Fatal(err)
	}
	ff.offer(busySnapshot(t))
	st := NewStyles(false, true)
	ff.draw(context.Background(), Options{Dir: t.TempDir(), Styles: &st})
	ff.release()
	if _, err := tty.Write([]byte("end|")); err != nil {
		t.Fatal(err)
	}
	if screen := got("end|"); screen != "program|end|" {
		t.Fatalf("something was drawn over the program: %q", screen)
	}
}

// TestFirstFrameNotOnAFile: output that is not a terminal gets no frame of
// its own.
func TestFirstFrameNotOnAFile(t *testing.T) {
	f, err := os.Create(t.TempDir() + "/out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if ff := newFirstFrame(f); ff != nil {
		t.Fatal("a file was taken for a terminal")
	}
}

// TestFirstFrameEndsWithTheContext: a program that ends before any
// snapshot leaves draw waiting for nothing.
func TestFirstFrameEndsWithTheContext(t *testing.T) {
	tty, _ := openTerminal(t, 80, 24)
	ff := newFirstFrame(tty)
	ctx, cancel := context.WithCancel(context.Background())
	st := NewStyles(false, true)
	go ff.draw(ctx, Options{Styles: &st})
	cancel()
	ff.release() // returns once draw has
	if ff.drawn {
		t.Fatal("drawn with no snapshot")
	}
}
