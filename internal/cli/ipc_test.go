package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"huddle/ipc"
	"huddle/ipc/trace"
	"huddle/teamdir"
)

// validateFixture is the absolute path of ipc/testdata/validate/<name>.
func validateFixture(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "ipc", "testdata", "validate", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCLIValidate(t *testing.T) {
	for _, tc := range []struct {
		fixture, kind string
		code          int
		lines         []string // stdout lines, the summary after PATH excepted
	}{
		{"valid-huddle", "puruto", ExitOK, []string{" (puruto): ok"}},
		{"invalid-types", "puruto", ExitFail, []string{
			"error   ipc-config-invalid-type  .puruto-ipc.json: allowed_targets is a string; want a list of target names",
			"error   ipc-config-invalid-type  .puruto-ipc.json: allowed_actions is a list; want an object mapping a target to a list of actions",
			" (puruto): 2 errors",
		}},
		{"unparsable", "puruto", ExitFail, []string{
			"error   invalid-ipc-config  .puruto-ipc.json: not valid JSON: it ends too early",
			" (puruto): 1 error",
		}},
		{"empty-allowlist", "puruto", ExitOK, []string{
			"warning ipc-empty-allowlist  .puruto-ipc.json: allowed_targets is empty: every call is denied",
			" (puruto): ok, 1 warning",
		}},
		{"invalid-types/.puruto-ipc.json", "file", ExitFail, []string{
			"error   ipc-config-invalid-type  .puruto-ipc.json: allowed_targets is a string; want a list of target names",
			"error   ipc-config-invalid-type  .puruto-ipc.json: allowed_actions is a list; want an object mapping a target to a list of actions",
			" (file): 2 errors",
		}},
		{"team", "team", ExitOK, []string{
			`warning unknown-ipc-target   reservas.ipc.json: member "reservas": allowed_targets names "contabilidad", which is not a member of the team`,
			`warning ipc-empty-allowlist  finanzas/.puruto-ipc.json: member "finanzas": allowed_targets is empty: every call is denied`,
			" (team): ok, 2 warnings",
		}},
		{"team-missing-ipc", "team", ExitFail, nil},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			path := validateFixture(t, tc.fixture)
			r := huddle(t, "validate", path)
			if r.code != tc.code || r.stderr != "" {
				t.Fatalf("exit %d stderr %q, want %d", r.code, r.stderr, tc.code)
			}
			lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
			if tc.lines != nil {
				want := slices.Clone(tc.lines)
				want[len(want)-1] = path + want[len(want)-1]
				if !reflect.DeepEqual(lines, want) {
					t.Fatalf("stdout\n%s\nwant\n%s", r.stdout, strings.Join(want, "\n"))
				}
			}

			// --json says the same, as a Report, with the same exit code.
			j := huddle(t, "validate", path, "--json")
			if j.code != tc.code || j.stderr != "" {
				t.Fatalf("--json: exit %d stderr %q, want %d", j.code, j.stderr, tc.code)
			}
			var rep ipc.Report
			if err := json.Unmarshal([]byte(j.stdout), &rep); err != nil {
				t.Fatalf("--json: %v\n%s", err, j.stdout)
			}
			if rep.Path != path || rep.Kind != tc.kind || rep.OK != (tc.code == ExitOK) || len(rep.Findings) != len(lines)-1 ||
				rep.Errors+rep.Warnings != len(rep.Findings) {
				t.Fatalf("--json report %+v against %d text lines", rep, len(lines))
			}
			for i, f := range rep.Findings {
				if !strings.HasPrefix(lines[i], f.Level) || !strings.Contains(lines[i], " "+f.Code+" ") || !strings.Contains(lines[i], f.Path+": "+f.Message) {
					t.Errorf("text line %q does not match finding %+v", lines[i], f)
				}
			}
		})
	}
}

func TestCLIValidateBadArguments(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"validate"}, "PATH is required"},
		{[]string{"validate", filepath.Join(dir, "nowhere")}, "does not exist"},
		{[]string{"validate", dir, dir}, "unexpected argument"},
		{[]string{"validate", "--bogus", dir}, "--bogus"},
	} {
		huddle(t, tc.args...).wantError(t, ExitUsage, tc.want, tc.args...)
	}
}

func TestCLIInitIPC(t *testing.T) {
	root := t.TempDir()
	repo := filepath.Join(root, "puruto-reservas")
	r := huddleIn(t, root, nil, "init", "--ipc", "puruto-reservas").wantOK(t, "init --ipc")
	if !strings.Contains(r.stdout, "owner puruto-reservas") || strings.Count(r.stdout, "\n") != 2 {
		t.Errorf("init --ipc said %q", r.stdout)
	}
	cfg, skill := filepath.Join(repo, ".puruto-ipc.json"), filepath.Join(repo, ".claude", "skills", "call", "SKILL.md")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"enabled": true, "owner": "puruto-reservas", "max_hops": 2.0, "default_timeout_sec": 120.0,
		"allowed_targets": []any{}, "allowed_actions": map[string]any{}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf(".puruto-ipc.json is %s, want Puruto's template", b)
	}
	s, err := os.ReadFile(skill)
	if err != nil {
		t.Fatal(err)
	}
	for _, say := range []string{"/call TARGET ACTION", "huddle call --target TARGET --action ACTION --prompt", "./.puruto-ipc.json"} {
		if !bytes.Contains(s, []byte(say)) {
			t.Errorf("SKILL.md does not say %q", say)
		}
	}

	// What it wrote passes the validator.
	v := huddleIn(t, root, nil, "validate", "puruto-reservas").wantOK(t, "validate")
	if strings.Contains(v.stdout, "error") || !strings.HasSuffix(v.stdout, "puruto-reservas (puruto): ok, 1 warning\n") {
		t.Fatalf("validate after init --ipc:\n%s", v.stdout)
	}

	// Again: refused, nothing changed.
	huddleIn(t, root, nil, "init", "--ipc", "puruto-reservas").wantError(t, ExitFail, "already exists", "init --ipc again")
	if again, _ := os.ReadFile(cfg); !bytes.Equal(again, b) {
		t.Fatalf("a second init --ipc changed the config")
	}

	// Default PATH is the working directory; --owner names the owner.
	here := filepath.Join(root, "Mixed Case")
	if err := os.Mkdir(here, 0o755); err != nil {
		t.Fatal(err)
	}
	huddleIn(t, here, nil, "init", "--ipc").wantError(t, ExitUsage, "--owner", "init --ipc in a badly named directory")
	huddleIn(t, here, nil, "init", "--ipc", "--owner", "puruto-data").wantOK(t, "init --ipc --owner")
	if b, _ := os.ReadFile(filepath.Join(here, ".puruto-ipc.json")); !bytes.Contains(b, []byte(`"owner": "puruto-data"`)) {
		t.Fatalf("--owner: %s", b)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"init", "--ipc", "x", "--owner", "Bad Name"}, "--owner"},
		{[]string{"init", "--owner", "x"}, "--owner goes with --ipc"},
		{[]string{"init", "--ipc", "x", "--dir", "y"}, "--dir"},
		{[]string{"init", "--ipc", "x", "y"}, "unexpected argument"},
	} {
		huddleIn(t, root, nil, tc.args...).wantError(t, ExitUsage, tc.want, tc.args...)
	}
	if _, err := os.Stat(filepath.Join(root, "x")); err == nil {
		t.Fatal("a refused init --ipc wrote files")
	}
}

// tracesDir makes a team directory whose traces.jsonl is the named
// ipc/testdata fixtures, one after the other.
func tracesDir(t *testing.T, fixtures ...string) string {
	t.Helper()
	var all []byte
	for _, f := range fixtures {
		b, err := os.ReadFile(filepath.Join("..", "..", "ipc", "trace", "testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	dir := t.TempDir()
	if err := os.WriteFile(teamdir.TracesPath(dir), all, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// putTraces puts the spans of the named ipc/testdata fixtures in on's
// store: on a team directory as its traces.jsonl, byte for byte (as
// tracesDir); in a store appended one by one, as its runtimes would.
func (on *teamOn) putTraces(t *testing.T, fixtures ...string) {
	t.Helper()
	for _, f := range fixtures {
		b, err := os.ReadFile(filepath.Join("..", "..", "ipc", "trace", "testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		if on.kind == "files" {
			if err := teamdir.AppendLine(teamdir.TracesPath(on.dir), b); err != nil {
				t.Fatal(err)
			}
			continue
		}
		for line := range bytes.Lines(b) {
			var sp trace.Span
			if err := json.Unmarshal(line, &sp); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if err := on.st.AppendSpan(context.Background(), sp); err != nil {
				t.Fatal(err)
			}
		}
	}
}

var utc = []string{"TZ=UTC"}

// TestCLITracesTrees: on both kinds of store, traces prints each chain
// as a tree of its calls, newest chain first; --correlation keeps one,
// and the environment names the team as the flag does.
func TestCLITracesTrees(t *testing.T) {
	onEachStore(t, nil, func(t *testing.T, on *teamOn) {
		on.putTraces(t, "ok_two_hops.jsonl", "denied_max_hops.jsonl", "timeout_late.jsonl")
		r := on.must(t, "traces")
		want := `corr-late started 09:02:00
  reservas → finanzas.conciliar  hop 0  error TIMEOUT  1000ms  (late answer)

corr-deny started 09:01:00
  reservas → finanzas.pagar_factura  hop 0  ok  45ms
    finanzas → data.escribir  hop 1  error DENIED  20ms
      data → auditoria.registrar  hop 2  error DENIED (max_hops)  0ms

corr-ok started 09:00:00
  reservas → finanzas.pagar_factura  hop 0  ok  120ms
    finanzas → data.leer  hop 1  ok  3ms
    finanzas → data.escribir  hop 1  ok  40ms
`
		if r.stdout != want {
			t.Fatalf("traces:\n%s\nwant:\n%s", r.stdout, want)
		}

		// --correlation keeps one chain; $HUDDLE_DIR or $HUDDLE_STORE finds the team as the flag does.
		r = on.huddleEnv(t, "traces", "--correlation", "corr-deny").wantOK(t, "traces --correlation")
		if got := strings.Split(want, "\n\n")[1] + "\n"; r.stdout != got {
			t.Fatalf("--correlation corr-deny:\n%s\nwant:\n%s", r.stdout, got)
		}
		on.huddle(t, "traces", "--correlation", "corr-nope").wantError(t, ExitFail, "no chain corr-nope", "traces --correlation corr-nope")
		on.huddle(t, "traces", "--correlation", "../x").wantError(t, ExitUsage, "--correlation", "traces --correlation ../x")
	})
}

// TestCLITracesJSON: on both kinds of store, traces --json is every chain,
// newest first, each call with every field of Call in snake_case and its
// depth; --correlation keeps one.
func TestCLITracesJSON(t *testing.T) {
	onEachStore(t, nil, func(t *testing.T, on *teamOn) {
		on.putTraces(t, "ok_two_hops.jsonl", "denied_max_hops.jsonl", "timeout_late.jsonl")
		r := on.must(t, "traces", "--json")
		var chains []chainJSON
		if err := json.Unmarshal([]byte(r.stdout), &chains); err != nil {
			t.Fatalf("%v\n%s", err, r.stdout)
		}
		var ids []string
		for _, c := range chains {
			ids = append(ids, c.CorrelationID)
		}
		if !reflect.DeepEqual(ids, []string{"corr-late", "corr-deny", "corr-ok"}) {
			t.Fatalf("chains %v, want newest first", ids)
		}
		late := chains[0]
		if late.Start == nil || *late.Start != "2026-11-30T09:02:00.000000Z" || len(late.Calls) != 1 {
			t.Fatalf("corr-late: %+v", late)
		}
		if c := late.Calls[0]; c.Status != "error" || c.ErrorCode != "TIMEOUT" || !c.Late || c.DurationMS != 1000 || c.Prompt != "reconcile November" ||
			c.End == nil || *c.End != "2026-11-30T09:02:01.000000Z" {
			t.Fatalf("the late call: %+v", c)
		}
		deny := chains[1].Calls
		if len(deny) != 3 || deny[0].Depth != 0 || deny[1].Depth != 1 || deny[2].Depth != 2 ||
			deny[2].ErrorReason != "max_hops" || deny[2].ParentRequestID != "req-b2" || deny[2].Hop != 2 || deny[0].Result != `{"paid":false}` {
			t.Fatalf("corr-deny calls: %+v", deny)
		}

		// Every Call field is there, in snake_case, with the depth.
		var raw []struct {
			Calls []map[string]any `json:"calls"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &raw); err != nil {
			t.Fatal(err)
		}
		var keys []string
		for k := range raw[2].Calls[0] {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		wantKeys := []string{"action", "caller", "correlation_id", "depth", "duration_ms", "end", "error_code", "error_message", "error_reason",
			"hop", "late", "parent_request_id", "prompt", "remote", "request_id", "result", "start", "status", "target"}
		if !reflect.DeepEqual(keys, wantKeys) {
			t.Fatalf("call keys %v\nwant      %v", keys, wantKeys)
		}

		// One chain with --correlation.
		r = on.must(t, "traces", "--json", "--correlation", "corr-ok")
		chains = nil
		if err := json.Unmarshal([]byte(r.stdout), &chains); err != nil || len(chains) != 1 || chains[0].CorrelationID != "corr-ok" || len(chains[0].Calls) != 3 {
			t.Fatalf("--correlation corr-ok: %v %s", err, r.stdout)
		}
	})
}

// TestTracesGolden: on both kinds of store, traces prints the same call
// the same, to the byte: as a tree, --json and --correlation.
func TestTracesGolden(t *testing.T) {
	onEachDemoStore(t, func(t *testing.T, on *teamOn) {
		putRecords(t, on)
		wantGolden(t, "traces", on.must(t, "traces").stdout)
		wantGolden(t, "traces-json", on.must(t, "traces", "--json").stdout)
		wantGolden(t, "traces-correlation", on.must(t, "traces", "--correlation", "corr-1").stdout)
	})
}

func TestCLITracesWithoutTraces(t *testing.T) {
	dir := t.TempDir()
	if r := huddle(t, "traces", "--dir", dir).wantOK(t, "traces"); r.stdout != "no traces yet\n" {
		t.Fatalf("no traces file: %q", r.stdout)
	}
	if r := huddle(t, "traces", "--dir", dir, "--json").wantOK(t, "traces --json"); r.stdout != "[]\n" {
		t.Fatalf("no traces file, --json: %q", r.stdout)
	}
	huddle(t, "traces", "--dir", filepath.Join(dir, "nowhere")).wantError(t, ExitFail, "no team directory", "traces --dir nowhere")
}

func TestCLITracesSkipsWhatIsNotASpan(t *testing.T) {
	// garbage.jsonl holds one good call among bad lines; torn.jsonl ends in a
	// line still being written, which is not read yet.
	dir := tracesDir(t, "garbage.jsonl")
	reader := trace.NewTraceReader(dir)
	if _, err := reader.Read(); err != nil || reader.Skipped() == 0 {
		t.Fatalf("fixture: %v, %d skipped", err, reader.Skipped())
	}
	r := huddleIn(t, dir, utc, "traces", "--dir", ".").wantOK(t, "traces")
	want := "corr-g started 09:03:00\n  reservas → data.leer  hop 0  ok  200ms\n" +
		"(" + plural(int(reader.Skipped()), "line") + " of traces.jsonl skipped: not valid spans)\n"
	if r.stdout != want {
		t.Fatalf("traces:\n%s\nwant:\n%s", r.stdout, want)
	}

	dir = tracesDir(t, "torn.jsonl")
	r = huddleIn(t, dir, utc, "traces", "--dir", dir).wantOK(t, "traces")
	if want := "corr-torn started 09:04:00\n  reservas → data.leer  hop 0  ok  30ms\n"; r.stdout != want {
		t.Fatalf("torn:\n%s\nwant:\n%s", r.stdout, want)
	}
}

func TestCallLine(t *testing.T) {
	for _, tc := range []struct {
		call trace.Call
		want string
	}{
		{trace.Call{Caller: "a", Target: "b", Action: "x", Status: trace.CallRunning}, "a → b.x  hop 0  running"},
		{trace.Call{Caller: "a", Target: "b", Action: "x", Hop: 1, Status: trace.CallOK, DurationMS: 824}, "a → b.x  hop 1  ok  824ms"},
		{trace.Call{Caller: "a", Target: "b", Action: "x", Status: trace.CallError, ErrorCode: "TIMEOUT", DurationMS: 3000, Late: true},
			"a → b.x  hop 0  error TIMEOUT  3000ms  (late answer)"},
		{trace.Call{Caller: "a", Target: "b", Action: "x", Status: trace.CallError, ErrorCode: "DENIED", ErrorReason: "not_allowed_target"},
			"a → b.x  hop 0  error DENIED (not_allowed_target)  0ms"},
		{trace.Call{Target: "b", Action: "x", Status: trace.CallOK, DurationMS: 5, Remote: "http://10.0.0.2:7070"},
			"- → b.x  hop 0  ok  5ms  via http://10.0.0.2:7070"},
	} {
		if got := callLine(&tc.call); got != tc.want {
			t.Errorf("callLine(%+v)\n got  %q\n want %q", tc.call, got, tc.want)
		}
	}
}

func TestCLIIPCCommandsHelp(t *testing.T) {
	for name, flags := range map[string][]string{
		"validate": {"--json"},
		"traces":   {"--dir", "--correlation", "--json"},
		"init":     {"--dir", "--ipc", "--owner"},
	} {
		r := huddle(t, name, "-h")
		if r.code != ExitOK || r.stderr != "" || !strings.HasPrefix(r.stdout, "usage: huddle "+name+" ") {
			t.Errorf("%s -h: exit %d, stdout %q, stderr %q", name, r.code, r.stdout, r.stderr)
		}
		for _, f := range flags {
			if !regexp.MustCompile(`(?m)^  ` + f + `( |$)`).MatchString(r.stdout) {
				t.Errorf("%s -h does not describe %s:\n%s", name, f, r.stdout)
			}
		}
	}
	if r := huddle(t, "validate", "-h"); strings.Contains(r.stdout, "--dir") {
		t.Errorf("validate -h offers --dir:\n%s", r.stdout)
	}
	r := huddle(t, "help")
	for _, name := range []string{"validate", "traces"} {
		if !strings.Contains(r.stdout, "  "+name+" ") {
			t.Errorf("help does not list %s:\n%s", name, r.stdout)
		}
	}
}

// The /call skill that init --ipc writes tells the truth about huddle call:
// it runs from the repo, reads ./.puruto-ipc.json, prints {request,
// response} and exits 1 on an error result.
func TestCLIInitIPCSkillMatchesHuddleCall(t *testing.T) {
	repo := filepath.Join(t.TempDir(), "puruto-reservas")
	huddle(t, "init", "--ipc", repo).wantOK(t, "init --ipc")
	huddleIn(t, repo, nil, "init").wantOK(t, "init") // the demo team in ./.huddle
	skill, err := os.ReadFile(filepath.Join(repo, ".claude", "skills", "call", "SKILL.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"request"`, `"response"`, "--correlation-id", "--hop", "- 1: response.status is error"} {
		if !bytes.Contains(skill, []byte(s)) {
			t.Fatalf("SKILL.md does not say %q", s)
		}
	}
	r := huddleIn(t, repo, nil, "call", "--target", "finanzas", "--action", "pagar_factura", "--prompt", "Pay invoice #123")
	if r.code != ExitFail {
		t.Fatalf("call under the template's empty allowlist: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	var out struct {
		Request struct {
			Caller string `json:"caller"`
			Hop    int    `json:"hop"`
		} `json:"request"`
		Response struct {
			Status string `json:"status"`
			Error  struct {
				Code    string `json:"code"`
				Details struct {
					Reason string `json:"reason"`
				} `json:"details"`
			} `json:"error"`
		} `json:"response"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	if out.Request.Caller != "puruto-reservas" || out.Response.Status != "error" || out.Response.Error.Code != "DENIED" ||
		out.Response.Error.Details.Reason != "not_allowed_target" {
		t.Fatalf("call: %+v\n%s", out, r.stdout)
	}
}

// The team `huddle init` writes passes the validator.
func TestCLIValidateTheDemoTeam(t *testing.T) {
	dir := demoTeam(t)
	r := huddle(t, "validate", dir, "--json").wantOK(t, "validate the demo team")
	var rep ipc.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Kind != ipc.KindTeam || !rep.OK || rep.Errors != 0 {
		t.Fatalf("the demo team: %+v", rep)
	}
}

// TestCLIValidateATypoInTeamJSON: validate on a team directory, or on its
// team.json, says a mistyped key with its place and the key meant, and
// exits 1 (the file was read as an IPC config and passed before).
func TestCLIValidateATypoInTeamJSON(t *testing.T) {
	dir := demoTeam(t)
	p := filepath.Join(dir, "team.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, bytes.Replace(b, []byte(`"approval_deadline"`), []byte(`"approval_dedline"`), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{dir, p} {
		r := huddle(t, "validate", path)
		if r.code != ExitFail || !regexp.MustCompile(`error +invalid-team +team.json: unknown field "settings.approval_dedline" at \d+:\d+ \(did you mean "approval_deadline"\?\)`).MatchString(r.stdout) {
			t.Fatalf("validate %s: exit %d\n%s%s", path, r.code, r.stdout, r.stderr)
		}
	}
}

// chainJSON is a chain as `huddle traces --json` prints it: the test reads
// the output through its own copy of the wire shape, so a change to that
// shape fails here.
type chainJSON struct {
	CorrelationID string     `json:"correlation_id"`
	Start         *string    `json:"start"`
	Calls         []callJSON `json:"calls"`
}

// callJSON is every field of a call, with its depth in the chain.
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
