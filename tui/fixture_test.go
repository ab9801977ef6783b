package tui

import (
	"context"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"huddle/internal/testkit/files"
	"huddle/ipc/trace"
	"huddle/protocol"
	"huddle/team"
	"huddle/team/view"
)

// t0 is the start of the fixtures' clock.
var t0 = time.Date(2026, 11, 30, 9, 13, 0, 0, time.UTC)

func init() { time.Local = time.UTC }

// testClock is a clock the test moves by hand.
type testClock struct{ now time.Time }

func (c *testClock) Now() time.Time          { return c.now }
func (c *testClock) Advance(d time.Duration) { c.now = c.now.Add(d) }

// newTestModel is a model at w×h with the fixed colour profile (attributes
// only) and a clock at t0 that only the test moves.
func newTestModel(t testing.TB, w, h int) (*Model, *testClock) {
	t.Helper()
	st := NewStyles(false, true)
	clock := &testClock{now: t0}
	dir := t.TempDir()
	m := New(Options{Dir: dir, Styles: &st, Now: clock.Now, Footer: "team directory .huddle", Actions: dirActions(t, dir)})
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	return m, clock
}

// dirActions are the keys' Actions on the team directory dir, as huddle
// attach and up wire them: the lead's operations on its files store.
func dirActions(t testing.TB, dir string) Actions {
	t.Helper()
	return LeadActions(StoreLead(context.Background(), files.Open(t, dir)))
}

func demoTeam(t testing.TB) *team.Team {
	t.Helper()
	tm, err := team.Parse(team.DemoTeam())
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

func member(tm *team.Team, name string, st protocol.MemberStatus, activity string, unread int) view.MemberView {
	spec, _ := tm.Member(name)
	return view.MemberView{Spec: spec, Unread: unread, Record: protocol.Member{
		Name: name, Role: spec.Role, Runtime: spec.Runtime.Kind, Status: st, Activity: activity, Since: t0.Add(-time.Minute),
	}}
}

func planRequest(id, from, plan string, created time.Time) protocol.Request {
	r := protocol.NewRequest(protocol.KindPlan, id, from, protocol.Lead, created, 10*time.Minute)
	r.Plan = plan
	return r
}

// busySnapshot is the demo team at work: a pending plan, a rejected one with
// feedback, a crashed member, messages, and three chains.
func busySnapshot(t testing.TB) view.Snapshot {
	tm := demoTeam(t)
	pending := planRequest("pl-5f1c9a2b7e31", "reservas",
		"Book room 4 for ACME on Friday: check availability, hold the slot, confirm with the client.\n\nRevised after feedback: use room 2, it has the projector", t0.Add(-12*time.Second))
	pending.Revises = "pl-0a1b2c3d4e5f"
	rejected := planRequest("pl-0a1b2c3d4e5f", "reservas", "Book room 4 for ACME on Friday: check availability, hold the slot, confirm with the client.", t0.Add(-80*time.Second))
	if err := rejected.Apply(protocol.EventReject, "lead", t0.Add(-30*time.Second), "use room 2, it has the projector"); err != nil {
		t.Fatal(err)
	}
	rejected.Feedback = "use room 2, it has the projector"
	snap := view.Snapshot{
		Version: 7, Team: tm,
		Members: []view.MemberView{
			member(tm, "reservas", protocol.MemberAwaitingApproval, "waiting for approval of pl-5f1c9a2b7e31", 0),
			member(tm, "finanzas", protocol.MemberWorking, "closing open invoices", 2),
			member(tm, "data", protocol.MemberIdle, "waiting", 0),
			member(tm, "auditor", protocol.MemberCrashed, "", 1),
		},
		Requests: []protocol.Request{pending, rejected},
		Pending:  1,
		Chains:   trace.ChainListOf(fixtureChains()...),
		Messages: []view.MessageView{
			{Inbox: "finanzas", Offset: 0, Msg: textMessage("reservas", "finanzas", "ACME booking held; invoice #123 for 50 EUR is coming", t0.Add(-40*time.Second))},
			{Inbox: "data", Offset: 0, Msg: textMessage("finanzas", "data", "November ledger closed; please archive it", t0.Add(-20*time.Second))},
			{Inbox: "lead", Offset: 0, Msg: textMessage("data", "lead", "records indexed", t0.Add(-5*time.Second))},
		},
	}
	snap.Members[3].Record.Error = "process exited: exit status 3"
	return snap
}

func textMessage(from, to, text string, at time.Time) protocol.Message {
	m := protocol.Message{ID: "m-" + from + to, Type: protocol.TypeMessage, From: from, To: to, TS: at, Content: text}
	return m
}

// fixtureChains: an ok 2-hop chain, a DENIED and a TIMEOUT.
func fixtureChains() []trace.Chain {
	pay := &trace.Call{RequestID: "req-000000000001", CorrelationID: "corr-aaaaaaaaaaaa", Caller: "reservas", Target: "finanzas", Action: "pagar_factura",
		Hop: 0, Prompt: "Pay invoice #123 for 50 EUR", Start: t0.Add(-9 * time.Second), End: t0.Add(-8 * time.Second), Status: trace.CallOK, DurationMS: 824, Result: `{"summary":"Factura #123 pagada"}`}
	write := &trace.Call{RequestID: "req-000000000002", CorrelationID: "corr-aaaaaaaaaaaa", ParentRequestID: "req-000000000001", Caller: "finanzas", Target: "data", Action: "escribir",
		Hop: 1, Prompt: "Record payment #123", Start: t0.Add(-9 * time.Second).Add(100 * time.Millisecond), Status: trace.CallOK, DurationMS: 310, Result: `{"summary":"written"}`}
	denied := &trace.Call{RequestID: "req-000000000003", CorrelationID: "corr-bbbbbbbbbbbb", Caller: "reservas", Target: "auditor", Action: "auditar",
		Hop: 0, Start: t0.Add(-6 * time.Second), Status: trace.CallError, DurationMS: 1, ErrorCode: "DENIED", ErrorMessage: "auditor is not in reservas's allowed_targets"}
	timeout := &trace.Call{RequestID: "req-000000000004", CorrelationID: "corr-cccccccccccc", Caller: "reservas", Target: "finanzas", Action: "consultar_saldo",
		Hop: 0, Start: t0.Add(-4 * time.Second), Status: trace.CallError, DurationMS: 3000, ErrorCode: "TIMEOUT", ErrorMessage: "no answer within 3s", Late: true}
	return []trace.Chain{
		{CorrelationID: "corr-cccccccccccc", Start: timeout.Start, Rows: []trace.Row{{Call: timeout}}},
		{CorrelationID: "corr-bbbbbbbbbbbb", Start: denied.Start, Rows: []trace.Row{{Call: denied}}},
		{CorrelationID: "corr-aaaaaaaaaaaa", Start: pay.Start, Rows: []trace.Row{{Call: pay}, {Call: write, Depth: 1}}},
	}
}
