package main

// The IPC commands: validate a Puruto repo's or a team's IPC setup, scaffold
// one (init --ipc), and show the invocation chains of a team's traces.

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"huddle/ipc"
	"huddle/ipc/trace"
	"huddle/protocol"
	"huddle/team"
	"huddle/teamdir"
)

func init() {
	commands = append(commands,
		command{name: "validate", summary: "check the IPC setup of a Puruto repo, a team or a config file", run: runValidate},
		command{name: "traces", summary: "show the invocation chains as trees, newest first", run: runTraces},
	)
}

// newPathCmd is a command on a PATH rather than a team directory: a leadCmd
// without --dir.
func newPathCmd(name, synopsis, about string, stderr io.Writer) *leadCmd {
	c := &leadCmd{name: name, synopsis: synopsis, about: about, stderr: stderr}
	c.fs = newFlags(name, synopsis, stderr)
	c.fs.SetOutput(io.Discard)
	c.fs.Usage = func() {}
	none := "-" // parse refuses an empty --dir; this command has none
	c.dir = &none
	return c
}

func runValidate(args []string, stdout, stderr io.Writer) int {
	c := newPathCmd("validate", "PATH [--json]",
		"Check the IPC setup at PATH as Puruto's validate.py does, with huddle's additions:\n"+
			"  a directory with team.json  every member's IPC config, and allowlists against the roster\n"+
			"  another directory           a Puruto repo: .puruto-ipc.json, the /call skill, a runtime\n"+
			"  a file                      an IPC config (a .puruto-ipc.json also needs its skill and runtime)\n"+
			"Huddle is the runtime when the /call skill runs `huddle call` (what 'huddle init --ipc' writes);\n"+
			"otherwise ipc.py and invoker.py must be there.\n"+
			"Exit 0 without errors (warnings allowed), 1 with errors, 2 on bad arguments.", stderr)
	asJSON := c.fs.Bool("json", false, "print the report as JSON")
	pos, code, ok := c.parse(args)
	if !ok {
		return code
	}
	if code, ok := c.wantArgs(pos, 1, 1, "PATH"); !ok {
		return code
	}
	path := pos[0]
	info, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return c.badArgs("%s does not exist", path)
		}
		return c.badArgs("%v", err)
	}
	var r ipc.Report
	if info.IsDir() && isFile(team.ConfigPath(path)) {
		r = validateTeamDir(path)
	} else {
		r = ipc.Validate(path)
	}
	if *asJSON {
		if err := writeJSON(stdout, r); err != nil {
			return c.fail(err)
		}
	} else if err := printReport(stdout, r); err != nil {
		return c.fail(err)
	}
	if !r.OK {
		return exitFail
	}
	return exitOK
}

func isFile(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular()
}

// printReport writes one line per finding, then a summary line.
func printReport(w io.Writer, r ipc.Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, f := range r.Findings {
		fmt.Fprintf(tw, "%-7s %s\t%s: %s\n", f.Level, f.Code, f.Path, oneLine(f.Message))
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

// ipcMember is what the IPC checks need of a member of team.json. It is read
// on its own as well, so that a team.json that does not validate still has
// its members' configs checked.
type ipcMember struct {
	Name string `json:"name"`
	Dir  string `json:"dir"`
	IPC  string `json:"ipc"`
}

// validateTeamDir checks a team directory: team.json with package team's
// rules, then each member's IPC config: the file its ipc field names
// (relative to the team directory), else the Puruto repo in its dir. An
// allowed target that is not a member is a warning. Finding paths are
// relative to dir.
func validateTeamDir(dir string) ipc.Report {
	var fs []ipc.Finding
	report := func() ipc.Report { return ipc.NewReport(dir, ipc.KindTeam, fs) }
	b, err := os.ReadFile(team.ConfigPath(dir))
	if err != nil {
		fs = append(fs, ipc.Finding{Level: ipc.LevelError, Code: ipc.CodeInvalidTeam, Path: "team.json",
			Message: "cannot be read: " + err.Error()})
		return report()
	}
	var members []ipcMember
	if t, err := team.Parse(b); err == nil {
		for _, m := range t.Members {
			members = append(members, ipcMember{m.Name, m.Dir, m.IPC})
		}
	} else {
		fs = append(fs, ipc.Finding{Level: ipc.LevelError, Code: ipc.CodeInvalidTeam, Path: "team.json",
			Message: strings.TrimPrefix(oneLine(err.Error()), "team.json: ")})
		var raw struct {
			Members []ipcMember `json:"members"`
		}
		if json.Unmarshal(b, &raw) != nil {
			return report()
		}
		members = raw.Members
	}
	names := map[string]bool{}
	for _, m := range members {
		names[m.Name] = true
	}
	seen := map[string]bool{}
	for _, m := range members {
		cfg, found := memberPolicy(dir, m)
		if cfg == "" || seen[cfg] {
			continue
		}
		seen[cfg] = true
		rel := relTo(dir, cfg)
		var mine []ipc.Finding
		switch {
		case m.IPC != "" && !isFile(cfg):
			mine = []ipc.Finding{{Level: ipc.LevelError, Code: ipc.CodeConfigNotFound, Path: rel,
				Message: "team.json names this file as the member's ipc config, but it is not there"}}
		case m.IPC != "":
			mine = ipc.ValidateConfig(cfg, rel)
		default:
			mine = ipc.ValidateDir(filepath.Dir(cfg), relTo(dir, filepath.Dir(cfg)))
		}
		failed := false
		for _, f := range mine {
			failed = failed || f.Level == ipc.LevelError
		}
		if found && !failed {
			if p, err := ipc.LoadPolicy(cfg); err == nil {
				for _, target := range p.AllowedTargets {
					if !names[target] {
						mine = append(mine, ipc.Finding{Level: ipc.LevelWarning, Code: ipc.CodeUnknownTarget, Path: rel,
							Message: fmt.Sprintf("allowed_targets names %q, which is not a member of the team", target)})
					}
				}
			}
		}
		for _, f := range mine {
			f.Message = fmt.Sprintf("member %q: %s", m.Name, f.Message)
			fs = append(fs, f)
		}
	}
	return report()
}

// memberPolicy is where a member's IPC config is: the file its ipc field
// names, else dir/.puruto-ipc.json; "" when it has neither field. found says
// whether the file is there.
func memberPolicy(teamDir string, m ipcMember) (path string, found bool) {
	// The same rule the runtime follows to load it.
	path = team.MemberSpec{IPC: m.IPC, Dir: m.Dir}.PolicyPath(teamDir)
	return path, path != "" && isFile(path)
}

// relTo is path as seen from base, or path itself when it cannot be.
func relTo(base, path string) string {
	ab, err1 := filepath.Abs(base)
	ap, err2 := filepath.Abs(path)
	if err1 != nil || err2 != nil {
		return path
	}
	rel, err := filepath.Rel(ab, ap)
	if err != nil {
		return path
	}
	return rel
}

// initIPC is `huddle init --ipc [PATH] [--owner NAME]`: Puruto's IPC files in
// a repo, with huddle as the runtime.
func initIPC(c *leadCmd, pos []string, ipcFlag bool, owner string, stdout io.Writer) int {
	if !ipcFlag {
		return c.badArgs("--owner goes with --ipc")
	}
	dirSet := false
	c.fs.Visit(func(f *flag.Flag) { dirSet = dirSet || f.Name == "dir" })
	if dirSet {
		return c.badArgs("--dir is a team's; with --ipc, name the repo as PATH")
	}
	if code, ok := c.wantArgs(pos, 0, 1, ""); !ok {
		return code
	}
	path := "."
	if len(pos) == 1 {
		path = pos[0]
	}
	if owner == "" {
		abs, err := filepath.Abs(path)
		if err != nil {
			return c.fail(err)
		}
		owner = filepath.Base(abs)
		if err := protocol.ValidateName(owner); err != nil {
			return c.badArgs("the directory's name %q is not a valid owner name; give --owner NAME", owner)
		}
	} else if err := protocol.ValidateName(owner); err != nil {
		return c.badArgs("--owner: %v", err)
	}
	written, err := ipc.Scaffold(path, owner)
	if err != nil {
		return c.fail(fmt.Errorf("init: %w", err))
	}
	fmt.Fprintf(stdout, "wrote %s: owner %s, allowed_targets empty (every call is denied until you add targets)\n", written[0], owner)
	fmt.Fprintf(stdout, "wrote %s: the /call skill, through 'huddle call'\n", written[1])
	return exitOK
}

func runTraces(args []string, stdout, stderr io.Writer) int {
	c := newLeadCmd("traces", "[--dir D] [--correlation ID] [--json]",
		"Show the invocation chains of the team's traces.jsonl, newest first: a header per chain,\n"+
			"then one line per call, indented by its depth in the chain (caller → target.action,\n"+
			"hop, status, duration). Lines that are not valid spans are skipped and counted.", stderr)
	corr := c.fs.String("correlation", "", "show only the chain of this correlation `id`")
	asJSON := c.fs.Bool("json", false, "print the chains as a JSON array")
	pos, code, ok := c.parse(args)
	if !ok {
		return code
	}
	if code, ok := c.wantArgs(pos, 0, 0, ""); !ok {
		return code
	}
	if *corr != "" {
		if err := protocol.ValidateID(*corr); err != nil {
			return c.badArgs("--correlation: %v", err)
		}
	}
	if info, err := os.Stat(*c.dir); err != nil || !info.IsDir() {
		return c.fail(fmt.Errorf("no team directory %s", *c.dir))
	}
	r := trace.NewTraceReader(*c.dir)
	spans, err := r.Read()
	if err != nil {
		return c.fail(err)
	}
	folded := trace.NewTraces()
	for _, s := range spans {
		folded.Add(s)
	}
	chains := folded.Chains()
	if *corr != "" {
		var one []trace.Chain
		for _, ch := range chains {
			if ch.CorrelationID == *corr {
				one = append(one, ch)
			}
		}
		if len(one) == 0 {
			return c.fail(fmt.Errorf("no chain %s in %s", *corr, teamdir.TracesPath(*c.dir)))
		}
		chains = one
	}
	if *asJSON {
		out := make([]chainJSON, 0, len(chains))
		for _, ch := range chains {
			out = append(out, newChainJSON(ch))
		}
		if err := writeJSON(stdout, out); err != nil {
			return c.fail(err)
		}
		return exitOK
	}
	if len(chains) == 0 {
		fmt.Fprintln(stdout, "no traces yet")
	}
	for i, ch := range chains {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		started := "-"
		if !ch.Start.IsZero() {
			started = ch.Start.Local().Format("15:04:05")
		}
		fmt.Fprintf(stdout, "%s started %s\n", ch.CorrelationID, started)
		for _, row := range ch.Rows {
			fmt.Fprintf(stdout, "%s%s\n", strings.Repeat("  ", row.Depth+1), callLine(row.Call))
		}
	}
	if n := r.Skipped(); n > 0 {
		fmt.Fprintf(stdout, "(%s of %s skipped: not valid spans)\n", plural(int(n), "line"), teamdir.TracesPath(*c.dir))
	}
	return exitOK
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

// chainJSON is a chain as `huddle traces --json` prints it.
type chainJSON struct {
	CorrelationID string     `json:"correlation_id"`
	Start         *string    `json:"start"`
	Calls         []callJSON `json:"calls"`
}

// callJSON is every field of an trace.Call, with its depth in the chain.
type callJSON struct {
	Depth           int     `json:"depth"`
	RequestID       string  `json:"request_id"`
	CorrelationID   string  `json:"correlation_id"`
	ParentRequestID string  `json:"parent_request_id"`
	Caller          string  `json:"caller"`
	Target          string  `json:"target"`
	Action          string  `json:"action"`
	Hop             int     `json:"hop"`
	Prompt          string  `json:"prompt"`
	Start           *string `json:"start"`
	End             *string `json:"end"`
	Status          string  `json:"status"`
	DurationMS      int64   `json:"duration_ms"`
	ErrorCode       string  `json:"error_code"`
	ErrorMessage    string  `json:"error_message"`
	ErrorReason     string  `json:"error_reason"`
	Result          string  `json:"result"`
	Late            bool    `json:"late"`
	Remote          string  `json:"remote"`
}

func newChainJSON(ch trace.Chain) chainJSON {
	out := chainJSON{CorrelationID: ch.CorrelationID, Start: wireTime(ch.Start), Calls: make([]callJSON, 0, len(ch.Rows))}
	for _, r := range ch.Rows {
		c := r.Call
		out.Calls = append(out.Calls, callJSON{
			Depth: r.Depth, RequestID: c.RequestID, CorrelationID: c.CorrelationID, ParentRequestID: c.ParentRequestID,
			Caller: c.Caller, Target: c.Target, Action: c.Action, Hop: c.Hop, Prompt: c.Prompt,
			Start: wireTime(c.Start), End: wireTime(c.End), Status: c.Status, DurationMS: c.DurationMS,
			ErrorCode: c.ErrorCode, ErrorMessage: c.ErrorMessage, ErrorReason: c.ErrorReason,
			Result: c.Result, Late: c.Late, Remote: c.Remote,
		})
	}
	return out
}

// wireTime is t in the wire form, or nil (null) when it is not known.
func wireTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := protocol.FormatTime(t)
	return &s
}
