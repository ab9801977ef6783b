package full

// The UI on a team kept in a store (docs/ARCHITECTURE.md, "The team directory and the store"): huddle attach
// --store and huddle up --store without --headless. It is fed by the
// store's observer (view.Observe, as a team directory's UI is on its files
// store) and its keys act through the lead's
// operations on the store (team/lead.go), from any machine.

import (
	"context"

	"huddle/internal/cli"
	"huddle/store"
	"huddle/store/filestore"
	"huddle/team"
	"huddle/team/view"
	"huddle/tui"
)

// viewLines is how many lines of a member's log the member view keeps
// (tui's tailEntries): a store's copy read from its start is cut to them.
const viewLines = 500

// storeRunOptions is the UI on the team kept in st, named (credentials
// redacted) in its footer. ctx ends the keys' actions.
func storeRunOptions(ctx context.Context, st store.Store, name string) tui.RunOptions {
	return tui.RunOptions{
		Footer: "attached to the store " + name,
		// The member view reads the store's copy of a member's log or
		// transcript, wherever the member runs.
		Lines: func(member, kind string) view.LineSource {
			k := store.LogStderr
			if kind == string(team.RuntimeLLM) {
				k = store.LogTranscript
			}
			return view.FollowStore(st, member, k, viewLines)
		},
		Store: st,
		// Reviews read the repositories on this machine: the worktrees'
		// paths are those the runtime that made them recorded.
		Actions: tui.Reviews(tui.LeadActions(tui.StoreLead(ctx, st)), tui.StoreReviews(ctx, st, ".")),
	}
}

// dirUI is the UI on the team directory dir, through a files store of its
// own (close it after the UI): observed as any store is, its keys the
// lead's operations as on any store; the store is a screenStore.
func dirUI(ctx context.Context, dir string) (tui.RunOptions, func(), error) {
	st, err := screenStore(dir)
	if err != nil {
		return tui.RunOptions{}, nil, err
	}
	// The observer stops its watches as the UI ends; the lead's
	// operations start none: closing has nothing to fail on.
	ui := tui.RunOptions{Dir: dir, Store: st, Actions: tui.Reviews(tui.LeadActions(tui.StoreLead(ctx, st)), tui.StoreReviews(ctx, st, dir))}
	return ui, func() { _ = st.Close() }, nil
}

// screenStore opens the team directory dir as a screen's files store:
// it reads what changed at most once a tui.BurstFrame after a burst
// (filestore.Options.Pace), where a runtime's acts on every change.
func screenStore(dir string) (*filestore.Store, error) {
	return filestore.OpenWith(dir, filestore.Options{Pace: tui.BurstFrame})
}

// attachStore is huddle attach --store: the UI on the team in the store,
// which another process (huddle up --store, on any machine) runs.
func attachStore(cl *cli.Cmdline, notes tui.Notify) int {
	return cl.WithStore(func(ctx context.Context, st store.Store) int {
		if _, err := team.LoadFrom(ctx, st); err != nil {
			return cl.Fail(err)
		}
		ui := storeRunOptions(ctx, st, cl.StoreName())
		ui.Notify = notes
		if err := tui.Run(ctx, ui); err != nil {
			return cl.Fail(err)
		}
		return cli.ExitOK
	})
}
