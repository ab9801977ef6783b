package cli

// The lead's commands. Each acts on a team directory through package team, so
// it works the same whether or not a team is running in another terminal.

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"huddle/protocol"
	"huddle/team"
)

func init() {
	commands = append(commands,
		command{name: "init", summary: "write the demo team as an editable team.json (--ipc: a Puruto repo's IPC files)", run: runInit},
		command{name: "status", summary: "show each member's status and activity", run: runStatus},
		command{name: "requests", summary: "list pending requests (--all for every one)", run: runRequests},
		command{name: "approve", summary: "approve a teammate's plan", run: runApprove},
		command{name: "reject", summary: "reject a teammate's plan, with feedback", run: runReject},
		command{name: "shutdown", summary: "ask a teammate to shut down", run: runShutdown},
		command{name: "send", summary: "send a message to a member", run: runSend},
		command{name: "broadcast", summary: "send a message to every member", run: runBroadcast},
	)
}

// huddleDir is the default team directory: $HUDDLE_DIR, else .huddle.
func huddleDir() string {
	if d := os.Getenv("HUDDLE_DIR"); d != "" {
		return d
	}
	return ".huddle"
}

// leadCmd is one lead command: its flags (--dir and its own) and how it
// reports. Every error is one line on stderr.
type leadCmd struct {
	name, synopsis, about string
	fs                    *flag.FlagSet
	dir                   *string
	stderr                io.Writer
}

func newLeadCmd(name, synopsis, about string, stderr io.Writer) *leadCmd {
	c := &leadCmd{name: name, synopsis: synopsis, about: about, stderr: stderr}
	c.fs = newFlags(name, synopsis, stderr)
	// The flag package's own messages are replaced by one line (see parse).
	c.fs.SetOutput(io.Discard)
	c.fs.Usage = func() {}
	c.dir = c.fs.String("dir", huddleDir(), "team `directory` ($HUDDLE_DIR, else .huddle)")
	return c
}

func (c *leadCmd) usage() {
	fmt.Fprintf(c.stderr, "usage: huddle %s %s\n\n%s\n\nflags:\n", c.name, c.synopsis, c.about)
	c.fs.SetOutput(c.stderr)
	c.fs.PrintDefaults()
	c.fs.SetOutput(io.Discard)
}

// parse parses flags wherever they stand among the positional arguments (Go's
// flag package stops at the first one; "--" still ends the flags) and returns
// the positional ones. When ok is false the command stops with code.
func (c *leadCmd) parse(args []string) (pos []string, code int, ok bool) {
	for {
		err := c.fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			c.usage()
			return nil, exitOK, false
		}
		if err != nil {
			return nil, c.badArgs("%v", err), false
		}
		rest := c.fs.Args()
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		if len(rest) == 0 {
			break
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
	if *c.dir == "" {
		return nil, c.badArgs("--dir is empty"), false
	}
	return pos, 0, true
}

// fail reports a failure in one line and returns exitFail.
func (c *leadCmd) fail(err error) int {
	fmt.Fprintf(c.stderr, "huddle: %s\n", oneLine(err.Error()))
	return exitFail
}

// badArgs reports bad arguments in one line and returns exitUsage.
func (c *leadCmd) badArgs(format string, a ...any) int {
	msg := oneLine(fmt.Sprintf(format, a...))
	fmt.Fprintf(c.stderr, "huddle: %s: %s (see 'huddle %s -h')\n", c.name, msg, c.name)
	return exitUsage
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// wantArgs checks the number of positional arguments: at least min, and at
// most max unless max < 0.
func (c *leadCmd) wantArgs(pos []string, min, max int, what string) (int, bool) {
	switch {
	case len(pos) < min:
		return c.badArgs("%s is required", what), false
	case max >= 0 && len(pos) > max:
		return c.badArgs("unexpected argument %q", pos[max]), false
	}
	return 0, true
}

// requireTeam checks that the directory holds a team, without judging its
// team.json: requests can still be read and decided while it is being edited.
func requireTeam(dir string) error {
	if _, err := os.Stat(team.ConfigPath(dir)); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("no team in %s (run 'huddle init --dir %s')", dir, dir)
		}
		return err
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func runInit(args []string, stdout, stderr io.Writer) int {
	c := newLeadCmd("init", "[--dir D] | --ipc [PATH] [--owner NAME]",
		"Write the demo team as team.json in the team directory, to edit into your own.\n"+
			"With --ipc, write a Puruto repo's .puruto-ipc.json and /call skill in PATH instead.\n"+
			"An existing file is never overwritten.", stderr)
	ipcRepo := c.fs.Bool("ipc", false, "write .puruto-ipc.json and .claude/skills/call/SKILL.md in PATH (default .)")
	owner := c.fs.String("owner", "", "with --ipc: the owner `name` (default: PATH's base name)")
	pos, code, ok := c.parse(args)
	if !ok {
		return code
	}
	if *ipcRepo || *owner != "" {
		return initIPC(c, pos, *ipcRepo, *owner, stdout)
	}
	if code, ok := c.wantArgs(pos, 0, 0, ""); !ok {
		return code
	}
	if err := team.Init(*c.dir); err != nil {
		return c.fail(err)
	}
	var names []string
	if t, err := team.Parse(team.DemoTeam()); err == nil {
		for _, m := range t.Members {
			names = append(names, m.Name)
		}
	}
	fmt.Fprintf(stdout, "wrote %s: the demo team (%s); edit it to make it yours\n",
		team.ConfigPath(*c.dir), strings.Join(names, ", "))
	return exitOK
}

// notStarted is the status of a member that has no status record yet.
const notStarted = "not started"

// memberRow is one line of `huddle status`: a member of team.json joined
// with its status record.
type memberRow struct {
	Name     string     `json:"name"`
	Role     string     `json:"role,omitempty"`
	Runtime  string     `json:"runtime"`
	Status   string     `json:"status"`
	Activity string     `json:"activity,omitempty"`
	Since    *time.Time `json:"since,omitempty"`
	PID      int        `json:"pid,omitempty"`
	Error    string     `json:"error,omitempty"`
}

func runStatus(args []string, stdout, stderr io.Writer) int {
	c := newLeadCmd("status", "[--dir D] [--json]",
		"Show every member of team.json with its live status record: status (or \"not started\"),\n"+
			"what it is doing, and since when.", stderr)
	asJSON := c.fs.Bool("json", false, "print a JSON array instead of a table")
	pos, code, ok := c.parse(args)
	if !ok {
		return code
	}
	if code, ok := c.wantArgs(pos, 0, 0, ""); !ok {
		return code
	}
	t, err := team.Load(*c.dir)
	if err != nil {
		return c.fail(err)
	}
	recs, err := team.ListMembers(*c.dir)
	if err != nil {
		return c.fail(fmt.Errorf("members: %w", err))
	}
	byName := map[string]protocol.Member{}
	for _, r := range recs {
		byName[r.Name] = r
	}
	rows := []memberRow{}
	for _, m := range t.Members {
		row := memberRow{Name: m.Name, Role: m.Role, Runtime: m.Runtime.Kind, Status: notStarted}
		if r, ok := byName[m.Name]; ok {
			row.Status, row.Activity, row.PID, row.Error = string(r.Status), r.Activity, r.PID, r.Error
			if !r.Since.IsZero() {
				since := r.Since
				row.Since = &since
			}
		}
		rows = append(rows, row)
	}
	if *asJSON {
		if err := writeJSON(stdout, rows); err != nil {
			return c.fail(err)
		}
		return exitOK
	}
	now := time.Now()
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "team %s\n", t.Name)
	fmt.Fprintln(tw, "NAME\tROLE\tRUNTIME\tSTATUS\tACTIVITY\tSINCE")
	for _, r := range rows {
		activity := r.Activity
		if r.Error != "" {
			activity = "error: " + r.Error
		}
		since := "-"
		if r.Since != nil {
			since = r.Since.Local().Format("15:04:05") + " (" + shortDuration(now.Sub(*r.Since)) + " ago)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, dash(r.Role), r.Runtime, r.Status, dash(oneLine(activity)), since)
	}
	if err := tw.Flush(); err != nil {
		return c.fail(err)
	}
	return exitOK
}

func runRequests(args []string, stdout, stderr io.Writer) int {
	c := newLeadCmd("requests", "[--all] [--json] [--dir D]",
		"List pending plan and shutdown requests, oldest first: id, kind, from → to, status,\n"+
			"age and time left before the deadline.", stderr)
	all := c.fs.Bool("all", false, "list every request, not only pending ones")
	asJSON := c.fs.Bool("json", false, "print the request records as a JSON array")
	pos, code, ok := c.parse(args)
	if !ok {
		return code
	}
	if code, ok := c.wantArgs(pos, 0, 0, ""); !ok {
		return code
	}
	if err := requireTeam(*c.dir); err != nil {
		return c.fail(err)
	}
	list, err := team.ListRequests(*c.dir)
	if err != nil {
		return c.fail(fmt.Errorf("requests: %w", err))
	}
	out := []protocol.Request{}
	for _, r := range list {
		if r.Status == protocol.RequestPending {
			// The decision file is the truth: finish a resolution whose
			// rewrite of the record was interrupted.
			if applied, err := team.ApplyDecision(*c.dir, r.ID); err == nil {
				r = *applied
			}
		}
		if *all || r.Status == protocol.RequestPending {
			out = append(out, r)
		}
	}
	if *asJSON {
		if err := writeJSON(stdout, out); err != nil {
			return c.fail(err)
		}
		return exitOK
	}
	if len(out) == 0 {
		if *all {
			fmt.Fprintln(stdout, "no requests")
		} else {
			fmt.Fprintln(stdout, "no pending requests")
		}
		return exitOK
	}
	now := time.Now()
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKIND\tFROM → TO\tSTATUS\tAGE\tLEFT")
	for _, r := range out {
		status, left := string(r.Status), "-"
		if r.Status == protocol.RequestPending {
			if d := r.Deadline.Sub(now); d > 0 {
				left = shortDuration(d)
			} else {
				left = "overdue " + shortDuration(d)
			}
		} else if r.ResolvedBy != "" {
			status += " by " + r.ResolvedBy
		}
		fmt.Fprintf(tw, "%s\t%s\t%s → %s\t%s\t%s\t%s\n", r.ID, r.Kind, r.From, r.To, status, shortDuration(now.Sub(r.Created)), left)
	}
	if err := tw.Flush(); err != nil {
		return c.fail(err)
	}
	return exitOK
}

func runApprove(args []string, stdout, stderr io.Writer) int {
	c := newLeadCmd("approve", "ID [--feedback TEXT] [--dir D]",
		"Approve a teammate's pending plan as the lead; the teammate is told at once.\n"+
			"The first decision wins: if the request was resolved already, says by whom and exits 1.", stderr)
	return decide(c, true, args, stdout)
}

func runReject(args []string, stdout, stderr io.Writer) int {
	c := newLeadCmd("reject", "ID --feedback TEXT [--dir D]",
		"Reject a teammate's pending plan as the lead, saying what to change; the teammate is\n"+
			"told at once and revises. The first decision wins: if the request was resolved\n"+
			"already, says by whom and exits 1.", stderr)
	return decide(c, false, args, stdout)
}

func decide(c *leadCmd, approve bool, args []string, stdout io.Writer) int {
	help := "what the teammate should know"
	if !approve {
		help = "what to change (required)"
	}
	feedback := c.fs.String("feedback", "", help)
	pos, code, ok := c.parse(args)
	if !ok {
		return code
	}
	if code, ok := c.wantArgs(pos, 1, 1, "a request ID"); !ok {
		return code
	}
	id := pos[0]
	if err := protocol.ValidateID(id); err != nil {
		return c.badArgs("%v", err)
	}
	if !approve && strings.TrimSpace(*feedback) == "" {
		return c.badArgs("--feedback is required: say what to change")
	}
	if err := requireTeam(*c.dir); err != nil {
		return c.fail(err)
	}
	r, err := team.Decide(*c.dir, id, approve, *feedback, protocol.Lead)
	if err != nil {
		return c.fail(err)
	}
	fmt.Fprintf(stdout, "%s %s: %s's plan; %s has been told\n", r.Status, r.ID, r.From, r.From)
	return exitOK
}

func runShutdown(args []string, stdout, stderr io.Writer) int {
	c := newLeadCmd("shutdown", "MEMBER [--reason TEXT] [--dir D]",
		"Ask a teammate to shut down and print the request id. The teammate answers: it may\n"+
			"refuse while busy. A member that is already stopped gets a request cancelled at once.", stderr)
	reason := c.fs.String("reason", "", "why the lead asks")
	pos, code, ok := c.parse(args)
	if !ok {
		return code
	}
	if code, ok := c.wantArgs(pos, 1, 1, "a MEMBER"); !ok {
		return code
	}
	if err := protocol.ValidateMemberName(pos[0]); err != nil {
		return c.badArgs("%v", err)
	}
	r, err := team.RequestShutdown(*c.dir, pos[0], *reason)
	if err != nil {
		return c.fail(err)
	}
	fmt.Fprintln(stdout, r.ID)
	if r.Status == protocol.RequestCancelled {
		fmt.Fprintf(stdout, "cancelled: %s\n", oneLine(r.ResponseReason))
	}
	return exitOK
}

func runSend(args []string, stdout, stderr io.Writer) int {
	c := newLeadCmd("send", "MEMBER TEXT... [--from NAME] [--dir D]",
		"Append a message to a member's inbox. The words of TEXT are joined by spaces;\n"+
			"put -- before text that starts with a dash.", stderr)
	from := c.fs.String("from", protocol.Lead, "sender: the lead or a member")
	pos, code, ok := c.parse(args)
	if !ok {
		return code
	}
	if code, ok := c.wantArgs(pos, 1, -1, "a MEMBER"); !ok {
		return code
	}
	member := pos[0]
	if err := protocol.ValidateMemberName(member); err != nil {
		return c.badArgs("%v", err)
	}
	if err := protocol.ValidateName(*from); err != nil {
		return c.badArgs("--from: %v", err)
	}
	text := strings.Join(pos[1:], " ")
	if strings.TrimSpace(text) == "" {
		return c.badArgs("TEXT is required")
	}
	t, err := team.Load(*c.dir)
	if err != nil {
		return c.fail(err)
	}
	if err := team.Send(*c.dir, t, *from, member, text); err != nil {
		return c.fail(err)
	}
	fmt.Fprintf(stdout, "sent to %s\n", member)
	return exitOK
}

func runBroadcast(args []string, stdout, stderr io.Writer) int {
	c := newLeadCmd("broadcast", "TEXT... [--from NAME] [--dir D]",
		"Append a message to the inbox of every member but the sender. The words of TEXT are\n"+
			"joined by spaces; put -- before text that starts with a dash.", stderr)
	from := c.fs.String("from", protocol.Lead, "sender: the lead or a member")
	pos, code, ok := c.parse(args)
	if !ok {
		return code
	}
	if err := protocol.ValidateName(*from); err != nil {
		return c.badArgs("--from: %v", err)
	}
	text := strings.Join(pos, " ")
	if strings.TrimSpace(text) == "" {
		return c.badArgs("TEXT is required")
	}
	t, err := team.Load(*c.dir)
	if err != nil {
		return c.fail(err)
	}
	n, err := team.Broadcast(*c.dir, t, *from, text)
	if err != nil {
		return c.fail(fmt.Errorf("broadcast reached %d members, then: %w", n, err))
	}
	fmt.Fprintf(stdout, "broadcast to %d members\n", n)
	return exitOK
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// shortDuration prints d (its absolute value) to the second: 42s, 3m05s,
// 2h03m, 3d04h.
func shortDuration(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	const day = 24 * time.Hour
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", d/time.Second)
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", d/time.Minute, d%time.Minute/time.Second)
	case d < day:
		return fmt.Sprintf("%dh%02dm", d/time.Hour, d%time.Hour/time.Minute)
	}
	return fmt.Sprintf("%dd%02dh", d/day, d%day/time.Hour)
}
