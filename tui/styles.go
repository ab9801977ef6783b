package tui

import (
	"image/color"

	"charm.land/lipgloss/v2"
)

// Styles holds every colour and border of the UI, built once; components
// read it and never name a colour.
type Styles struct {
	Title    lipgloss.Style
	Muted    lipgloss.Style
	Text     lipgloss.Style
	Primary  lipgloss.Style
	Success  lipgloss.Style
	Warning  lipgloss.Style
	Danger   lipgloss.Style
	Info     lipgloss.Style
	Selected lipgloss.Style // the cursor row of the focused pane
	Cursor   lipgloss.Style // the cursor row of a pane without focus
	Key      lipgloss.Style
	Lit      lipgloss.Style // the current state in a state diagram

	Frame        lipgloss.Style // the lines of a pane's frame
	FrameFocused lipgloss.Style
	FrameChars   lipgloss.Border
	FocusedChars lipgloss.Border
	Dialog       lipgloss.Style
	Bar          lipgloss.Style // duration bars
	BarRemote    lipgloss.Style

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
	fg := func(col color.Color) lipgloss.Style {
		s := lipgloss.NewStyle()
		if col != nil {
			s = s.Foreground(col)
		}
		return s
	}
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
		Title:     fg(primary).Bold(true),
		Muted:     fg(muted),
		Text:      lipgloss.NewStyle(),
		Primary:   fg(primary),
		Success:   fg(success),
		Warning:   fg(warning).Bold(true),
		Danger:    fg(danger).Bold(true),
		Info:      fg(info),
		Key:       fg(primary).Bold(true),
		Lit:       fg(primary).Bold(true).Reverse(true),
		Bar:       fg(info),
		BarRemote: fg(warning),
	}
	s.color = useColor
	if useColor {
		s.Selected = lipgloss.NewStyle().Background(selBg).Bold(true)
		s.Cursor = lipgloss.NewStyle().Background(selBg)
		s.Frame = fg(border)
		s.FrameFocused = fg(primary)
		s.FrameChars, s.FocusedChars = lipgloss.RoundedBorder(), lipgloss.RoundedBorder()
		s.Dialog = lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(primary).Padding(0, 1)
	} else {
		// Without colour, focus shows in the frame's weight.
		s.Selected = lipgloss.NewStyle().Reverse(true)
		s.Cursor = lipgloss.NewStyle().Bold(true)
		s.Muted = lipgloss.NewStyle().Faint(true)
		s.Frame, s.FrameFocused = lipgloss.NewStyle(), lipgloss.NewStyle().Bold(true)
		s.FrameChars, s.FocusedChars = lipgloss.NormalBorder(), lipgloss.ThickBorder()
		s.Dialog = lipgloss.NewStyle().Border(lipgloss.DoubleBorder()).Padding(0, 1)
	}
	return s
}
