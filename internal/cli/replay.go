package cli

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"huddle/replay"
	"huddle/store"
	"huddle/teamdir"
)

func exportFlags(fs *flag.FlagSet) runFunc {
	out := fs.String("o", "", "write the export to `FILE` (default: stdout)")
	return func(cl *Cmdline) int { return runExport(cl, *out) }
}

// runExport is 'huddle export [DIR] [-o FILE]'.
func runExport(cl *Cmdline, out string) int {
	if code, ok := cl.WantArgs(0, 1, "DIR"); !ok {
		return code
	}
	if code, ok := cl.PathArg("DIR"); !ok {
		return code
	}
	if !cl.Remote() {
		// DIR names a path, which only a team directory has: one that is
		// none is said so before anything is opened (or made) there.
		if info, err := os.Stat(cl.Dir); err != nil || !info.IsDir() {
			return cl.Fail(fmt.Errorf("%s is not a team directory", cl.Dir))
		}
	}
	return cl.WithState(NeedDir, func(ctx context.Context, st store.Store) int {
		tl, err := replay.Read(ctx, st, cl.LocalDir())
		if err != nil {
			return cl.Fail(err)
		}
		from := ""
		if tl.Store != nil {
			from, _ = cl.where("")
		}
		return writeTimeline(cl, tl, out, from)
	})
}

// PathArg takes the DIR (or FILE) argument of export and replay as --dir.
// It names a path: with --store the team is in the store, and it is
// refused.
func (cl *Cmdline) PathArg(what string) (int, bool) {
	if len(cl.Args) == 0 {
		return 0, true
	}
	if cl.Remote() {
		return cl.UsageError("%s and --store: the team is in the store; drop %s", what, cl.Args[0]), false
	}
	cl.Dir = cl.Args[0]
	return 0, true
}

// writeTimeline writes tl's export to stdout, or to out (not "" or "-")
// saying so on stderr; from names the store it was read from ("" for a
// team directory).
func writeTimeline(cl *Cmdline, tl *replay.Timeline, out, from string) int {
	if out == "" || out == "-" {
		if err := replay.Export(cl.Stdout, tl, time.Now()); err != nil {
			return cl.Fail(err)
		}
		return ExitOK
	}
	if err := writeExport(out, tl); err != nil {
		return cl.Fail(err)
	}
	if from != "" {
		fmt.Fprintf(cl.Stderr, "exported %d events of team %s from %s to %s (what a store's export leaves out is in its header)\n", len(tl.Events), tl.Team.Name, from, out)
		return ExitOK
	}
	fmt.Fprintf(cl.Stderr, "exported %d events of team %s to %s\n", len(tl.Events), tl.Team.Name, out)
	return ExitOK
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
