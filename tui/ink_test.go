package tui

import (
	"reflect"
	"testing"
)

// TestInkRendersAsLipgloss holds every Ink of every style set to what
// lipgloss renders, on plain lines (the short way) and on what goes to
// lipgloss (tabs, newlines, escape sequences, nothing at all).
func TestInkRendersAsLipgloss(t *testing.T) {
	texts := []string{
		"x", "hello, world", "  spaced  ", "é ✓ ─╮ 日本語 🙂", "⚑ 3 pending",
		"", "a\tb", "two\nlines", "\x1b[1mbold\x1b[m", "cr\r", "del\x7f", "c1\u009b31m", "nel\u0085",
	}
	short := 0
	for _, color := range []bool{true, false} {
		for _, dark := range []bool{true, false} {
			st := reflect.ValueOf(NewStyles(color, dark))
			for i := range st.NumField() {
				if !st.Type().Field(i).IsExported() {
					continue
				}
				k, ok := st.Field(i).Interface().(Ink)
				if !ok {
					continue
				}
				name := st.Type().Field(i).Name
				if !k.wraps {
					t.Errorf("color %v, dark %v: %s never takes the short way", color, dark, name)
				}
				for _, s := range texts {
					if got, want := k.Render(s), k.style.Render(s); got != want {
						t.Errorf("color %v, dark %v: %s.Render(%q) = %q, lipgloss gives %q", color, dark, name, s, got, want)
					}
					if k.wraps && plainLine(s) {
						short++
					}
				}
			}
		}
	}
	if short == 0 {
		t.Fatal("no text took the short way: the test compared lipgloss with itself")
	}
}
