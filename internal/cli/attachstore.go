package cli

// The UI on a team kept in a store (docs/DESIGN.md §16): huddle attach
// --store and huddle up --store without --headless. It is fed by the
// store's observer (team.ObserveOn) and its keys act through the lead's
// operations on the store (team/onstore.go), from any machine.

import (
	"context"
	"time"

	tea "charm.land/bubbletea/v2"

	"huddle/protocol"
	"huddle/store"
	"huddle/team"
	"huddle/tui"
)

// actTimeout bounds one key's action on the store: an unreachable server
// is a flashed error, not a hung action.
const actTimeout = 30 * time.Second

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
		Lines: func(member, kind string) team.LineSource {
			k := store.LogStderr
			if kind == string(team.RuntimeLLM) {
				k = store.LogTranscript
			}
			return team.FollowStore(st, member, k, viewLines)
		},
		Connect: func(ctx context.Context, send func(tea.Msg)) (func() error, error) {
			obs, err := team.ObserveOn(ctx, st, team.LostAfter, team.ObserveOptions{}, func(s team.Snapshot) { send(tui.SnapshotMsg(s)) })
			if err != nil {
				return nil, err
			}
			return obs.Close, nil
		},
		Actions: tui.LeadActions(storeLead(ctx, st)),
	}
}

// storeLead is the lead's operations on st, each under its own deadline.
func storeLead(ctx context.Context, st store.Store) tui.Lead {
	withTeam := func(f func(ctx context.Context, t *team.Team) error) error {
		ctx, cancel := context.WithTimeout(ctx, actTimeout)
		defer cancel()
		t, err := team.LoadTeamOn(ctx, st)
		if err != nil {
			return err
		}
		return f(ctx, t)
	}
	return tui.Lead{
		Decide: func(id string, ev protocol.RequestEvent, feedback string) (*protocol.Request, error) {
			ctx, cancel := context.WithTimeout(ctx, actTimeout)
			defer cancel()
			return team.DecideOn(ctx, st, id, ev, feedback, protocol.Lead)
		},
		RequestShutdown: func(member, reason string) (r *protocol.Request, err error) {
			err = withTeam(func(ctx context.Context, t *team.Team) error {
				r, err = team.RequestShutdownOn(ctx, st, t, member, reason)
				return err
			})
			return r, err
		},
		Send: func(member, text string) error {
			return withTeam(func(ctx context.Context, t *team.Team) error {
				return team.SendOn(ctx, st, t, protocol.Lead, member, text)
			})
		},
		Broadcast: func(text string) (n int, err error) {
			err = withTeam(func(ctx context.Context, t *team.Team) error {
				n, err = team.BroadcastOn(ctx, st, t, protocol.Lead, text)
				return err
			})
			return n, err
		},
		// R asks the runtime holding the member's lease, on any machine,
		// as huddle restart --store does; the roster shows the new run.
		Restart: func(member string) error {
			ctx, cancel := context.WithTimeout(ctx, actTimeout)
			defer cancel()
			_, err := team.RequestRestartOn(ctx, st, member)
			return err
		},
	}
}

// attachStore is huddle attach --store: the UI on the team in the store,
// which another process (huddle up --store, on any machine) runs.
func attachStore(cl *cmdline) int {
	return cl.withStore(func(ctx context.Context, st store.Store) int {
		if _, err := team.LoadTeamOn(ctx, st); err != nil {
			return cl.fail(err)
		}
		if err := tui.Run(ctx, storeRunOptions(ctx, st, cl.storeName())); err != nil {
			return cl.fail(err)
		}
		return exitOK
	})
}
