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
	"huddle/team"
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
	if code, ok := cl.pathArg("DIR"); !ok {
		return code
	}
	if !cl.remote() {
		// DIR names a path, which only a team directory has: one that is
		// none is said so before anything is opened (or made) there.
		if info, err := os.Stat(cl.dir); err != nil || !info.IsDir() {
			return cl.fail(fmt.Errorf("%s is not a team directory", cl.dir))
		}
	}
	return cl.withState(needDir, func(ctx context.Context, st store.Store) int {
		tl, err := replay.Read(ctx, st, cl.localDir())
		if err != nil {
			return cl.fail(err)
		}
		from := ""
		if tl.Store != nil {
			from, _ = cl.where("")
		}
		return writeTimeline(cl, tl, out, from)
	})
}

// pathArg takes the DIR (or FILE) argument of export and replay as --dir.
// It names a path: with --store the team is in the store, and it is
// refused.
func (cl *cmdline) pathArg(what string) (int, bool) {
	if len(cl.args) == 0 {
		return 0, true
	}
	if cl.remote() {
		return cl.usageError("%s and --store: the team is in the store; drop %s", what, cl.args[0]), false
	}
	cl.dir = cl.args[0]
	return 0, true
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
	if code, ok := cl.pathArg("DIR or FILE"); !ok {
		return code
	}
	hint := "'huddle export'"
	if cl.remote() {
		hint = "'huddle export --store'"
	} else {
		// DIR or FILE names a path, which only a team directory has: an
		// export is read as it is, and what is neither a team nor an
		// export is said so before the terminal is asked for.
		info, err := os.Stat(cl.dir)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return cl.fail(fmt.Errorf("%s: no such team directory or export", cl.dir))
		case err != nil:
			return cl.fail(err)
		case !info.IsDir():
			tl, err := replay.ReadExportFile(cl.dir)
			if err != nil {
				return cl.fail(err)
			}
			if !isTerminal(cl.stdout) {
				return cl.exit(exitUsage, "stdout is not a terminal, and the UI needs one (%s writes the timeline as JSON lines instead)", hint)
			}
			ctx, stop := signalContext()
			defer stop()
			return playTimeline(ctx, cl, tl, speed, cl.dir)
		}
		if _, err := os.Stat(team.ConfigPath(cl.dir)); err != nil {
			return cl.fail(fmt.Errorf("%s is not a team directory (no team.json)", cl.dir))
		}
	}
	if !isTerminal(cl.stdout) {
		return cl.exit(exitUsage, "stdout is not a terminal, and the UI needs one (%s writes the timeline as JSON lines instead)", hint)
	}
	return cl.withState(needDir, func(ctx context.Context, st store.Store) int {
		tl, err := replay.Read(ctx, st, cl.localDir())
		if err != nil {
			return cl.fail(err)
		}
		return playTimeline(ctx, cl, tl, speed, cl.localDir())
	})
}

// playTimeline plays tl on the terminal until it is quit. The member view
// reads logs under dir: the team directory, or for an export its path,
// under which there is nothing (never the working directory); a store's
// timeline holds none.
func playTimeline(ctx context.Context, cl *cmdline, tl *replay.Timeline, speed float64, dir string) int {
	opts := tui.ReplayOptions{Timeline: tl, Dir: dir, Speed: speed}
	if tl.Store != nil { // a store's timeline, or an export of one (export --store)
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
