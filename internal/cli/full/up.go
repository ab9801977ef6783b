package full

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"

	"huddle/internal/cli"
	"huddle/protocol"
	"huddle/store"
	"huddle/store/filestore"
	"huddle/team"
	"huddle/team/supervisor"
	"huddle/tui"
)

// runtimeOptions are the options of a runtime started from the CLI.
func runtimeOptions(auto bool) supervisor.Options {
	exe, _ := os.Executable()
	return supervisor.Options{AutoApprove: auto, Executable: exe}
}

// runUp is huddle up: the team run in this process, under the UI or
// (--headless) printing JSON events.
func runUp(cl *cli.Cmdline, headless, auto bool, members string, no *cli.NotifyFlags) int {
	if code, ok := cl.WantArgs(0, 0, ""); !ok {
		return code
	}
	notes, code, ok := resolveNotify(cl, no)
	if !ok {
		return code
	}
	if !cl.Remote() && members != "" {
		return cl.UsageError("--members goes with --store")
	}
	if !cl.Remote() {
		if rs, err := team.ProbeRuntime(cl.Dir); err == nil && rs.Running {
			return cl.Exit(cli.ExitFail, "the team in %s already runs (pid %d): open it with 'huddle attach --dir %s'", cl.Dir, rs.Last.PID, cl.Dir)
		}
	}
	if !headless && !cli.IsTerminal(cl.Stdout) {
		return cl.Exit(cli.ExitUsage, "stdout is not a terminal (use 'huddle up --headless' for JSON events)")
	}
	ctx, stop := cli.SignalContext()
	defer stop()
	opts := runtimeOptions(auto)
	secrets, err := cl.StoreSecrets()
	if err != nil {
		return cl.Fail(err)
	}
	opts.Secrets = secrets
	var ui tui.RunOptions
	var st store.Store
	if !cl.Remote() {
		fst, err := filestore.Open(cl.Dir)
		if err != nil {
			return cl.Fail(err)
		}
		st = fst
		defer st.Close()
		if !headless {
			dirOpts, closeStore, err := dirUI(ctx, cl.Dir)
			if err != nil {
				return cl.Fail(err)
			}
			defer closeStore()
			ui = dirOpts
		}
	}
	if cl.Remote() {
		nst, code, ok := openUpStore(ctx, cl, members)
		if !ok {
			return code
		}
		st = nst
		defer st.Close()
		opts.Members = splitMembers(members)
		// The store's UI, over this process's runtime: its member view
		// reads every member's log from the store, where each runtime
		// copies those it runs (this one from --dir).
		ui = storeRunOptions(ctx, st, cl.StoreName())
		ui.Dir = cl.Dir
		ui.Footer = "running the team in the store " + cl.StoreName() + " (this machine's files in " + cl.Dir + ")"
	}
	if !headless {
		ui.Notify = notes
		if err := runUnderUI(ctx, st, cl.Dir, opts, ui); err != nil {
			return cl.Fail(err)
		}
		return cli.ExitOK
	}
	var mu sync.Mutex
	enc := json.NewEncoder(cl.Stdout)
	opts.OnEvent = func(e supervisor.Event) {
		mu.Lock()
		defer mu.Unlock()
		_ = enc.Encode(e) // a reader that went away must not stop the team
	}
	stopNotes, err := notifyHeadless(ctx, st, notes, func(w string) { opts.OnEvent(supervisor.Event{"event": "warning", "warning": w}) })
	if err != nil {
		return cl.Fail(err)
	}
	defer stopNotes()
	if err := supervisor.Run(ctx, st, cl.Dir, opts); err != nil {
		return cl.Fail(err)
	}
	return cli.ExitOK
}

// runUnderUI runs the team st keeps in this process, with dir as its
// local directory, under the UI until the person quits or ctx ends; then
// it stops the team and waits for it.
func runUnderUI(ctx context.Context, st store.Store, dir string, opts supervisor.Options, ui tui.RunOptions) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rt, err := supervisor.Start(ctx, st, dir, opts)
	if err != nil {
		return err
	}
	ui.RunsTeam = true
	err = tui.Run(ctx, ui)
	cancel()
	if rerr := rt.Wait(); err == nil && rerr != nil {
		err = fmt.Errorf("stopping the team: %w", rerr)
	}
	return err
}

// runAttach is huddle attach: the UI on a team another process runs.
func runAttach(cl *cli.Cmdline, no *cli.NotifyFlags) int {
	if code, ok := cl.WantArgs(0, 0, ""); !ok {
		return code
	}
	notes, code, ok := resolveNotify(cl, no)
	if !ok {
		return code
	}
	if !cli.IsTerminal(cl.Stdout) {
		return cl.Exit(cli.ExitUsage, "stdout is not a terminal, and the UI needs one ('huddle up --headless' prints events instead)")
	}
	if cl.Remote() {
		return attachStore(cl, notes)
	}
	t, err := team.Load(cl.Dir)
	if err != nil {
		return cl.Fail(err)
	}
	ctx, stop := cli.SignalContext()
	defer stop()
	ui, closeStore, err := dirUI(ctx, cl.Dir)
	if err != nil {
		return cl.Fail(err)
	}
	defer closeStore()
	if t.Desk { // its members are a person's sessions: no runtime, no inbox read
		ui.NoRuntime, ui.Actions = true, tui.DeskActions(tui.StoreLead(ctx, ui.Store))
	}
	ui.Notify = notes
	if err := tui.Run(ctx, ui); err != nil {
		return cl.Fail(err)
	}
	return cli.ExitOK
}

// openUpStore opens the store of huddle up --store: a bad URL or member
// list is a usage error, an unreachable server a failure; neither shows a
// credential.
func openUpStore(ctx context.Context, cl *cli.Cmdline, members string) (store.Store, int, bool) {
	for _, m := range splitMembers(members) {
		if err := checkMemberFlag(m); err != nil {
			return nil, cl.UsageError("--members: %v", err), false
		}
	}
	st, err := cl.OpenStore(ctx)
	if err != nil {
		return nil, cl.Fail(err), false // it names the URL, credentials redacted (natsurl.Redact)
	}
	return st, 0, true
}

// splitMembers is --members a,b as names, blanks dropped.
func splitMembers(list string) []string {
	var out []string
	for _, m := range strings.Split(list, ",") {
		if m = strings.TrimSpace(m); m != "" {
			out = append(out, m)
		}
	}
	return out
}

// checkMemberFlag accepts a valid name (a member's, or the lead).
func checkMemberFlag(name string) error { return protocol.ValidateName(name) }
