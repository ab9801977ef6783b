package cli

// The lead's commands. Each acts on a team directory through package team, so
// it works the same whether or not a team is running in another terminal.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"huddle/protocol"
	"huddle/store"
	"huddle/team"
	"huddle/teamdir"
)

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

// warnCorrupt says, one line each, which records cannot be read.
func warnCorrupt(cl *Cmdline, bad []store.CorruptError) {
	for i := range bad {
		fmt.Fprintf(cl.Stderr, "huddle: %s: warning: %v\n", cl.Name, team.Printable(bad[i].Error()))
	}
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func initFlags(fs *flag.FlagSet) runFunc {
	ipcRepo := fs.Bool("ipc", false, "write .puruto-ipc.json and .claude/skills/call/SKILL.md in PATH (default .)")
	owner := fs.String("owner", "", "with --ipc: the owner `name` (default: PATH's base name)")
	template := fs.String("template", "demo", "the `name` of the team to write: demo (scripted, offline) or llm (model-driven)")
	return func(cl *Cmdline) int { return runInit(cl, *ipcRepo, *owner, *template) }
}

func runInit(cl *Cmdline, ipcRepo bool, owner, template string) int {
	if ipcRepo || owner != "" {
		if cl.Remote() {
			return cl.UsageError("--ipc writes a repo's files: it does not go with --store")
		}
		if cl.FlagGiven("template") {
			return cl.UsageError("--template does not go with --ipc")
		}
		return initIPC(cl, ipcRepo, owner)
	}
	if code, ok := cl.WantArgs(0, 0, ""); !ok {
		return code
	}
	switch template {
	case "demo", "llm":
	default:
		return cl.UsageError("--template %q: want demo or llm", template)
	}
	files, from, code, ok := initSource(cl, template)
	if !ok {
		return code
	}
	// Every machine of a team kept in a store may run init: a second run
	// changes nothing, and says what it put. On a directory it is one
	// person's first step, refused when it was taken.
	shared := cl.Remote()
	return cl.WithState(NeedNone, func(ctx context.Context, st store.Store) int {
		for _, f := range files {
			err := st.PutConfig(ctx, f.Name, f.Data)
			switch {
			case errors.Is(err, store.ErrExists) && shared:
				fmt.Fprintf(cl.Stdout, "%s is in the store already: left as it is\n", f.Name)
			case errors.Is(err, store.ErrExists):
				return cl.Fail(fmt.Errorf("init: %s already exists; not overwriting it", filepath.Join(cl.Dir, filepath.FromSlash(f.Name))))
			case err != nil:
				return cl.Fail(fmt.Errorf("put %s: %w", f.Name, err))
			case shared:
				fmt.Fprintf(cl.Stdout, "put %s from %s\n", f.Name, from)
			}
		}
		if shared {
			fmt.Fprintf(cl.Stdout, "team in %s; next: huddle up --store URL\n", cl.StoreName())
			return ExitOK
		}
		if template == "llm" {
			// The members' shared work/ is a directory of this machine's:
			// a store keeps none.
			if err := team.InitLLMWork(cl.Dir); err != nil {
				return cl.Fail(err)
			}
			return saidLLM(cl)
		}
		var names []string
		if t, err := team.Parse(team.DemoTeam()); err == nil {
			for _, m := range t.Members {
				names = append(names, m.Name)
			}
		}
		fmt.Fprintf(cl.Stdout, "wrote %s: the demo team (%s); edit it to make it yours\n",
			team.ConfigPath(cl.Dir), strings.Join(names, ", "))
		fmt.Fprintf(cl.Stdout, "next: huddle up --dir %s\n", cl.Dir)
		return ExitOK
	})
}

// initSource is what init puts in the team's state, and where it is from:
// the template's files; or, on a store, those of the team in --dir when it
// holds one: a store's --dir names where the team comes from, a
// directory's where it goes.
func initSource(cl *Cmdline, template string) ([]team.InitFile, string, int, bool) {
	if cl.Remote() {
		_, err := os.Stat(team.ConfigPath(cl.Dir))
		switch {
		case err == nil && cl.FlagGiven("template"):
			return nil, "", cl.UsageError("--template and the team.json in %s: one or the other", cl.Dir), false
		case err == nil:
			files, err := configFiles(cl.Dir)
			if err != nil {
				return nil, "", cl.Fail(err), false
			}
			return files, cl.Dir, 0, true
		case !errors.Is(err, os.ErrNotExist):
			return nil, "", cl.Fail(err), false
		}
	}
	files, err := team.DemoFiles()
	if template == "llm" {
		files, err = team.LLMFiles(team.LLMTemplateFromEnv(os.Getenv))
	}
	if err != nil {
		return nil, "", cl.Fail(err), false
	}
	return files, "the " + template + " template", 0, true
}

// configFiles are the configuration files of the team in dir that a store
// keeps: team.json (validated), the team's .puruto-ipc.json, and each
// member's policy as ipc/<member>.puruto-ipc.json, those that exist.
func configFiles(dir string) ([]team.InitFile, error) {
	b, err := os.ReadFile(team.ConfigPath(dir))
	if err != nil {
		return nil, fmt.Errorf("team: %w", err)
	}
	t, err := team.Parse(b)
	if err != nil {
		return nil, err
	}
	files := []team.InitFile{{Name: store.ConfigTeam, Data: b}}
	add := func(name, path string) error {
		if err := store.ValidateConfigName(name); err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		files = append(files, team.InitFile{Name: name, Data: data})
		return nil
	}
	if err := add(store.ConfigPolicy, filepath.Join(dir, store.ConfigPolicy)); err != nil {
		return nil, err
	}
	for _, m := range t.Members {
		if p := m.PolicyPath(dir); p != "" {
			if err := add(store.MemberPolicyConfig(m.Name), p); err != nil {
				return nil, err
			}
		}
	}
	return files, nil
}

// saidLLM says what init wrote of the llm template, with the HUDDLE_LLM_*
// settings of the environment.
func saidLLM(cl *Cmdline) int {
	v := team.LLMTemplateFromEnv(os.Getenv)
	key := "no key (a local server)"
	if v.APIKeyEnv != "" {
		key = "the key from $" + v.APIKeyEnv + " when the team runs"
	}
	fmt.Fprintf(cl.Stdout, "wrote %s: planner, coder and reviewer on %s at %s, %s; edit it to make it yours\n",
		team.ConfigPath(cl.Dir), v.Model, v.BaseURL, key)
	fmt.Fprintf(cl.Stdout, "next: huddle up --dir %s, then: huddle send --dir %s planner \"your task\"\n", cl.Dir, cl.Dir)
	return ExitOK
}

// notRunning is the "team not running" line of the team st keeps, or ""
// while a runtime of it runs.
func notRunning(ctx context.Context, st store.Store) string {
	if rt := team.RuntimeOf(ctx, st); team.Down(rt) {
		return team.NotRunning(rt)
	}
	return ""
}

// tokensText is "in 12.3k out 4.1k $0.09": a member's or the team's model
// tokens, and their cost when a price is given; "" when there are none.
func tokensText(in, out int64, cost float64) string {
	if in+out == 0 {
		return ""
	}
	s := "in " + team.Count(in) + " out " + team.Count(out)
	if cost > 0 {
		s += fmt.Sprintf(" $%.2f", cost)
	}
	return s
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
	// An llm member's model tokens and their cost (0: no price given).
	TokensIn  int64   `json:"tokens_in,omitempty"`
	TokensOut int64   `json:"tokens_out,omitempty"`
	CostUSD   float64 `json:"cost_usd,omitempty"`
	// On a store: the member should be running and was not seen within
	// --lost-after (its machine or process went away), and when it was.
	Lost bool       `json:"lost,omitempty"`
	Seen *time.Time `json:"seen,omitempty"`
}

func statusFlags(fs *flag.FlagSet) runFunc {
	asJSON := fs.Bool("json", false, "print a JSON array instead of a table")
	lostAfter := fs.Duration("lost-after", team.LostAfter, "with --store: show a running member `D` unseen (e.g. 15s) as lost")
	return func(cl *Cmdline) int { return runStatus(cl, *asJSON, *lostAfter) }
}

func runStatus(cl *Cmdline, asJSON bool, lostAfter time.Duration) int {
	if code, ok := cl.WantArgs(0, 0, ""); !ok {
		return code
	}
	// On a team directory runtime.lock, not a deadline, says who is lost.
	if cl.FlagGiven("lost-after") && !cl.Remote() {
		return cl.UsageError("--lost-after goes with --store")
	}
	if lostAfter <= 0 {
		return cl.UsageError("--lost-after must be more than 0")
	}
	return cl.WithTeam(func(ctx context.Context, st store.Store) int { return printTeamStatus(ctx, cl, st, asJSON, lostAfter) })
}

// printTeamStatus is huddle status on st: team.json's members joined with
// their records, and the corrupt ones named.
func printTeamStatus(ctx context.Context, cl *Cmdline, st store.Store, asJSON bool, lostAfter time.Duration) int {
	t, err := team.LoadFrom(ctx, st)
	if err != nil {
		return cl.Fail(err)
	}
	states, bad, err := st.Members(ctx, lostAfter)
	if err != nil {
		return cl.Fail(fmt.Errorf("members: %w", err))
	}
	warnCorrupt(cl, bad)
	rt := team.RuntimeOfMembers(ctx, st, states, lostAfter)
	type seen struct {
		rec  protocol.Member
		lost bool
		at   time.Time
	}
	byName := map[string]seen{}
	for _, s := range states {
		rec, lost := team.SeenAs(rt, s)
		byName[s.Name] = seen{rec, lost, s.Seen}
	}
	for i := range bad {
		byName[bad[i].Name] = seen{rec: protocol.Member{Name: bad[i].Name, Status: team.StatusCorrupt, Error: bad[i].Error()}}
	}
	rows := []memberRow{}
	for _, m := range t.Members {
		row := newMemberRow(m)
		if s, ok := byName[m.Name]; ok {
			row.fill(&s.rec)
			if s.lost {
				at := s.at
				row.Lost, row.Seen = true, &at
			}
		}
		rows = append(rows, row)
	}
	notice := ""
	if team.Down(rt) {
		notice = team.NotRunning(rt)
	}
	if full := diskFull(cl); full != "" {
		fmt.Fprintf(cl.Stderr, "huddle: %s: warning: %s\n", cl.Name, full)
		notice = strings.TrimPrefix(notice+"\n"+full, "\n")
	}
	if disk := worktreesDisk(ctx, cl, t); disk != "" {
		notice = strings.TrimPrefix(notice+"\n"+disk, "\n")
	}
	return printStatus(cl, t, rows, notice, asJSON)
}

// diskFull says, on a team directory whose disk is full, that it is and
// what fails meanwhile; "" otherwise (or on a store).
func diskFull(cl *Cmdline) string {
	if cl.Remote() {
		return ""
	}
	free, err := teamdir.FreeSpace(cl.Dir)
	if err != nil || free >= teamdir.FullBelow {
		return ""
	}
	return fmt.Sprintf("the team directory's disk is full (%d KiB free): sends, commits and records fail until space is freed, then resume by themselves", free>>10)
}

// newMemberRow is a member's row before its status record is read.
func newMemberRow(m team.MemberSpec) memberRow {
	return memberRow{Name: m.Name, Role: m.Role, Runtime: m.Runtime.Kind, Status: notStarted}
}

// fill puts a member's status record in its row.
func (row *memberRow) fill(r *protocol.Member) {
	row.Status, row.Activity, row.PID, row.Error = string(r.Status), r.Activity, r.PID, r.Error
	row.TokensIn, row.TokensOut, row.CostUSD = r.Counters.TokensIn, r.Counters.TokensOut, r.Counters.CostUSD
	if !r.Since.IsZero() {
		since := r.Since
		row.Since = &since
	}
}

// printStatus prints the rows of huddle status, as a table under the
// team's name and notice (when not ""), or as JSON.
func printStatus(cl *Cmdline, t *team.Team, rows []memberRow, notice string, asJSON bool) int {
	if asJSON {
		if err := writeJSON(cl.Stdout, rows); err != nil {
			return cl.Fail(err)
		}
		return ExitOK
	}
	now := time.Now()
	tw := NewTable(cl.Stdout, 4)
	fmt.Fprintf(tw, "team %s\n", t.Name)
	if notice != "" {
		fmt.Fprintln(tw, notice)
	}
	fmt.Fprintln(tw, "NAME\tROLE\tRUNTIME\tSTATUS\tTOKENS\tACTIVITY\tSINCE")
	for _, r := range rows {
		activity := r.Activity
		if r.Error != "" {
			activity = "error: " + r.Error
		}
		status := r.Status
		if r.Lost {
			status = "lost"
			activity = "was " + r.Status + ", not seen since " + r.Seen.Local().Format("15:04:05")
		}
		since := "-"
		if r.Since != nil {
			since = r.Since.Local().Format("15:04:05") + " (" + shortDuration(now.Sub(*r.Since)) + " ago)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, dash(r.Role), r.Runtime, status, dash(tokensText(r.TokensIn, r.TokensOut, r.CostUSD)), dash(team.Printable(activity)), since)
	}
	var in, out int64
	var cost float64
	for _, r := range rows {
		in, out, cost = in+r.TokensIn, out+r.TokensOut, cost+r.CostUSD
	}
	if in+out > 0 {
		fmt.Fprintf(tw, "team tokens: %s\n", tokensText(in, out, cost))
	}
	if err := tw.Flush(); err != nil {
		return cl.Fail(err)
	}
	return ExitOK
}

func requestsFlags(fs *flag.FlagSet) runFunc {
	all := fs.Bool("all", false, "list every request, history too (newest first), not only pending ones")
	limit := fs.Int("limit", 0, "list at most `N` requests (0: no limit); with --all, the newest")
	asJSON := fs.Bool("json", false, "print the request records as a JSON array")
	return func(cl *Cmdline) int { return runRequests(cl, *all, *limit, *asJSON) }
}

// listRequests is what huddle requests lists: the pending requests, oldest
// first; with all, then the final ones, newest resolution first, and the
// corrupt ones; at most limit (0: all). Only all reads the archive.
func listRequests(ctx context.Context, cl *Cmdline, st store.Store, all bool, limit int) ([]protocol.Request, error) {
	read := st.LiveRequests
	if all {
		read = st.Requests
	}
	recs, bad, err := read(ctx)
	if err != nil {
		return nil, fmt.Errorf("requests: %w", err)
	}
	if !all {
		bad = undecided(ctx, st, bad)
	}
	var pending, final []protocol.Request
	for _, r := range recs {
		if r.Status == protocol.RequestPending {
			pending = append(pending, r)
		} else {
			final = append(final, r)
		}
	}
	out := pending
	if all {
		slices.SortStableFunc(final, func(a, b protocol.Request) int { return b.ResolvedOrCreated().Compare(a.ResolvedOrCreated()) })
		out = append(out, final...)
		for i := range bad {
			out = append(out, team.CorruptRequest(&bad[i]))
		}
	}
	warnCorrupt(cl, bad)
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// undecided are the corrupt records of bad that have no decision: a
// decided one is no pending request, and the pending list does not warn
// of it.
func undecided(ctx context.Context, st store.Store, bad []store.CorruptError) []store.CorruptError {
	out := bad[:0]
	for _, ce := range bad {
		if r, _ := st.Request(ctx, ce.Name); r == nil {
			out = append(out, ce)
		}
	}
	return out
}

func runRequests(cl *Cmdline, all bool, limit int, asJSON bool) int {
	if code, ok := cl.WantArgs(0, 0, ""); !ok {
		return code
	}
	if limit < 0 {
		return cl.UsageError("--limit must be 0 or more")
	}
	return cl.WithTeam(func(ctx context.Context, st store.Store) int {
		out, err := listRequests(ctx, cl, st, all, limit)
		if err != nil {
			return cl.Fail(err)
		}
		return printRequests(cl, out, all, asJSON, team.RuntimeOf(ctx, st))
	})
}

// printRequests prints what huddle requests lists, as a table or JSON; rt
// says whether deadlines are paused.
func printRequests(cl *Cmdline, out []protocol.Request, all, asJSON bool, rt team.RuntimeState) int {
	if asJSON {
		if out == nil {
			out = []protocol.Request{}
		}
		if err := writeJSON(cl.Stdout, out); err != nil {
			return cl.Fail(err)
		}
		return ExitOK
	}
	down := team.Down(rt)
	if down {
		fmt.Fprintln(cl.Stdout, team.NotRunning(rt)+"; deadlines are paused until it starts")
	}
	if len(out) == 0 {
		if all {
			fmt.Fprintln(cl.Stdout, "no requests")
		} else {
			fmt.Fprintln(cl.Stdout, "no pending requests")
		}
		return ExitOK
	}
	now := time.Now()
	tw := NewTable(cl.Stdout, 4)
	fmt.Fprintln(tw, "ID\tKIND\tFROM → TO\tSTATUS\tAGE\tLEFT\tWHAT")
	for _, r := range out {
		status, left, age := string(r.Status), "-", shortDuration(now.Sub(r.Created))
		switch {
		case r.Status == team.StatusCorrupt:
			status, age = "corrupt: "+team.Printable(r.ResponseReason), "-"
		case r.Status == protocol.RequestPending && down:
			left = "paused, " + leftText(team.LeftWhenPaused(&r, rt))
		case r.Status == protocol.RequestPending:
			left = leftText(r.Deadline.Sub(now))
		case r.ResolvedBy != "":
			status += " by " + r.ResolvedBy
		}
		fmt.Fprintf(tw, "%s\t%s\t%s → %s\t%s\t%s\t%s\t%s\n", r.ID, dash(string(r.Kind)), dash(r.From), dash(r.To), status, age, left, dash(requestWhat(&r)))
	}
	if err := tw.Flush(); err != nil {
		return cl.Fail(err)
	}
	return ExitOK
}

// leftText is the time left before a deadline, or how long it is overdue.
func leftText(d time.Duration) string {
	if d > 0 {
		return shortDuration(d)
	}
	return "overdue " + shortDuration(d)
}

func approveFlags(fs *flag.FlagSet) runFunc {
	feedback := fs.String("feedback", "", "a note for the teammate, sent with the approval")
	session := fs.Bool("session", false, "a permission: allow what its rule covers for the rest of the member's session")
	return func(cl *Cmdline) int {
		if *session {
			if *feedback != "" {
				return cl.UsageError("--session takes no --feedback")
			}
			return allowForSession(cl)
		}
		return decide(cl, true, *feedback)
	}
}

// allowForSession is approve --session: permissions allowed, with their
// rules, for the rest of their members' sessions.
func allowForSession(cl *Cmdline) int {
	return cl.eachRequest(func(ctx context.Context, st store.Store, id string) (*protocol.Request, error) {
		return team.AllowForSession(ctx, st, id, protocol.Lead)
	})
}

// eachRequest decides every request ID the command names, in order, with
// decide: an ID that is no ID refuses them all before any is decided; a
// decision that fails is said on its line and the others still go in
// (exit 1 then).
func (cl *Cmdline) eachRequest(decide func(ctx context.Context, st store.Store, id string) (*protocol.Request, error)) int {
	if code, ok := cl.WantArgs(1, -1, "a request ID"); !ok {
		return code
	}
	for _, id := range cl.Args {
		if err := protocol.ValidateID(id); err != nil {
			return cl.UsageError("%v", err)
		}
	}
	return cl.WithTeam(func(ctx context.Context, st store.Store) int {
		code := ExitOK
		notice := notRunning(ctx, st)
		for _, id := range cl.Args {
			r, err := decide(ctx, st, id)
			if err != nil {
				code = cl.Fail(err)
				continue
			}
			printDecided(cl, r, notice)
		}
		return code
	})
}

func rejectFlags(fs *flag.FlagSet) runFunc {
	feedback := fs.String("feedback", "", "what to change (required), sent to the teammate")
	return func(cl *Cmdline) int { return decide(cl, false, *feedback) }
}

// decide is approve and reject: the lead's decision on plans and
// permissions, one or several.
func decide(cl *Cmdline, approve bool, feedback string) int {
	if !approve && strings.TrimSpace(feedback) == "" {
		return cl.UsageError("--feedback is required: say what to change, or why not")
	}
	return cl.eachRequest(func(ctx context.Context, st store.Store, id string) (*protocol.Request, error) {
		return team.Decide(ctx, st, id, protocol.AnswerEvent(approve), feedback, protocol.Lead)
	})
}

// printDecided says what the lead decided, and when the teammate hears of
// it: at once, or (notice: the team is not running) when it starts.
func printDecided(cl *Cmdline, r *protocol.Request, notice string) {
	what := r.From + "'s plan"
	if r.Permission != nil {
		may := " may not "
		if r.Status == protocol.RequestAllowed {
			may = " may "
		}
		what = r.From + may + team.Printable(r.Permission.Summary)
		if r.Scope == protocol.ScopeSession {
			what += "; for the rest of its session: " + r.Rule
		}
	}
	if notice != "" {
		fmt.Fprintf(cl.Stdout, "%s %s: %s; %s: %s is told when it starts\n", r.Status, r.ID, what, notice, r.From)
		return
	}
	fmt.Fprintf(cl.Stdout, "%s %s: %s; %s has been told\n", r.Status, r.ID, what, r.From)
}

func shutdownFlags(fs *flag.FlagSet) runFunc {
	reason := fs.String("reason", "", "why the lead asks, sent to the teammate")
	wait := fs.Bool("wait", false, "wait for the answer and print it: exit 0 when the teammate agrees, 1 otherwise")
	timeout := fs.Duration("timeout", 0, "with --wait: stop waiting after `D` (e.g. 30s; 0: until the request ends)")
	return func(cl *Cmdline) int { return runShutdown(cl, *reason, *wait, *timeout) }
}

func runShutdown(cl *Cmdline, reason string, wait bool, timeout time.Duration) int {
	if code, ok := cl.WantArgs(1, 1, "a MEMBER"); !ok {
		return code
	}
	if err := protocol.ValidateMemberName(cl.Args[0]); err != nil {
		return cl.UsageError("%v", err)
	}
	if cl.FlagGiven("timeout") && !wait {
		return cl.UsageError("--timeout goes with --wait")
	}
	if timeout < 0 {
		return cl.UsageError("--timeout must be 0 or more")
	}
	return cl.WithTeam(func(ctx context.Context, st store.Store) int {
		t, err := team.LoadFrom(ctx, st)
		if err != nil {
			return cl.Fail(err)
		}
		r, err := team.RequestShutdown(ctx, st, t, cl.Args[0], reason)
		if err != nil {
			return cl.Fail(err)
		}
		if code, done := printShutdownAsked(cl, r, notRunning(ctx, st), wait); done {
			return code
		}
		if timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		id := r.ID
		r, err = team.WaitRequest(ctx, st, id)
		return printShutdownAnswer(cl, r, err, id, timeout)
	})
}

// printShutdownAsked prints the request's id, and that it was cancelled at
// once or waits for the team (notice: it is not running); done when there
// is nothing to wait for.
func printShutdownAsked(cl *Cmdline, r *protocol.Request, notice string, wait bool) (int, bool) {
	fmt.Fprintln(cl.Stdout, r.ID)
	if r.Status == protocol.RequestCancelled {
		fmt.Fprintf(cl.Stdout, "cancelled: %s\n", team.Printable(r.ResponseReason))
		if wait {
			return ExitFail, true
		}
		return ExitOK, true
	} else if notice != "" {
		fmt.Fprintf(cl.Stdout, "%s: %s is asked when it starts, and the deadline counts from then\n", notice, r.To)
	}
	return ExitOK, !wait
}

// printShutdownAnswer prints how a wait for shutdown request id ended.
func printShutdownAnswer(cl *Cmdline, r *protocol.Request, err error, id string, timeout time.Duration) int {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return cl.Fail(fmt.Errorf("no answer within %v: %s is still pending", timeout, id))
	case errors.Is(err, context.Canceled):
		return cl.Fail(fmt.Errorf("stopped waiting: %s is still pending", id))
	case err != nil:
		return cl.Fail(err)
	}
	what := team.Printable(r.ResponseReason)
	if what == "" {
		what = "no reason given"
	}
	switch r.Status {
	case protocol.RequestApproved:
		fmt.Fprintf(cl.Stdout, "approved by %s: %s\n", r.ResolvedBy, what)
		return ExitOK
	case protocol.RequestRejected:
		fmt.Fprintf(cl.Stdout, "refused by %s: %s\n", r.ResolvedBy, what)
	default:
		fmt.Fprintf(cl.Stdout, "%s: %s\n", r.Status, what)
	}
	return ExitFail
}

func sendFlags(fs *flag.FlagSet) runFunc {
	from := fs.String("from", protocol.Lead, "send as `NAME`: the lead or a member of the team")
	return func(cl *Cmdline) int { return runSend(cl, *from) }
}

func runSend(cl *Cmdline, from string) int {
	if code, ok := cl.WantArgs(1, -1, "a MEMBER"); !ok {
		return code
	}
	member := cl.Args[0]
	if err := protocol.ValidateMemberName(member); err != nil {
		return cl.UsageError("%v", err)
	}
	if err := protocol.ValidateName(from); err != nil {
		return cl.UsageError("--from: %v", err)
	}
	text := strings.Join(cl.Args[1:], " ")
	if strings.TrimSpace(text) == "" {
		return cl.UsageError("TEXT is required")
	}
	return cl.WithTeam(func(ctx context.Context, st store.Store) int {
		t, err := team.LoadFrom(ctx, st)
		if err != nil {
			return cl.Fail(err)
		}
		if err := team.Send(ctx, st, t, from, member, text); err != nil {
			return cl.Fail(err)
		}
		if notice := notRunning(ctx, st); notice != "" && runByHuddle(t, member) {
			fmt.Fprintf(cl.Stdout, "sent to %s; %s: it is delivered when the team starts\n", member, notice)
			return ExitOK
		}
		fmt.Fprintf(cl.Stdout, "sent to %s\n", member)
		return ExitOK
	})
}

func broadcastFlags(fs *flag.FlagSet) runFunc {
	from := fs.String("from", protocol.Lead, "send as `NAME`: the lead or a member of the team")
	return func(cl *Cmdline) int { return runBroadcast(cl, *from) }
}

func runBroadcast(cl *Cmdline, from string) int {
	if err := protocol.ValidateName(from); err != nil {
		return cl.UsageError("--from: %v", err)
	}
	text := strings.Join(cl.Args, " ")
	if strings.TrimSpace(text) == "" {
		return cl.UsageError("TEXT is required")
	}
	return cl.WithTeam(func(ctx context.Context, st store.Store) int {
		t, err := team.LoadFrom(ctx, st)
		if err != nil {
			return cl.Fail(err)
		}
		n, err := team.Broadcast(ctx, st, t, from, text)
		if err != nil {
			return cl.Fail(fmt.Errorf("broadcast reached %d members, then: %w", n, err))
		}
		if notice := notRunning(ctx, st); notice != "" {
			fmt.Fprintf(cl.Stdout, "broadcast to %d members; %s: the members huddle runs get it when the team starts\n", n, notice)
			return ExitOK
		}
		fmt.Fprintf(cl.Stdout, "broadcast to %d members\n", n)
		return ExitOK
	})
}

// runByHuddle reports whether the runtime consumes name's inbox: the lead's
// and those of the members it runs (not external ones or targets).
func runByHuddle(t *team.Team, name string) bool {
	if name == protocol.Lead {
		return true
	}
	spec, ok := t.Member(name)
	return ok && (spec.Runtime.Kind == team.RuntimeScript || spec.Runtime.Kind == team.RuntimeExec)
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

// requestWhat is what a request asks, on one short line: a permission's
// use, a plan's first line, a shutdown's reason.
func requestWhat(r *protocol.Request) string {
	what := r.Reason
	switch {
	case r.Permission != nil:
		what = r.Permission.Summary
	case r.Plan != "":
		what = r.Plan
	case r.Setup != nil:
		what = "run in " + r.Setup.Worktree + ": " + strings.Join(strings.Fields(r.Setup.Script), " ")
	case r.Review != nil:
		what = fmt.Sprintf("%s → %s: %d file(s), +%d -%d", r.Review.Branch, r.Review.Base, r.Review.Files, r.Review.Added, r.Review.Deleted)
	}
	what, _, _ = strings.Cut(strings.TrimSpace(what), "\n")
	what = team.Printable(what)
	if n := []rune(what); len(n) > 60 {
		what = string(n[:59]) + "…"
	}
	return what
}

// worktreesDisk is what the team's worktrees on this machine take, against
// workspace.max_disk ("" when the team has none); past the limit it warns.
func worktreesDisk(ctx context.Context, cl *Cmdline, t *team.Team) string {
	if len(t.Worktrees(cl.Dir)) == 0 {
		return ""
	}
	l, err := team.ListWorktrees(ctx, t, cl.Dir, false)
	if l == nil || len(l.Worktrees) == 0 {
		if err != nil {
			fmt.Fprintf(cl.Stderr, "huddle: %s: warning: worktrees: %v\n", cl.Name, team.Printable(err.Error()))
		}
		return ""
	}
	if l.Over() {
		fmt.Fprintf(cl.Stderr, "huddle: %s: warning: the worktrees take %s, over max_disk %s\n", cl.Name, team.FormatSize(l.Total), team.FormatSize(l.Limit))
	}
	return "worktrees: " + diskLine(l)
}
