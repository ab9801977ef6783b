package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"huddle/replay"
	"huddle/store"
	"huddle/teamdir"
	"huddle/tui"
)

func exportFlags(fs *flag.FlagSet) runFunc {
	out := fs.String("o", "", "write the export to `FILE` (default: stdout)")
	return func(cl *cmdline) int { return runExport(cl, *out) }
}

// runExport is 'huddle export [DIR] [-o FILE]'.
func runExport(cl *cmdline, out string) int {
	if code, ok := cl.wantArgs(0, 1, "DIR"); !ok {
		return code
	}
	if cl.onStore() {
		if len(cl.args) == 1 {
			return cl.usageError("DIR and --store: the team is in the store; drop %s", cl.args[0])
		}
		return cl.withStore(func(ctx context.Context, st store.Store) int {
			tl, err := replay.ReadOn(ctx, st)
			if err != nil {
				return cl.fail(err)
			}
			return writeTimeline(cl, tl, out, "the store "+cl.storeName())
		})
	}
	dir := cl.dir
	if len(cl.args) == 1 {
		dir = cl.args[0]
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return cl.fail(fmt.Errorf("%s is not a team directory", dir))
	}
	tl, err := replay.Read(dir)
	if err != nil {
		return cl.fail(err)
	}
	return writeTimeline(cl, tl, out, "")
}

// writeTimeline writes tl's export to stdout, or to out (not "" or "-")
// saying so on stderr; from names the store it was read from ("" for a
// team directory).
func writeTimeline(cl *cmdline, tl *replay.Timeline, out, from string) int {
	if out == "" || out == "-" {
		if err := replay.Export(cl.stdout, tl, time.Now()); err != nil {
			return cl.fail(err)
		}
		return exitOK
	}
	if err := writeExport(out, tl); err != nil {
		return cl.fail(err)
	}
	if from != "" {
		fmt.Fprintf(cl.stderr, "exported %d events of team %s from %s to %s (what a store's export leaves out is in its header)\n", len(tl.Events), tl.Team.Name, from, out)
		return exitOK
	}
	fmt.Fprintf(cl.stderr, "exported %d events of team %s to %s\n", len(tl.Events), tl.Team.Name, out)
	return exitOK
}

// writeExport writes the export through a temp file renamed over path
// (teamdir.ReplaceFile), so a failed export leaves no half file behind.
func writeExport(path string, tl *replay.Timeline) error {
	var b bytes.Buffer
	err := replay.Export(&b, tl, time.Now())
	if err == nil {
		err = teamdir.ReplaceFile(path, b.Bytes())
	}
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

func replayFlags(fs *flag.FlagSet) runFunc {
	speed := fs.Float64("speed", 1, "seconds of the session per second on screen (idle spells last at most 2s)")
	return func(cl *cmdline) int { return runReplay(cl, *speed) }
}

// runReplay is 'huddle replay [DIR|FILE] [--speed N]'.
func runReplay(cl *cmdline, speed float64) int {
	if code, ok := cl.wantArgs(0, 1, "DIR or FILE"); !ok {
		return code
	}
	if speed <= 0 {
		return cl.usageError("--speed must be more than 0")
	}
	if cl.onStore() {
		return replayOnStore(cl, speed)
	}
	path := cl.dir
	if len(cl.args) == 1 {
		path = cl.args[0]
	}
	tl, err := replay.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return cl.fail(fmt.Errorf("%s: no such team directory or export", path))
	}
	if err != nil {
		return cl.fail(err)
	}
	if !isTerminal(cl.stdout) {
		return cl.exit(exitUsage, "stdout is not a terminal, and the UI needs one ('huddle export' writes the timeline as JSON lines instead)")
	}
	ctx, stop := signalContext()
	defer stop()
	// The member view reads logs under Dir: for an export, its path, under
	// which there is nothing (never the working directory).
	opts := tui.ReplayOptions{Timeline: tl, Dir: path, Speed: speed}
	if tl.Store != nil { // an export of a store's team (export --store)
		opts.NoFeed = storeNoFeed
	}
	if err := tui.RunReplay(ctx, opts); err != nil {
		return cl.fail(err)
	}
	return exitOK
}

// storeNoFeed is what the member view of a store's timeline says of the
// logs: the timeline holds none; the store keeps a copy of each member's,
// which huddle logs prints.
const storeNoFeed = "a store's history holds no logs ('huddle logs MEMBER --store' prints the store's copy)"

// replayOnStore is 'huddle replay --store URL': the timeline of the team
// kept in the store (replay.ReadOn), read once and played. The terminal is
// checked before the store is read.
func replayOnStore(cl *cmdline, speed float64) int {
	if len(cl.args) == 1 {
		return cl.usageError("DIR or FILE and --store: the team is in the store; drop %s", cl.args[0])
	}
	if !isTerminal(cl.stdout) {
		return cl.exit(exitUsage, "stdout is not a terminal, and the UI needs one ('huddle export --store' writes the timeline as JSON lines instead)")
	}
	return cl.withStore(func(ctx context.Context, st store.Store) int {
		tl, err := replay.ReadOn(ctx, st)
		if err != nil {
			return cl.fail(err)
		}
		opts := tui.ReplayOptions{Timeline: tl, Speed: speed, NoFeed: storeNoFeed}
		if err := tui.RunReplay(ctx, opts); err != nil {
			return cl.fail(err)
		}
		return exitOK
	})
}
