package tui

import (
	"context"
	"errors"
	"io"
	"os"
	"time"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"huddle/notify"
	"huddle/store"
	"huddle/team/view"
)

// Connect starts the one observer of the team kept in st (a team
// directory's files store, or NATS: internal/cli opens it) and hands every
// snapshot it folds to send (program.Send, or a test's). It is the wiring
// that production and tests share; stop ends it, and leaves st open.
func Connect(ctx context.Context, st store.Store, send func(tea.Msg)) (stop func() error, err error) {
	return observeInto(ctx, st, view.ObserveOptions{}, send)
}

func observeInto(ctx context.Context, st store.Store, opts view.ObserveOptions, send func(tea.Msg)) (stop func() error, err error) {
	obs, err := view.Observe(ctx, st, opts, func(s view.Snapshot) { send(SnapshotMsg(s)) })
	if err != nil {
		return nil, err
	}
	return obs.Close, nil
}

// FPS is the most frames a second the UI draws. Bubble Tea (v2.2.0) draws
// only on its renderer's ticker, at this rate while views change (a
// keystroke's Update only stores the new view and wakes the renderer, whose
// frame comes at the next tick), and stops the ticker half a second after
// the last change (tea.go startRenderer): a screen at rest does not wake.
// At 20 a keystroke waits at most 50 ms, and a busy screen wakes a third as
// often as at the default 60. BenchmarkAttachIdle (internal/cli) runs a
// bare ticker at this rate beside the UI, what it would cost at rest if
// the renderer kept ticking.
const FPS = 20

// BurstFrame is how often the screen follows a burst of changes: each
// change after a quiet spell is drawn at the renderer's next tick, and
// while changes keep coming they are read and folded together at most
// this often (view.ObserveOptions.Frame; a screen's store rests as long
// between reads, filestore.Options.Pace). At half the frame rate a busy
// team costs the screen less than it costs the runtime
// (BenchmarkAttachUnderLoad, internal/cli), and keys still draw at FPS.
const BurstFrame = 2 * time.Second / FPS

// RunOptions say what the UI shows and whether it runs the team too.
type RunOptions struct {
	// Dir is the team directory: what the footer names.
	Dir string
	// RunsTeam says the caller runs the team in this process under the UI
	// (up, and the demo) until Run returns; without it the UI attaches to
	// a team another process runs.
	RunsTeam bool
	// Store is the team's state the UI observes (Connect), opened and
	// closed by the caller.
	Store store.Store
	// Input and Output default to the terminal.
	Input  io.Reader
	Output io.Writer
	// Connect, when set, feeds the UI instead of the observer of Store (the
	// snapshots of a Claude Code team, for `huddle claude attach`); it has
	// the shape of the package's Connect without the directory.
	Connect func(ctx context.Context, send func(tea.Msg)) (stop func() error, err error)
	// Actions are what the keys do (Options.Actions).
	Actions Actions
	// NoFeed, when set, says why the member view reads no log (Options.NoFeed).
	NoFeed string
	// Footer, when set, says what the UI shows instead of "attached to Dir".
	Footer string
	// Lines, when set, is where a member's log is read (Options.Lines).
	Lines func(member, kind string) view.LineSource
	// NoRuntime says no runtime runs the team: a desk
	// (view.ObserveOptions.NoRuntime).
	NoRuntime bool
	// Notify says what a person is told of, and where besides the
	// terminal (Options.Notify).
	Notify Notify
}

// Run opens the UI on the team in opts.Store (or what opts.Connect feeds)
// until the person quits or ctx ends. On a terminal of its own it draws the
// first frame as soon as the first snapshot is folded (firstFrame), not at
// the renderer's first tick.
func Run(ctx context.Context, opts RunOptions) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var ff *firstFrame
	if opts.Input == nil && opts.Output == nil {
		ff = newFirstFrame(os.Stdout)
	}
	p, stop, err := newProgram(ctx, opts, ff)
	if err != nil {
		return err
	}
	if ff != nil {
		go ff.draw(ctx, modelOptions(opts)) // owner: Run; ends when the snapshot is drawn or Run's ctx ends
	}
	_, err = p.Run()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		err = nil // stopped by a signal: a clean stop
	}
	cancel()
	if ff != nil {
		ff.release()
	}
	if serr := stop(); err == nil {
		err = serr
	}
	return err
}

// NewProgram is the UI Run runs, as a program the caller runs (an SSH
// session, whose input, output and window sizes extra gives), already fed
// by its observer. stop, once the program has ended and ctx is done, stops
// the feed and what the UI started.
func NewProgram(ctx context.Context, opts RunOptions, extra ...tea.ProgramOption) (p *tea.Program, stop func() error, err error) {
	return newProgram(ctx, opts, nil, extra...)
}

// modelOptions are the model's options for a program of opts.
func modelOptions(opts RunOptions) Options {
	footer := "attached to " + opts.Dir
	if opts.RunsTeam {
		footer = "running the team in " + opts.Dir
	}
	if opts.Footer != "" {
		footer = opts.Footer
	}
	_, noColor := os.LookupEnv("NO_COLOR")
	st := NewStyles(!noColor, true)
	return Options{Dir: opts.Dir, Styles: &st, Footer: footer, RunsTeam: opts.RunsTeam, Lines: opts.Lines, Actions: opts.Actions, NoFeed: opts.NoFeed, Notify: opts.Notify}
}

// newProgram is NewProgram; ff, when set, is the terminal the program
// writes to, and is handed the first snapshot.
func newProgram(ctx context.Context, opts RunOptions, ff *firstFrame, extra ...tea.ProgramOption) (p *tea.Program, stop func() error, err error) {
	kept := opts.Store
	if kept == nil && opts.Connect == nil {
		return nil, nil, errors.New("ui: no store to observe")
	}
	m := New(modelOptions(opts))
	progOpts := []tea.ProgramOption{tea.WithContext(ctx), tea.WithFPS(FPS)}
	if opts.Input != nil {
		progOpts = append(progOpts, tea.WithInput(opts.Input))
	}
	if ff != nil {
		progOpts = append(progOpts, tea.WithOutput(ff))
	}
	if opts.Output != nil {
		progOpts = append(progOpts, tea.WithOutput(opts.Output))
	} else if len(extra) == 0 {
		// On stdout, lipgloss detected its profile in its initialiser;
		// detecting it again would run `tmux info` a second time inside
		// tmux, tens of milliseconds before the first frame.
		progOpts = append(progOpts, tea.WithColorProfile(lipgloss.Writer.Profile))
	}
	p = tea.NewProgram(m, append(progOpts, extra...)...)
	closeSender := func() {}
	if len(opts.Notify.Channels) > 0 {
		sender := notify.Start(ctx, opts.Notify.Channels, func(warning string) {
			p.Send(ActionDoneMsg{Text: warning, Err: errors.New(warning)})
		})
		closeSender = sender.Close
		m.sender = sender
	}
	connect := opts.Connect
	if connect == nil {
		connect = func(ctx context.Context, send func(tea.Msg)) (func() error, error) {
			return observeInto(ctx, kept, view.ObserveOptions{NoRuntime: opts.NoRuntime, Frame: BurstFrame}, send)
		}
	}
	send := p.Send
	if ff != nil {
		send = func(msg tea.Msg) {
			if s, ok := msg.(SnapshotMsg); ok {
				ff.offer(view.Snapshot(s))
			}
			p.Send(msg)
		}
	}
	stopFeed, err := connect(ctx, send)
	if err != nil {
		closeSender()
		m.Close()
		return nil, nil, err
	}
	return p, func() error {
		m.Close()
		closeSender()
		return stopFeed()
	}, nil
}
