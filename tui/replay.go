package tui

import (
	"context"
	"errors"
	"io"
	"os"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"huddle/replay"
)

// ReadOnlyFlash is what an action key says during a replay.
const ReadOnlyFlash = "replay: read-only"

// replayTickMsg asks the replay to show its next events; gen tells a tick
// of the current run of play from one of before a pause, seek or change of
// speed, which is dropped.
type replayTickMsg struct{ gen int }

// replayKeys are the keys of a replay, taken before the UI's own.
type replayKeys struct {
	Pause, Next, Prev, Faster, Slower, Start, End key.Binding
}

func defaultReplayKeys() replayKeys {
	b := func(help, desc string, keys ...string) key.Binding {
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(help, desc))
	}
	return replayKeys{
		Pause:  b("space", "pause/play", "space"),
		Next:   b("→/n", "step", "right", "n"),
		Prev:   b("←/p", "step back", "left", "p"),
		Faster: b("+", "faster", "+", "="),
		Slower: b("-", "slower", "-"),
		Start:  b("g", "start", "g"),
		End:    b("G", "end", "G"),
	}
}

// ReplayModel is the UI fed by a replay instead of a team directory's
// observer: the same Model, whose clock is the replayed time, whose
// status line is the replay's, and whose actions do nothing.
type ReplayModel struct {
	*Model
	player   *replay.Player
	controls replayKeys
	gen      int
}

// NewReplay builds the UI over player. opts.Now is replaced by the replayed
// time; opts.Dir, when set, is the team directory member views read from.
func NewReplay(player *replay.Player, opts Options) *ReplayModel {
	opts.Now = func() time.Time {
		if t := player.Now(); !t.IsZero() {
			return t
		}
		return time.Now() // a session without events: the clock goes on
	}
	opts.RunsTeam = false
	controls := defaultReplayKeys()
	opts.Controls = []key.Binding{controls.Pause, controls.Next, controls.Prev, controls.Faster, controls.Slower}
	r := &ReplayModel{Model: New(opts), player: player, controls: controls}
	if fi, err := os.Stat(opts.Dir); opts.NoFeed == "" && (err != nil || !fi.IsDir()) {
		// An export holds no logs: nothing is read beside it.
		r.member.noFeed = "an exported session holds no logs or transcripts (replay the team directory for them)"
	}
	r.footer = player.Status()
	return r
}

// Init shows the start and, unless paused, starts playing.
func (r *ReplayModel) Init() tea.Cmd {
	return tea.Batch(r.Model.Init(), r.show(), r.schedule())
}

// Update takes the replay's keys and ticks, refuses the actions and hands
// the rest to the Model.
func (r *ReplayModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case replayTickMsg:
		if msg.gen != r.gen || r.player.Paused() {
			return r, nil
		}
		r.player.Advance()
		return r, tea.Batch(r.show(), r.schedule())
	case tea.KeyPressMsg:
		if r.dialog == nil {
			if cmd, ok := r.key(msg); ok {
				return r, cmd
			}
		}
	}
	_, cmd := r.Model.Update(msg)
	return r, cmd
}

// key handles a key of the replay; ok is false for a key the Model takes.
func (r *ReplayModel) key(k tea.KeyPressMsg) (cmd tea.Cmd, ok bool) {
	p, km := r.player, r.controls
	switch {
	case key.Matches(k, r.keys.actionHelp()...):
		r.flash, r.flashBad = ReadOnlyFlash, true
		return nil, true
	case key.Matches(k, km.Pause):
		if p.AtEnd() {
			p.Seek(0) // play again from the start
			p.SetPaused(false)
			return r.restart(), true
		}
		p.SetPaused(!p.Paused())
		return r.restart(), true
	case key.Matches(k, km.Next):
		p.SetPaused(true)
		p.Step(1)
	case key.Matches(k, km.Prev):
		p.SetPaused(true)
		p.Step(-1)
	case key.Matches(k, km.Faster):
		p.Faster()
		return r.restart(), true
	case key.Matches(k, km.Slower):
		p.Slower()
		return r.restart(), true
	case key.Matches(k, km.Start):
		p.Seek(0)
	case key.Matches(k, km.End):
		p.Seek(p.Len())
	default:
		return nil, false
	}
	return tea.Batch(r.show(), r.restart()), true
}

// restart drops the pending tick and, when playing, schedules the next.
func (r *ReplayModel) restart() tea.Cmd {
	r.gen++
	r.footer = r.player.Status()
	return r.schedule()
}

// schedule asks for a tick when the next event is due, unless paused or at
// the end.
func (r *ReplayModel) schedule() tea.Cmd {
	if r.player.Paused() {
		return nil
	}
	d, ok := r.player.Delay()
	if !ok {
		return nil
	}
	gen := r.gen
	return tea.Tick(d, func(_ time.Time) tea.Msg { return replayTickMsg{gen: gen} })
}

// show puts the snapshot at the player's position on screen.
func (r *ReplayModel) show() tea.Cmd {
	if r.flash == ReadOnlyFlash {
		r.flash = ""
	}
	cmd := r.applySnapshot(r.player.Snapshot())
	r.footer = r.player.Status() + "   space pause · n/p step · +/- speed · g/G start/end · q quit"
	return cmd
}

// ReplayOptions say what to replay and where.
type ReplayOptions struct {
	Timeline *replay.Timeline
	// Dir is the team directory replayed: the member view reads its logs
	// there. For an export, the export's path (nothing is under it).
	Dir string
	// NoFeed, when set, says why the member view shows no log (a team
	// kept in a store: its history holds none).
	NoFeed string
	Speed  float64
	// Input and Output default to the terminal.
	Input  io.Reader
	Output io.Writer
}

// RunReplay plays opts.Timeline in the UI until the person quits or ctx
// ends. It writes nothing.
func RunReplay(ctx context.Context, opts ReplayOptions) error {
	_, noColor := os.LookupEnv("NO_COLOR")
	st := NewStyles(!noColor, true)
	m := NewReplay(replay.NewPlayer(opts.Timeline, opts.Speed), Options{Dir: opts.Dir, NoFeed: opts.NoFeed, Styles: &st})
	progOpts := []tea.ProgramOption{tea.WithContext(ctx)}
	if opts.Input != nil {
		progOpts = append(progOpts, tea.WithInput(opts.Input))
	}
	if opts.Output != nil {
		progOpts = append(progOpts, tea.WithOutput(opts.Output))
	}
	_, err := tea.NewProgram(m, progOpts...).Run()
	m.Close()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		err = nil // stopped by a signal: a clean stop
	}
	return err
}
