package full

import (
	"context"
	"errors"
	"fmt"
	"os"

	"huddle/internal/cli"
	"huddle/replay"
	"huddle/store"
	"huddle/team"
	"huddle/tui"
)

// runReplay is 'huddle replay [DIR|FILE] [--speed N]'.
func runReplay(cl *cli.Cmdline, speed float64) int {
	if code, ok := cl.WantArgs(0, 1, "DIR or FILE"); !ok {
		return code
	}
	if speed <= 0 {
		return cl.UsageError("--speed must be more than 0")
	}
	if code, ok := cl.PathArg("DIR or FILE"); !ok {
		return code
	}
	hint := "'huddle export'"
	if cl.Remote() {
		hint = "'huddle export --store'"
	} else {
		// DIR or FILE names a path, which only a team directory has: an
		// export is read as it is, and what is neither a team nor an
		// export is said so before the terminal is asked for.
		info, err := os.Stat(cl.Dir)
		switch {
		case errors.Is(err, os.ErrNotExist):
			return cl.Fail(fmt.Errorf("%s: no such team directory or export", cl.Dir))
		case err != nil:
			return cl.Fail(err)
		case !info.IsDir():
			tl, err := replay.ReadExportFile(cl.Dir)
			if err != nil {
				return cl.Fail(err)
			}
			if !cli.IsTerminal(cl.Stdout) {
				return cl.Exit(cli.ExitUsage, "stdout is not a terminal, and the UI needs one (%s writes the timeline as JSON lines instead)", hint)
			}
			ctx, stop := cli.SignalContext()
			defer stop()
			return playTimeline(ctx, cl, tl, speed, cl.Dir)
		}
		if _, err := os.Stat(team.ConfigPath(cl.Dir)); err != nil {
			return cl.Fail(fmt.Errorf("%s is not a team directory (no team.json)", cl.Dir))
		}
	}
	if !cli.IsTerminal(cl.Stdout) {
		return cl.Exit(cli.ExitUsage, "stdout is not a terminal, and the UI needs one (%s writes the timeline as JSON lines instead)", hint)
	}
	return cl.WithState(cli.NeedDir, func(ctx context.Context, st store.Store) int {
		tl, err := replay.Read(ctx, st, cl.LocalDir())
		if err != nil {
			return cl.Fail(err)
		}
		return playTimeline(ctx, cl, tl, speed, cl.LocalDir())
	})
}

// playTimeline plays tl on the terminal until it is quit. The member view
// reads logs under dir: the team directory, or for an export its path,
// under which there is nothing (never the working directory); a store's
// timeline holds none.
func playTimeline(ctx context.Context, cl *cli.Cmdline, tl *replay.Timeline, speed float64, dir string) int {
	opts := tui.ReplayOptions{Timeline: tl, Dir: dir, Speed: speed}
	if tl.Store != nil { // a store's timeline, or an export of one (export --store)
		opts.NoFeed = storeNoFeed
	}
	if err := tui.RunReplay(ctx, opts); err != nil {
		return cl.Fail(err)
	}
	return cli.ExitOK
}

// storeNoFeed is what the member view of a store's timeline says of the
// logs: the timeline holds none; the store keeps a copy of each member's,
// which huddle logs prints.
const storeNoFeed = "a store's history holds no logs ('huddle logs MEMBER --store' prints the store's copy)"
