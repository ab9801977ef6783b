package cli

// The IPC commands: validate a Puruto repo's or a team's IPC setup, scaffold
// one (init --ipc), and show the invocation chains of a team's traces.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"huddle/ipc"
	"huddle/ipc/trace"
	"huddle/protocol"
	"huddle/store"
	"huddle/team"
	"huddle/teamdir"
)

func validateFlags(fs *flag.FlagSet) runFunc {
	asJSON := fs.Bool("json", false, "print the report as JSON")
	return func(cl *Cmdline) int { return runValidate(cl, *asJSON) }
}

func runValidate(cl *Cmdline, asJSON bool) int {
	if code, ok := cl.WantArgs(1, 1, "PATH"); !ok {
		return code
	}
	path := cl.Args[0]
	info, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return cl.UsageError("%s does not exist", path)
		}
		return cl.UsageError("%v", err)
	}
	var r ipc.Report
	switch {
	case info.IsDir() && isFile(team.ConfigPath(path)):
		r = team.ValidateIPC(path)
	case !info.IsDir() && filepath.Base(path) == filepath.Base(team.ConfigPath(".")):
		// A team.json is its team's, never an IPC config.
		r = team.ValidateIPC(filepath.Dir(path))
	default:
		r = ipc.Validate(path)
	}
	if asJSON {
		if err := writeJSON(cl.Stdout, r); err != nil {
			return cl.Fail(err)
		}
	} else if err := printReport(cl.Stdout, r); err != nil {
		return cl.Fail(err)
	}
	if !r.OK {
		return ExitFail
	}
	return ExitOK
}

func isFile(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular()
}

// printReport writes one line per finding, then a summary line.
func printReport(w io.Writer, r ipc.Report) error {
	tw := NewTable(w, 4)
	for _, f := range r.Findings {
		fmt.Fprintf(tw, "%-7s %s\t%s: %s\n", f.Level, f.Code, f.Path, team.Printable(f.Message))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	summary := "ok"
	if r.Errors > 0 {
		summary = plural(r.Errors, "error")
	}
	if r.Warnings > 0 {
		summary += ", " + plural(r.Warnings, "warning")
	}
	_, err := fmt.Fprintf(w, "%s (%s): %s\n", r.Path, r.Kind, summary)
	return err
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// initIPC is `huddle init --ipc [PATH] [--owner NAME]`: Puruto's IPC files in
// a repo, with huddle as the runtime.
func initIPC(cl *Cmdline, ipcFlag bool, owner string) int {
	if !ipcFlag {
		return cl.UsageError("--owner goes with --ipc")
	}
	if cl.FlagGiven("dir") {
		return cl.UsageError("--dir is a team's; with --ipc, name the repo as PATH")
	}
	if code, ok := cl.WantArgs(0, 1, ""); !ok {
		return code
	}
	path := "."
	if len(cl.Args) == 1 {
		path = cl.Args[0]
	}
	if owner == "" {
		abs, err := filepath.Abs(path)
		if err != nil {
			return cl.Fail(err)
		}
		owner = filepath.Base(abs)
		if err := protocol.ValidateName(owner); err != nil {
			return cl.UsageError("the directory's name %q is not a valid owner name; give --owner NAME", owner)
		}
	} else if err := protocol.ValidateName(owner); err != nil {
		return cl.UsageError("--owner: %v", err)
	}
	written, err := ipc.Scaffold(path, owner)
	if err != nil {
		return cl.Fail(err)
	}
	fmt.Fprintf(cl.Stdout, "wrote %s: owner %s, allowed_targets empty (every call is denied until you add targets)\n", written[0], owner)
	fmt.Fprintf(cl.Stdout, "wrote %s: the /call skill, through 'huddle call'\n", written[1])
	return ExitOK
}

func tracesFlags(fs *flag.FlagSet) runFunc {
	corr := fs.String("correlation", "", "show only the chain of this correlation `id`")
	asJSON := fs.Bool("json", false, "print the chains as a JSON array")
	return func(cl *Cmdline) int { return runTraces(cl, *corr, *asJSON) }
}

func runTraces(cl *Cmdline, corr string, asJSON bool) int {
	if code, ok := cl.WantArgs(0, 0, ""); !ok {
		return code
	}
	if corr != "" {
		if err := protocol.ValidateID(corr); err != nil {
			return cl.UsageError("--correlation: %v", err)
		}
	}
	return cl.WithState(NeedDir, func(ctx context.Context, st store.Store) int {
		chains, skipped, err := chainsOn(ctx, st)
		if err != nil {
			return cl.Fail(err)
		}
		where, _ := cl.where(teamdir.TracesFile)
		return printChains(cl, chains, skipped, corr, asJSON, where)
	})
}

// printChains prints the chains of huddle traces (only corr's when not
// ""), and how many lines of where were skipped.
func printChains(cl *Cmdline, chains []trace.Chain, skipped int64, corr string, asJSON bool, where string) int {
	if corr != "" {
		var one []trace.Chain
		for _, ch := range chains {
			if ch.CorrelationID == corr {
				one = append(one, ch)
			}
		}
		if len(one) == 0 {
			return cl.Fail(fmt.Errorf("no chain %s in %s", corr, where))
		}
		chains = one
	}
	if asJSON {
		if chains == nil {
			chains = []trace.Chain{}
		}
		if err := writeJSON(cl.Stdout, chains); err != nil {
			return cl.Fail(err)
		}
		return ExitOK
	}
	if len(chains) == 0 {
		fmt.Fprintln(cl.Stdout, "no traces yet")
	}
	for i, ch := range chains {
		if i > 0 {
			fmt.Fprintln(cl.Stdout)
		}
		started := "-"
		if !ch.Start.IsZero() {
			started = ch.Start.Local().Format("15:04:05")
		}
		fmt.Fprintf(cl.Stdout, "%s started %s\n", ch.CorrelationID, started)
		for _, row := range ch.Rows {
			fmt.Fprintf(cl.Stdout, "%s%s\n", strings.Repeat("  ", row.Depth+1), callLine(row.Call))
		}
	}
	if n := skipped; n > 0 {
		fmt.Fprintf(cl.Stdout, "(%s of %s skipped: not valid spans)\n", plural(int(n), "line"), where)
	}
	return ExitOK
}

// callLine is one call of a chain: caller → target.action, hop, status,
// duration, and whether an answer came late.
func callLine(c *trace.Call) string {
	parts := []string{fmt.Sprintf("%s → %s.%s", dash(c.Caller), dash(c.Target), dash(c.Action)), fmt.Sprintf("hop %d", c.Hop)}
	switch c.Status {
	case trace.CallRunning:
		parts = append(parts, "running")
	case trace.CallOK:
		parts = append(parts, "ok", fmt.Sprintf("%dms", c.DurationMS))
	default:
		status := "error"
		if c.ErrorCode != "" {
			status += " " + c.ErrorCode
		}
		if c.ErrorReason != "" {
			status += " (" + c.ErrorReason + ")"
		}
		parts = append(parts, status, fmt.Sprintf("%dms", c.DurationMS))
	}
	if c.Late {
		parts = append(parts, "(late answer)")
	}
	if c.Remote != "" {
		parts = append(parts, "via "+c.Remote)
	}
	return strings.Join(parts, "  ")
}

// chainsOn folds the store's spans into chains, newest first.
func chainsOn(ctx context.Context, st store.Store) ([]trace.Chain, int64, error) {
	sr, ok := st.(store.SpanReader)
	if !ok {
		return nil, 0, errors.New("traces: this store cannot read its spans")
	}
	spans, skipped, err := sr.Spans(ctx)
	if err != nil {
		return nil, 0, err
	}
	folded := trace.NewTraces()
	for _, s := range spans {
		folded.Add(s)
	}
	return folded.Chains(), skipped, nil
}
