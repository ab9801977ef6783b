package cli

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/internal/testkit/natsteam"
)

// The shape `huddle show --json` documents, copied so a change fails here.
type (
	shownJSON struct {
		Type      string              `json:"type"`
		ID        string              `json:"id"`
		Request   *shownRequestJSON   `json:"request"`
		Call      *shownCallJSON      `json:"call"`
		Chain     *shownChainJSON     `json:"chain"`
		Execution *shownExecutionJSON `json:"execution"`
	}
	shownRequestJSON struct {
		ID, Kind, From, To, Status, Plan, Reason, Feedback string
		ResponseReason                                     string `json:"response_reason"`
		ResolvedBy                                         string `json:"resolved_by"`
		Approve                                            *bool
		Created, Deadline                                  time.Time
		ResolvedAt                                         *time.Time `json:"resolved_at"`
		History                                            []struct {
			At                 time.Time
			From, To, By, Note string
		}
	}
	shownCallJSON struct {
		Depth                                          int    `json:"depth"`
		RequestID                                      string `json:"request_id"`
		CorrelationID                                  string `json:"correlation_id"`
		ParentRequestID                                string `json:"parent_request_id"`
		Caller, Target, Action, Prompt, Status, Result string
		Hop                                            int
		Start, End                                     *string
		DurationMS                                     int64  `json:"duration_ms"`
		ErrorCode                                      string `json:"error_code"`
		ErrorMessage                                   string `json:"error_message"`
		ErrorReason                                    string `json:"error_reason"`
		Late                                           bool
		Remote                                         string
	}
	shownChainJSON struct {
		CorrelationID string          `json:"correlation_id"`
		Start         *string         `json:"start"`
		Calls         []shownCallJSON `json:"calls"`
	}
	shownExecutionJSON struct {
		ExecutionID string `json:"execution_id"`
		SkillID     string `json:"skill_id"`
		Status      string `json:"status"`
		CallerID    string `json:"caller_id"`
		Error       *struct {
			Code, Message string
			Details       map[string]any
		} `json:"error"`
		Timestamps struct {
			CreatedAt   time.Time  `json:"created_at"`
			StartedAt   *time.Time `json:"started_at"`
			CompletedAt *time.Time `json:"completed_at"`
		} `json:"timestamps"`
		Output json.RawMessage `json:"output"`
	}
)

// showJSON is show ID --json on the team, decoded into the documented
// shape, nothing more.
func showJSON(t *testing.T, on *teamOn, id string) shownJSON {
	t.Helper()
	r := on.must(t, "show", id, "--json")
	var s shownJSON
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("show %s --json: %v\n%s", id, err, r.stdout)
	}
	if s.ID != id {
		t.Fatalf("show %s --json: id %q", id, s.ID)
	}
	return s
}

// TestShowRequest: on both kinds of store, a plan with its plan text, the
// feedback with its quotes as written, and its history; a shutdown
// request with its reason and the time left.
func TestShowRequest(t *testing.T) {
	onEachDemoStore(t, func(t *testing.T, on *teamOn) {
		natsteam.Plan(t, on.st, "pl-aaaaaaaaaaaa", "reservas")
		on.must(t, "reject", "pl-aaaaaaaaaaaa", "--feedback", `book "room 2", not room 4`)

		r := on.must(t, "show", "pl-aaaaaaaaaaaa")
		for _, want := range []string{
			"plan pl-aaaaaaaaaaaa · reservas → lead\n",
			"status    rejected by lead at ",
			"plan\n  a plan of reservas\n",
			"feedback\n  book \"room 2\", not room 4\n",
			"history\n  ",
			"· → pending  by reservas\n",
			"pending → rejected  by lead  book \"room 2\", not room 4\n",
		} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("show pl-…: no %q in\n%s", want, r.stdout)
			}
		}
		if strings.Contains(r.stdout, `\"`) {
			t.Errorf("show pl-… escapes quotes:\n%s", r.stdout)
		}
		s := showJSON(t, on, "pl-aaaaaaaaaaaa")
		if s.Type != "request" || s.Request == nil || s.Request.Status != "rejected" || s.Request.Feedback != `book "room 2", not room 4` ||
			len(s.Request.History) != 2 || s.Call != nil || s.Chain != nil || s.Execution != nil {
			t.Errorf("show pl-… --json: %+v", s)
		}

		sd := strings.TrimSpace(on.must(t, "shutdown", "data", "--reason", `the "night" run is over`).stdout)
		r = on.must(t, "show", sd)
		if !strings.HasPrefix(r.stdout, "shutdown "+sd+" · lead → data\nstatus    pending\n") ||
			!strings.Contains(r.stdout, "reason\n  the \"night\" run is over\n") || !strings.Contains(r.stdout, "left)\n") {
			t.Errorf("show %s:\n%s", sd, r.stdout)
		}
	})
}

// TestShowChainAndCall: on both kinds of store, a correlation id prints
// its chain as traces does; a call's id prints the call in full, then its
// chain.
func TestShowChainAndCall(t *testing.T) {
	onEachStore(t, nil, func(t *testing.T, on *teamOn) {
		on.putTraces(t, "ok_two_hops.jsonl", "denied_max_hops.jsonl", "timeout_late.jsonl")
		traces := on.must(t, "traces", "--correlation", "corr-deny")
		chain := on.must(t, "show", "corr-deny")
		if chain.stdout != traces.stdout {
			t.Errorf("show corr-deny:\n%s\ntraces --correlation corr-deny:\n%s", chain.stdout, traces.stdout)
		}
		s := showJSON(t, on, "corr-deny")
		if s.Type != "chain" || s.Chain == nil || s.Chain.CorrelationID != "corr-deny" || len(s.Chain.Calls) != 3 || s.Call != nil {
			t.Errorf("show corr-deny --json: %+v", s)
		}

		call := on.must(t, "show", "req-b1")
		if !strings.HasPrefix(call.stdout, "call req-b1 · finanzas → data.escribir  hop 1  ok") ||
			!strings.Contains(call.stdout, "chain     corr-ok (hop 1, called by req-a1)\n") ||
			!strings.Contains(call.stdout, "prompt\n  record payment of invoice 42\n") ||
			!strings.Contains(call.stdout, "\n\ncorr-ok started 09:00:00\n") {
			t.Errorf("show req-b1:\n%s", call.stdout)
		}
		s = showJSON(t, on, "req-b1")
		if s.Type != "call" || s.Call == nil || s.Call.RequestID != "req-b1" || s.Call.ParentRequestID != "req-a1" || s.Chain == nil || s.Chain.CorrelationID != "corr-ok" {
			t.Errorf("show req-b1 --json: %+v", s)
		}
	})
}

// TestShowGolden: on both kinds of store, show prints the same records
// the same, to the byte: a pending plan (--json), a rejected one, a chain
// and a call (--json).
func TestShowGolden(t *testing.T) {
	onEachDemoStore(t, func(t *testing.T, on *teamOn) {
		putRecords(t, on)
		wantGolden(t, "show-plan-json", on.must(t, "show", "pl-samesamesameX", "--json").stdout)
		wantGolden(t, "show-rejected", on.must(t, "show", "pl-donedonedoneX").stdout)
		wantGolden(t, "show-chain", on.must(t, "show", "corr-1").stdout)
		wantGolden(t, "show-call-json", on.must(t, "show", "req-1", "--json").stdout)
	})
}

// TestShowExecution: an execution of huddle serve, once completed, with
// its output; the call it made is in the traces under its trace id. Only
// a team directory has one: huddle serve keeps its executions in the
// local directory of the machine it runs on, never in a store.
func TestShowExecution(t *testing.T) {
	dir := countingTeam(t)
	addr := freePort(t)
	startServeProcess(t, dir, addr)
	startUp(t, dir)
	base := "http://" + addr
	a := send(t, "POST", base+"/invoke", "application/json", invokeBody("worker.count", "count the red ones"), nil)
	if a.code != http.StatusAccepted {
		t.Fatalf("invoke: %d %s", a.code, a.raw)
	}
	id := a.body["execution_id"].(string)
	testkit.WaitFor(t, 20*time.Second, "the execution to complete", func() bool {
		return send(t, "GET", base+"/status/"+id, "", "", nil).body["status"] == "completed"
	})
	r := mustHuddle(t, "show", id, "--dir", dir)
	if !strings.HasPrefix(r.stdout, "execution "+id+" · worker.count · called by ") || !strings.Contains(r.stdout, "status    completed\n") ||
		!strings.Contains(r.stdout, "output\n  ") || !strings.Contains(r.stdout, "counted") {
		t.Errorf("show %s:\n%s", id, r.stdout)
	}
	s := showJSON(t, dirOn(t, dir), id)
	if s.Type != "execution" || s.Execution == nil || s.Execution.Status != "completed" || s.Execution.SkillID != "worker.count" ||
		s.Execution.Timestamps.CompletedAt == nil || !strings.Contains(string(s.Execution.Output), "counted") {
		t.Errorf("show %s --json: %+v", id, s)
	}
}

// TestShowRefusals: on both kinds of store, an id found nowhere is one
// line, exit 1, saying where it was looked for (a store holds no
// executions: they stay with the huddle serve that ran them); a bad id
// or no id, exit 2.
func TestShowRefusals(t *testing.T) {
	onEachDemoStore(t, func(t *testing.T, on *teamOn) {
		looked := "no request, chain, call or execution "
		if on.kind == "nats" {
			looked = "no request, chain or call "
		}
		for _, id := range []string{"pl-000000000000", "corr-nope", "req-nope", "exec-00", "whatever"} {
			on.huddle(t, "show", id).wantError(t, ExitFail, looked+id+" in "+on.place(), "show", id)
		}
		on.huddle(t, "show", "../x").wantError(t, ExitUsage, "invalid id", "show ../x")
		on.huddle(t, "show").wantError(t, ExitUsage, "an ID is required", "show")
	})
	huddle(t, "show", "pl-x", "--dir", t.TempDir()+"/none").wantError(t, ExitFail, "no team directory", "show in no directory")
}

// TestCommandsPrintAgentTextSafely: what an agent wrote (a plan, a
// rejection's feedback as history note) reaches the terminal through show
// and requests with its control characters marked, never as an escape.
func TestCommandsPrintAgentTextSafely(t *testing.T) {
	dir := demoTeam(t)
	createPlan(t, dir, "pl-bbbbbbbbbbbb", "reservas")
	mustHuddle(t, "reject", "pl-bbbbbbbbbbbb", "--feedback", "no \x1b[2J please", "--dir", dir)
	for _, args := range [][]string{{"show", "pl-bbbbbbbbbbbb"}, {"requests", "--all"}} {
		r := mustHuddle(t, append(args, "--dir", dir)...)
		if strings.Contains(r.stdout, "\x1b") {
			t.Errorf("huddle %s printed an escape sequence:\n%q", args[0], r.stdout)
		}
	}
	if r := mustHuddle(t, "show", "pl-bbbbbbbbbbbb", "--dir", dir); !strings.Contains(r.stdout, "no ?[2J please") {
		t.Errorf("show does not mark the control character:\n%s", r.stdout)
	}
}
