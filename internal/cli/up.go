package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"

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

func upFlags(fs *flag.FlagSet) runFunc {
	headless := fs.Bool("headless", false, "print one JSON event per line on stdout instead of the UI")
	auto := fs.Bool("auto-approve", false, "approve every teammate's plan as it arrives, without the lead")
	members := fs.String("members", "", "with --store, run only these members (`a,b`; default: every member, those another process runs as soon as their leases end), and the lead when no other process runs it; --dir then keeps only this machine's files")
	no := addNotifyFlags(fs)
	return func(cl *cmdline) int { return runUp(cl, *headless, *auto, *members, no) }
}

func runUp(cl *cmdline, headless, auto bool, members string, no *notifyOpts) int {
	if code, ok := cl.wantArgs(0, 0, ""); !ok {
		return code
	}
	notes, code, ok := no.resolve(cl)
	if !ok {
		return code
	}
	if !cl.remote() && members != "" {
		return cl.usageError("--members goes with --store")
	}
	if !cl.remote() {
		if rs, err := team.ProbeRuntime(cl.dir); err == nil && rs.Running {
			return cl.exit(exitFail, "the team in %s already runs (pid %d): open it with 'huddle attach --dir %s'", cl.dir, rs.Last.PID, cl.dir)
		}
	}
	if !headless && !isTerminal(cl.stdout) {
		return cl.exit(exitUsage, "stdout is not a terminal (use 'huddle up --headless' for JSON events)")
	}
	ctx, stop := signalContext()
	defer stop()
	opts := runtimeOptions(auto)
	secrets, err := cl.storeSecrets()
	if err != nil {
		return cl.fail(err)
	}
	opts.Secrets = secrets
	var ui tui.RunOptions
	var st store.Store
	if !cl.remote() {
		fst, err := filestore.Open(cl.dir)
		if err != nil {
			return cl.fail(err)
		}
		st = fst
		defer st.Close()
		if !headless {
			dirOpts, closeStore, err := dirUI(ctx, cl.dir)
			if err != nil {
				return cl.fail(err)
			}
			defer closeStore()
			ui = dirOpts
		}
	}
	if cl.remote() {
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
		ui = storeRunOptions(ctx, st, cl.storeName())
		ui.Dir = cl.dir
		ui.Footer = "running the team in the store " + cl.storeName() + " (this machine's files in " + cl.dir + ")"
	}
	if !headless {
		ui.Notify = notes
		if err := runUnderUI(ctx, st, cl.dir, opts, ui); err != nil {
			return cl.fail(err)
		}
		return exitOK
	}
	var mu sync.Mutex
	enc := json.NewEncoder(cl.stdout)
	opts.OnEvent = func(e supervisor.Event) {
		mu.Lock()
		defer mu.Unlock()
		_ = enc.Encode(e) // a reader that went away must not stop the team
	}
	stopNotes, err := notifyHeadless(ctx, st, notes, func(w string) { opts.OnEvent(supervisor.Event{"event": "warning", "warning": w}) })
	if err != nil {
		return cl.fail(err)
	}
	defer stopNotes()
	if err := supervisor.Run(ctx, st, cl.dir, opts); err != nil {
		return cl.fail(err)
	}
	return exitOK
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

func attachFlags(fs *flag.FlagSet) runFunc {
	no := addNotifyFlags(fs)
	return func(cl *cmdline) int { return runAttach(cl, no) } // --dir, or --store and --nats-creds
}

func runAttach(cl *cmdline, no *notifyOpts) int {
	if code, ok := cl.wantArgs(0, 0, ""); !ok {
		return code
	}
	notes, code, ok := no.resolve(cl)
	if !ok {
		return code
	}
	if !isTerminal(cl.stdout) {
		return cl.exit(exitUsage, "stdout is not a terminal, and the UI needs one ('huddle up --headless' prints events instead)")
	}
	if cl.remote() {
		return attachStore(cl, notes)
	}
	t, err := team.Load(cl.dir)
	if err != nil {
		return cl.fail(err)
	}
	ctx, stop := signalContext()
	defer stop()
	ui, closeStore, err := dirUI(ctx, cl.dir)
	if err != nil {
		return cl.fail(err)
	}
	defer closeStore()
	if t.Desk { // its members are a person's sessions: no runtime, no inbox read
		ui.NoRuntime, ui.Actions = true, tui.DeskActions(tui.StoreLead(ctx, ui.Store))
	}
	ui.Notify = notes
	if err := tui.Run(ctx, ui); err != nil {
		return cl.fail(err)
	}
	return exitOK
}

// openUpStore opens the store of huddle up --store: a bad URL or member
// list is a usage error, an unreachable server a failure; neither shows a
// credential.
func openUpStore(ctx context.Context, cl *cmdline, members string) (store.Store, int, bool) {
	for _, m := range splitMembers(members) {
		if err := checkMemberFlag(m); err != nil {
			return nil, cl.usageError("--members: %v", err), false
		}
	}
	st, err := openStore(ctx, cl)
	if err != nil {
		return nil, cl.fail(err), false // it names the URL, credentials redacted (natsstore.Redact)
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
