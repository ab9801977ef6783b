package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"huddle/ipc/blueprint"
	"huddle/ipc/trace"
	"huddle/protocol"
	"huddle/store"
	"huddle/team"
)

// showAbout is the help of huddle show, with its JSON shape.
const showAbout = "Show one thing the team directory knows by its id:\n" +
	"  pl-… sd-…   a plan or shutdown request: who asked whom, its status, the plan or the reason,\n" +
	"              the feedback or answer, and its history (every transition, when, by whom)\n" +
	"  corr-…      a correlation chain: its calls as a tree, as 'huddle traces' prints them\n" +
	"  req-…       one invocation: the call in full (prompt, result, error), then its chain\n" +
	"  exec-…      an execution of 'huddle serve': its status, timestamps, and output or error\n" +
	"An id of another form is looked up as each of these. An id found nowhere is one line, exit 1.\n" +
	"--json prints {\"type\": \"request\"|\"chain\"|\"call\"|\"execution\", \"id\": ID, and one of:\n" +
	"  \"request\": the record of requests/ID.json; \"chain\": a chain as 'huddle traces --json' prints\n" +
	"  one; \"call\" and \"chain\": the call and its chain; \"execution\": {execution_id, skill_id,\n" +
	"  status, error?, timestamps, caller_id, output?}}."

func showFlags(fs *flag.FlagSet) runFunc {
	asJSON := fs.Bool("json", false, "print what the id names as JSON (the shape above)")
	return func(cl *Cmdline) int { return runShow(cl, *asJSON) }
}

// shown is the JSON of huddle show.
type shown struct {
	Type      string              `json:"type"`
	ID        string              `json:"id"`
	Request   *protocol.Request   `json:"request,omitempty"`
	Call      *trace.Call         `json:"call,omitempty"`
	Chain     *trace.Chain        `json:"chain,omitempty"`
	Execution *blueprint.Recorded `json:"execution,omitempty"`
}

func runShow(cl *Cmdline, asJSON bool) int {
	if code, ok := cl.WantArgs(1, 1, "an ID"); !ok {
		return code
	}
	id := cl.Args[0]
	if err := protocol.ValidateID(id); err != nil {
		return cl.UsageError("%v", err)
	}
	return cl.WithState(NeedDir, func(ctx context.Context, st store.Store) int {
		// The executions of huddle serve stay in the --dir of the machine
		// that ran it: a store holds none.
		local := cl.LocalDir()
		s, err := find(ctx, st, local, id)
		if err != nil {
			return cl.Fail(err)
		}
		if s == nil {
			what := "request, chain, call or execution"
			if local == "" {
				what = "request, chain or call"
			}
			where, _ := cl.where("")
			return cl.Fail(fmt.Errorf("no %s %s in %s", what, id, where))
		}
		return printShown(cl, s, asJSON, team.RuntimeOf(ctx, st))
	})
}

// printShown prints what huddle show found, as text or JSON; rt says
// whether a pending request's deadline is paused.
func printShown(cl *Cmdline, s *shown, asJSON bool, rt team.RuntimeState) int {
	if asJSON {
		if err := writeJSON(cl.Stdout, s); err != nil {
			return cl.Fail(err)
		}
		return ExitOK
	}
	switch s.Type {
	case "request":
		printRequest(cl.Stdout, s.Request, rt)
	case "chain":
		printChain(cl.Stdout, s.Chain)
	case "call":
		printOneCall(cl.Stdout, s.Call)
		fmt.Fprintln(cl.Stdout)
		printChain(cl.Stdout, s.Chain)
	case "execution":
		printExecution(cl.Stdout, s.Execution)
	}
	return ExitOK
}

// find looks id up as what its prefix says first, then as the rest: a
// request of st, a chain or call of its traces, an execution of huddle
// serve in dir (none when dir is ""); nil when it is none of them.
func find(ctx context.Context, st store.Store, dir, id string) (*shown, error) {
	lookups := []func() (*shown, error){
		func() (*shown, error) { return findRequest(ctx, st, id) },
		func() (*shown, error) { return findInTraces(ctx, st, id) },
		func() (*shown, error) { return findExecution(dir, id) },
	}
	switch {
	case strings.HasPrefix(id, "corr-"), strings.HasPrefix(id, "req-"):
		lookups[0], lookups[1] = lookups[1], lookups[0]
	case strings.HasPrefix(id, "exec-"):
		lookups[0], lookups[2] = lookups[2], lookups[0]
	}
	for _, look := range lookups {
		s, err := look()
		if s != nil || err != nil {
			return s, err
		}
	}
	return nil, nil
}

// findRequest reads request id with its decision applied: the decision is
// the truth, even where the record's rewrite was interrupted.
func findRequest(ctx context.Context, st store.Store, id string) (*shown, error) {
	r, err := st.Request(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &shown{Type: "request", ID: id, Request: r}, nil
}

func findInTraces(ctx context.Context, st store.Store, id string) (*shown, error) {
	chains, _, err := chainsOn(ctx, st)
	if err != nil {
		return nil, err
	}
	return findInChains(chains, id), nil
}

// findInChains finds the chain id names, or the call and its chain; nil
// when it is neither.
func findInChains(chains []trace.Chain, id string) *shown {
	for i := range chains {
		ch := &chains[i]
		if ch.CorrelationID == id {
			return &shown{Type: "chain", ID: id, Chain: ch}
		}
		for _, row := range ch.Rows {
			if row.Call != nil && row.Call.RequestID == id {
				return &shown{Type: "call", ID: id, Call: row.Call, Chain: ch}
			}
		}
	}
	return nil
}

func findExecution(dir, id string) (*shown, error) {
	if dir == "" {
		return nil, nil
	}
	e, err := blueprint.NewStore(dir).Find(id)
	if err != nil || e == nil {
		return nil, err
	}
	return &shown{Type: "execution", ID: id, Execution: e}, nil
}

// clock is a time in the local zone, to the second.
func clock(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05") }

// printText prints a heading and text under it, indented, line by line as
// written: nothing escaped, nothing cut.
func printText(w io.Writer, heading, text string) {
	if text == "" {
		return
	}
	fmt.Fprintln(w, heading)
	// As written, line by line, but what an agent wrote never reaches the
	// terminal as a control sequence.
	for _, line := range strings.Split(strings.TrimRight(team.PrintableText(text), "\n"), "\n") {
		fmt.Fprintln(w, "  "+line)
	}
}

func printRequest(w io.Writer, r *protocol.Request, rt team.RuntimeState) {
	fmt.Fprintf(w, "%s %s · %s → %s\n", r.Kind, r.ID, dash(r.From), dash(r.To))
	status := string(r.Status)
	if r.ResolvedBy != "" {
		status += " by " + r.ResolvedBy
	}
	if r.ResolvedAt != nil {
		status += " at " + clock(*r.ResolvedAt)
	}
	fmt.Fprintf(w, "status    %s\n", status)
	fmt.Fprintf(w, "created   %s\n", clock(r.Created))
	deadline := clock(r.Deadline)
	if r.Status == protocol.RequestPending {
		if team.Down(rt) {
			deadline += " (paused: " + shortDuration(team.LeftWhenPaused(r, rt)) + " left when the team starts)"
		} else {
			if left := time.Until(r.Deadline); left > 0 {
				deadline += " (" + shortDuration(left) + " left)"
			} else {
				deadline += " (overdue " + shortDuration(left) + ")"
			}
		}
	}
	fmt.Fprintf(w, "deadline  %s\n", deadline)
	if r.Kind == protocol.KindPlan {
		printText(w, "plan", r.Plan)
		printText(w, "feedback", r.Feedback)
	} else {
		printText(w, "reason", r.Reason)
		printText(w, "answer", r.ResponseReason)
	}
	if r.Kind == protocol.KindPlan && r.ResponseReason != "" {
		printText(w, "ended", r.ResponseReason)
	}
	fmt.Fprintln(w, "history")
	for _, tr := range r.History {
		from := string(tr.From)
		if from == "" {
			from = "·"
		}
		line := fmt.Sprintf("  %s  %s → %s  by %s", clock(tr.At), from, tr.To, dash(tr.By))
		if tr.Note != "" {
			line += "  " + team.PrintableText(tr.Note)
		}
		fmt.Fprintln(w, line)
	}
}

func printChain(w io.Writer, ch *trace.Chain) {
	started := "-"
	if !ch.Start.IsZero() {
		started = ch.Start.Local().Format("15:04:05")
	}
	fmt.Fprintf(w, "%s started %s\n", ch.CorrelationID, started)
	for _, row := range ch.Rows {
		fmt.Fprintf(w, "%s%s\n", strings.Repeat("  ", row.Depth+1), callLine(row.Call))
	}
}

func printOneCall(w io.Writer, c *trace.Call) {
	fmt.Fprintf(w, "call %s · %s\n", c.RequestID, callLine(c))
	fmt.Fprintf(w, "chain     %s (hop %d", c.CorrelationID, c.Hop)
	if c.ParentRequestID != "" {
		fmt.Fprintf(w, ", called by %s", c.ParentRequestID)
	}
	fmt.Fprintln(w, ")")
	if !c.Start.IsZero() {
		fmt.Fprintf(w, "started   %s\n", clock(c.Start))
	}
	if !c.End.IsZero() {
		fmt.Fprintf(w, "ended     %s\n", clock(c.End))
	}
	printText(w, "prompt", c.Prompt)
	if c.ErrorCode != "" {
		printText(w, "error", c.ErrorCode+": "+c.ErrorMessage)
	}
	printText(w, "result", c.Result)
}

func printExecution(w io.Writer, e *blueprint.Recorded) {
	fmt.Fprintf(w, "execution %s · %s · called by %s\n", e.ExecutionID, e.SkillID, dash(e.CallerID))
	status := e.Status.Status
	if status == blueprint.StateAccepted || status == blueprint.StateRunning {
		status += " (as last recorded: a server that stopped since fails it with SERVER_RESTARTED when it starts)"
	}
	fmt.Fprintf(w, "status    %s\n", status)
	fmt.Fprintf(w, "created   %s\n", clock(e.Timestamps.CreatedAt))
	if e.Timestamps.StartedAt != nil {
		fmt.Fprintf(w, "started   %s\n", clock(*e.Timestamps.StartedAt))
	}
	if e.Timestamps.CompletedAt != nil {
		fmt.Fprintf(w, "ended     %s\n", clock(*e.Timestamps.CompletedAt))
	}
	if e.Error != nil {
		b, _ := json.Marshal(e.Error.Details)
		printText(w, "error", e.Error.Code+": "+e.Error.Message+"\ndetails: "+string(b))
	}
	if len(e.Output) > 0 {
		printText(w, "output", string(e.Output))
	}
}
