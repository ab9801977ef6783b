package tui

import (
	"image/color"
	"strings"

	"charm.land/lipgloss/v2"
)

// Styles holds every colour and border of the UI, built once; components
// read it and never name a colour.
type Styles struct {
	Title    Ink
	Muted    Ink
	Text     Ink
	Primary  Ink
	Success  Ink
	Warning  Ink
	Danger   Ink
	Info     Ink
	Selected Ink // the cursor row of the focused pane
	Cursor   Ink // the cursor row of a pane without focus
	Key      Ink
	Lit      Ink // the current state in a state diagram

	Frame        Ink // the lines of a pane's frame
	FrameFocused Ink
	FrameChars   lipgloss.Border
	FocusedChars lipgloss.Border
	Dialog       lipgloss.Style
	Bar          Ink // duration bars
	BarRemote    Ink

	color bool
}

// NewStyles builds the styles. With color false (NO_COLOR, or a test's
// fixed profile) only text attributes are used: bold, faint, reverse,
// underline.
func NewStyles(useColor, dark bool) Styles {
	ld := lipgloss.LightDark(dark)
	c := func(light, darkc string) color.Color {
		if !useColor {
			return nil
		}
		return ld(lipgloss.Color(light), lipgloss.Color(darkc))
	}
	style := func(col color.Color) lipgloss.Style {
		s := lipgloss.NewStyle()
		if col != nil {
			s = s.Foreground(col)
		}
		return s
	}
	fg := func(col color.Color) Ink { return NewInk(style(col)) }
	var (
		primary = c("#5A4FCF", "#A99BFF")
		muted   = c("#7A7A7A", "#8A8A8A")
		success = c("#1F7A3A", "#5FD38D")
		warning = c("#9A6700", "#F2C14E")
		danger  = c("#B3261E", "#FF6B6B")
		info    = c("#0B6E99", "#6CC4F0")
		border  = c("#BBBBBB", "#444444")
		selBg   = c("#E4E0FF", "#3A3566")
	)
	s := Styles{
		Title:     NewInk(style(primary).Bold(true)),
		Muted:     fg(muted),
		Text:      NewInk(lipgloss.NewStyle()),
		Primary:   fg(primary),
		Success:   fg(success),
		Warning:   NewInk(style(warning).Bold(true)),
		Danger:    NewInk(style(danger).Bold(true)),
		Info:      fg(info),
		Key:       NewInk(style(primary).Bold(true)),
		Lit:       NewInk(style(primary).Bold(true).Reverse(true)),
		Bar:       fg(info),
		BarRemote: fg(warning),
	}
	s.color = useColor
	if useColor {
		s.Selected = NewInk(lipgloss.NewStyle().Background(selBg).Bold(true))
		s.Cursor = NewInk(lipgloss.NewStyle().Background(selBg))
		s.Frame = fg(border)
		s.FrameFocused = fg(primary)
		s.FrameChars, s.FocusedChars = lipgloss.RoundedBorder(), lipgloss.RoundedBorder()
		s.Dialog = lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(primary).Padding(0, 1)
	} else {
		// Without colour, focus shows in the frame's weight.
		s.Selected = NewInk(lipgloss.NewStyle().Reverse(true))
		s.Cursor = NewInk(lipgloss.NewStyle().Bold(true))
		s.Muted = NewInk(lipgloss.NewStyle().Faint(true))
		s.Frame, s.FrameFocused = NewInk(lipgloss.NewStyle()), NewInk(lipgloss.NewStyle().Bold(true))
		s.FrameChars, s.FocusedChars = lipgloss.NormalBorder(), lipgloss.ThickBorder()
		s.Dialog = lipgloss.NewStyle().Border(lipgloss.DoubleBorder()).Padding(0, 1)
	}
	return s
}

// Ink is a style for text on one line. lipgloss works a style out again
// at every Render (its borders, margins, padding and width, then the
// escape sequences), which was most of what a frame cost; an Ink works
// out once what its style puts before and after a line of plain text and
// renders such a line by adding them. Anything else (a tab, a newline,
// an escape sequence, an empty string) goes to lipgloss as before, and so
// does everything when the style is not one that only wraps (NewInk
// checks).
type Ink struct {
	style     lipgloss.Style
	pre, post string
	wraps     bool
}

// NewInk makes an Ink of st. It takes the short way only after seeing
// lipgloss render a few plain lines exactly as the wrapping would.
func NewInk(st lipgloss.Style) Ink {
	k := Ink{style: st}
	const probe = "x"
	r := st.Render(probe)
	i := strings.Index(r, probe)
	if i < 0 {
		return k
	}
	k.pre, k.post = r[:i], r[i+len(probe):]
	for _, p := range []string{"x", "hello, world", "é ✓ ─╮ 日本", " padded  "} {
		if st.Render(p) != k.pre+p+k.post {
			return Ink{style: st}
		}
	}
	k.wraps = true
	return k
}

// Render styles s as lipgloss would.
func (k Ink) Render(s string) string {
	if k.wraps && plainLine(s) {
		return k.pre + s + k.post
	}
	return k.style.Render(s)
}

// plainLine reports whether s is non-empty text with no control
// character: no newline, tab or escape sequence for lipgloss to handle.
func plainLine(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}
