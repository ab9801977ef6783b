package full

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"syscall"
	"time"

	tea "charm.land/bubbletea/v2"

	"huddle/claudeteam"
	"huddle/internal/cli"
	"huddle/protocol"
	"huddle/team"
	"huddle/team/view"
	"huddle/tui"
)

type claudeOpts struct {
	cli.ClaudeFlags
	journal claudeteam.Journal // what huddle saw of root's teams (claudeteam/journal.go)
}

// claudeFlagsOf says which subcommands take each flag (--root: all).
var claudeFlagsOf = map[string][]string{
	"json":                     {"teams", "status", "requests"},
	"all":                      {"requests"},
	"experimental-permissions": {"attach"},
	"background":               {"watch"},
}

// runClaude is huddle claude SUBCOMMAND: a Claude Code agent team shown
// as huddle shows its own.
func runClaude(cl *cli.Cmdline, o claudeOpts) int {
	if code, ok := cl.WantArgs(1, -1, "a subcommand (teams, status, requests, attach, watch)"); !ok {
		return code
	}
	sub := cl.Args[0]
	run, ok := map[string]func(*cli.Cmdline, string, claudeOpts) int{
		"teams": claudeTeams, "status": claudeStatus, "requests": claudeRequests,
		"attach": claudeAttach, "shutdown": claudeShutdown, "watch": claudeWatch,
	}[sub]
	if !ok {
		return cl.UsageError("no subcommand %q: want teams, status, requests, attach or watch", sub)
	}
	for name, subs := range claudeFlagsOf {
		if cl.FlagGiven(name) && !contains(subs, sub) {
			return cl.UsageError("--%s does not go with %s", name, sub)
		}
	}
	root := o.Root
	if root == "" {
		var err error
		if root, err = claudeteam.DefaultRoot(); err != nil {
			return cl.Fail(err)
		}
	}
	if j, err := claudeteam.DefaultJournal(root); err == nil {
		o.journal = j
	} else {
		fmt.Fprintf(cl.Stderr, "huddle: claude: warning: %v: what Claude Code deletes is not kept\n", err)
	}
	cl.Args = cl.Args[1:]
	return run(cl, root, o)
}

// claudeWatch journals every team under root until a signal (or, with
// --background, starts a process of its own that does and returns): what
// Claude Code deletes stays in huddle's journal. It says nothing on
// stdout, so a SessionStart hook adds nothing to the session.
func claudeWatch(cl *cli.Cmdline, root string, o claudeOpts) int {
	if code, ok := cl.WantArgs(0, 0, ""); !ok {
		return code
	}
	if o.journal == "" {
		return cl.Fail(errors.New("claude watch: no journal to keep (no configuration directory)"))
	}
	if o.Background {
		return claudeWatchBackground(cl, root, o.journal)
	}
	ctx, stop := cli.SignalContext()
	defer stop()
	err := claudeteam.Watch(ctx, root, o.journal, func(t string) {
		fmt.Fprintf(cl.Stderr, "huddle: claude watch: journaling team %s in %s\n", t, o.journal)
	})
	var watching *claudeteam.WatchingError
	if errors.As(err, &watching) {
		fmt.Fprintf(cl.Stderr, "huddle: claude watch: %v\n", err)
		return cli.ExitOK
	}
	if err != nil {
		return cl.Fail(err)
	}
	return cli.ExitOK
}

// claudeWatchBackground starts `huddle claude watch --root ROOT` in a
// session of its own, its output to watch.log in the journal, and returns.
func claudeWatchBackground(cl *cli.Cmdline, root string, j claudeteam.Journal) int {
	exe, err := os.Executable()
	if err != nil {
		return cl.Fail(err)
	}
	if err := os.MkdirAll(string(j), 0o700); err != nil {
		return cl.Fail(err)
	}
	logf, err := os.OpenFile(filepath.Join(string(j), "watch.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return cl.Fail(err)
	}
	defer logf.Close()
	cmd := exec.Command(exe, "claude", "watch", "--root", root)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return cl.Fail(err)
	}
	fmt.Fprintf(cl.Stderr, "huddle: claude watch: journaling in the background (pid %d; log %s)\n", cmd.Process.Pid, logf.Name())
	_ = cmd.Process.Release()
	return cli.ExitOK
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// pickTeam is the TEAM argument (optional with one team under root).
func pickTeam(cl *cli.Cmdline, root string, j claudeteam.Journal) (string, int, bool) {
	if code, ok := cl.WantArgs(0, 1, ""); !ok {
		return "", code, false
	}
	name := ""
	if len(cl.Args) == 1 {
		name = cl.Args[0]
	}
	t, err := claudeteam.PickTeam(root, name, j)
	if err != nil {
		return "", cl.Fail(err), false
	}
	return t, 0, true
}

type claudeTeamRow struct {
	Name    string `json:"name"`
	Members int    `json:"members"`
	Pending int    `json:"pending"`
	Error   string `json:"error,omitempty"`
	// Gone: Claude Code removed the team; huddle's journal holds it.
	Gone bool `json:"gone,omitempty"`
}

func claudeTeams(cl *cli.Cmdline, root string, o claudeOpts) int {
	if code, ok := cl.WantArgs(0, 0, ""); !ok {
		return code
	}
	names, err := claudeteam.Teams(root)
	if err != nil {
		return cl.Fail(err)
	}
	journaled, err := o.journal.Teams()
	if err != nil {
		return cl.Fail(err)
	}
	for _, n := range journaled {
		if !contains(names, n) {
			names = append(names, n)
		}
	}
	rows := []claudeTeamRow{}
	for _, n := range names {
		st, err := claudeteam.ReadFrom(root, n, o.journal)
		if err != nil {
			return cl.Fail(err)
		}
		row := claudeTeamRow{Name: n, Members: len(st.Config.Members), Pending: st.Snapshot.Pending, Error: st.Snapshot.TeamErr, Gone: st.Gone}
		if st.Gone {
			row.Error = "removed by Claude Code; kept in huddle's journal"
		}
		rows = append(rows, row)
	}
	if o.JSON {
		return cl.PrintJSON(rows)
	}
	if len(rows) == 0 {
		fmt.Fprintf(cl.Stdout, "no Claude Code team under %s\n", root)
		return cli.ExitOK
	}
	tw := cli.NewTable(cl.Stdout, 4)
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d members\t%d pending\t%s\n", r.Name, r.Members, r.Pending, r.Error)
	}
	return flushed(cl, tw)
}

func flushed(cl *cli.Cmdline, tw *cli.Table) int {
	if err := tw.Flush(); err != nil {
		return cl.Fail(err)
	}
	return cli.ExitOK
}

type claudeMemberRow struct {
	Name     string     `json:"name"`
	Role     string     `json:"role,omitempty"`
	Status   string     `json:"status"`
	Activity string     `json:"activity,omitempty"`
	Since    *time.Time `json:"since,omitempty"`
	Unread   int        `json:"unread"`
}

type claudeStatusOut struct {
	Team    string            `json:"team"`
	Error   string            `json:"error,omitempty"`
	Members []claudeMemberRow `json:"members"`
	Tasks   []claudeteam.Task `json:"tasks"`
	Pending int               `json:"pending"`
}

func claudeStatus(cl *cli.Cmdline, root string, o claudeOpts) int {
	name, code, ok := pickTeam(cl, root, o.journal)
	if !ok {
		return code
	}
	st, err := claudeteam.ReadFrom(root, name, o.journal)
	if err != nil {
		return cl.Fail(err)
	}
	out := claudeStatusOut{Team: name, Error: st.Snapshot.TeamErr, Members: []claudeMemberRow{}, Tasks: st.Tasks, Pending: st.Snapshot.Pending}
	if out.Tasks == nil {
		out.Tasks = []claudeteam.Task{}
	}
	for _, mv := range st.Snapshot.Members {
		r := mv.Record
		row := claudeMemberRow{Name: r.Name, Role: r.Role, Status: string(r.Status), Activity: r.Activity, Unread: mv.Unread}
		if !r.Since.IsZero() {
			since := r.Since
			row.Since = &since
		}
		out.Members = append(out.Members, row)
	}
	if o.JSON {
		return cl.PrintJSON(out)
	}
	if out.Error != "" {
		fmt.Fprintf(cl.Stderr, "huddle: claude: warning: team %s: %s\n", name, out.Error)
	}
	now := time.Now()
	tw := cli.NewTable(cl.Stdout, 4)
	fmt.Fprintf(tw, "claude team %s (%d pending)\n", name, out.Pending)
	fmt.Fprintln(tw, "MEMBER\tSTATUS\tSINCE\tUNREAD\tACTIVITY")
	for _, m := range out.Members {
		since := "-"
		if m.Since != nil {
			since = now.Sub(*m.Since).Round(time.Second).String() + " ago"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", m.Name, m.Status, since, m.Unread, team.Printable(m.Activity))
	}
	for _, t := range out.Tasks {
		if !t.Internal() {
			fmt.Fprintf(tw, "task #%s\t%s\t%s\t\t%s\n", t.ID, t.Status, t.Owner, team.Printable(t.Subject))
		}
	}
	return flushed(cl, tw)
}

func claudeRequests(cl *cli.Cmdline, root string, o claudeOpts) int {
	name, code, ok := pickTeam(cl, root, o.journal)
	if !ok {
		return code
	}
	st, err := claudeteam.ReadFrom(root, name, o.journal)
	if err != nil {
		return cl.Fail(err)
	}
	reqs := []protocol.Request{}
	for _, r := range st.Snapshot.Requests {
		if o.All || r.Status == protocol.RequestPending {
			reqs = append(reqs, r)
		}
	}
	if o.JSON {
		return cl.PrintJSON(reqs)
	}
	if len(reqs) == 0 {
		fmt.Fprintf(cl.Stdout, "no pending requests in claude team %s\n", name)
		return cli.ExitOK
	}
	now := time.Now()
	tw := cli.NewTable(cl.Stdout, 4)
	fmt.Fprintln(tw, "ID\tKIND\tFROM → TO\tSTATUS\tAGE\tWHAT")
	for _, r := range reqs {
		status := string(r.Status)
		if r.ResolvedBy != "" {
			status += " by " + r.ResolvedBy
		}
		what := r.Plan + r.Reason
		fmt.Fprintf(tw, "%s\t%s\t%s → %s\t%s\t%s\t%s\n", r.ID, r.Kind, r.From, r.To, status, now.Sub(r.Created).Round(time.Second), team.Clip(team.Printable(what), 60))
	}
	return flushed(cl, tw)
}

// claudeShutdownRefusal is why huddle asks no Claude Code teammate to shut
// down (docs/claude-teams.md, measured on 2.1.328).
const claudeShutdownRefusal = "Claude Code marks what another process appends to an inbox verified=\"false\", " +
	"and a teammate refuses a shutdown that did not come from its own lead; ask from the lead's session"

// claudeShutdown refuses, saying why: the shutdown_request huddle used to
// append is one the real CLI will not act on.
func claudeShutdown(cl *cli.Cmdline, _ string, _ claudeOpts) int {
	return cl.Fail(errors.New("huddle cannot shut down a Claude Code teammate: " + claudeShutdownRefusal))
}

func claudeAttach(cl *cli.Cmdline, root string, o claudeOpts) int {
	name, code, ok := pickTeam(cl, root, o.journal)
	if !ok {
		return code
	}
	if !cli.IsTerminal(cl.Stdout) {
		return cl.Exit(cli.ExitUsage, "stdout is not a terminal, and the UI needs one ('huddle claude status' prints the team instead)")
	}
	ctx, stop := cli.SignalContext()
	defer stop()
	opts := claudeRunOptions(root, name, o.journal, o.Permissions)
	if err := tui.Run(ctx, opts); err != nil {
		return cl.Fail(err)
	}
	return cli.ExitOK
}

// claudeRunOptions is the UI on a Claude Code team: fed by its observer,
// acting through claudeActions.
func claudeRunOptions(root, name string, j claudeteam.Journal, permissions bool) tui.RunOptions {
	footer := fmt.Sprintf("claude code team %s (%s)", name, root)
	if permissions {
		footer += " · experimental: a/r answer permission requests"
	}
	return tui.RunOptions{
		Dir:    root,
		Footer: footer,
		Connect: func(ctx context.Context, send func(tea.Msg)) (func() error, error) {
			obs, err := claudeteam.ObserveSnapshots(ctx, root, name, j, func(s view.Snapshot) { send(tui.SnapshotMsg(s)) })
			if err != nil {
				return nil, err
			}
			return obs.Close, nil
		},
		Actions: claudeActions{root: root, team: name, permissions: permissions, by: answerer()},
		NoFeed:  "huddle keeps no log of a member it does not run",
	}
}

// answerer is who answers from huddle, recorded in a permission_response.
func answerer() string {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if name == "" {
		name = "unknown"
	}
	return "huddle:" + name
}

// claudeActions are the UI's keys on a Claude Code team.
type claudeActions struct {
	root, team  string
	permissions bool
	by          string
}

// The refusals of a Claude Code team's keys, each short enough for one
// uncut status line at 80 columns (docs/claude-teams.md says the why at
// length: its lead approves plans itself, anthropics/claude-code#27265).
const (
	planRefusal     = "its lead decides a Claude Code team's plans: huddle only shows them"
	permissionsOff  = "to answer permissions: huddle claude attach --experimental-permissions"
	shutdownRefusal = "a Claude Code teammate takes a shutdown only from its lead's session"
	sendRefusal     = "huddle sends no messages to a Claude Code team: use the lead's session"
)

func (a claudeActions) Refuses(r *protocol.Request) string {
	switch {
	case r.Kind == protocol.KindPlan:
		return planRefusal
	case r.Kind == protocol.KindPermission && !a.permissions:
		return permissionsOff
	}
	return ""
}

func (a claudeActions) Approve(id string) (string, error) { return a.answer(id, true, "") }

func (a claudeActions) Reject(id, feedback string) (string, error) {
	return a.answer(id, false, feedback)
}

func (a claudeActions) answer(id string, approve bool, reason string) (string, error) {
	if !a.permissions {
		return "", errors.New(permissionsOff)
	}
	r, err := claudeteam.AnswerPermission(context.Background(), a.root, a.team, id, approve, a.by, reason)
	if err != nil {
		if r.Kind == protocol.KindPlan {
			return "", errors.New(planRefusal)
		}
		return "", err
	}
	verb := "allowed"
	if !approve {
		verb = "denied"
	}
	return fmt.Sprintf("%s %s for %s (as %s)", verb, id, r.From, a.by), nil
}

func (a claudeActions) Shutdown(string) (string, error) { return "", errors.New(shutdownRefusal) }

// RefusesShutdown and RefusesMessage keep s and m out of the footer of a
// Claude Code team, and have them say why at once (tui.MemberRefuser).
func (a claudeActions) RefusesShutdown() string { return shutdownRefusal }
func (a claudeActions) RefusesMessage() string  { return sendRefusal }

func (a claudeActions) Send(string, string) (string, error) { return "", errors.New(sendRefusal) }
func (a claudeActions) Broadcast(string) (string, error)    { return "", errors.New(sendRefusal) }
