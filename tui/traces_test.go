package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"huddle/ipc/trace"
)

// errorChains: a denial for max_hops and an INVALID_RESPONSE with a long
// message and the answer that was refused.
func errorChains() []trace.Chain {
	hops := &trace.Call{RequestID: "req-00000000000a", CorrelationID: "corr-eeeeeeeeeeee", Caller: "finanzas", Target: "data", Action: "escribir",
		Hop: 2, Start: t0.Add(-3 * time.Second), Status: trace.CallError, DurationMS: 1, ErrorCode: "DENIED", ErrorReason: "max_hops",
		ErrorMessage: "DENIED: hop 2 is not below max_hops 2"}
	invalid := &trace.Call{RequestID: "req-00000000000b", CorrelationID: "corr-ffffffffffff", Caller: "reservas", Target: "auditor", Action: "auditar",
		Hop: 0, Start: t0.Add(-2 * time.Second), Status: trace.CallError, DurationMS: 42, ErrorCode: "INVALID_RESPONSE",
		ErrorReason:  "status must be ok or error",
		ErrorMessage: "INVALID_RESPONSE: auditor answered status must be ok or error; the answer was refused and the caller was told, so check what the agent printed on stdout for request req-00000000000b END-OF-MESSAGE",
		Refused:      `{"request_id":"req-00000000000b","correlation_id":"corr-ffffffffffff","status":"","result":{"summary":"audited"}}`}
	return []trace.Chain{
		{CorrelationID: invalid.CorrelationID, Start: invalid.Start, Rows: []trace.Row{{Call: invalid}}},
		{CorrelationID: hops.CorrelationID, Start: hops.Start, Rows: []trace.Row{{Call: hops}}},
	}
}

// TestTracesSayTheErrorInFull: the list shows "DENIED (max_hops)" and
// "INVALID_RESPONSE" whole; the details show the code once, the whole
// message wrapped, and the refused answer.
func TestTracesSayTheErrorInFull(t *testing.T) {
	m, _ := newTestModel(t, 120, 36)
	snap := busySnapshot(t)
	snap.Chains = trace.ChainListOf(errorChains()...)
	m.Update(SnapshotMsg(snap))
	send(m, "3", "j") // the INVALID_RESPONSE call
	screen := ansi.Strip(m.View().Content)
	for _, want := range []string{"INVALID_RESPONSE", "DENIED (max_hops)", "END-OF-MESSAGE", "refused answer", `"status": ""`} {
		if !strings.Contains(screen, want) {
			t.Errorf("the traces pane lacks %q:\n%s", want, screen)
		}
	}
	if n := strings.Count(screen, "INVALID_RESPONSE"); n != 2 { // the row and the details' code
		t.Errorf("INVALID_RESPONSE shows %d times, want 2 (the row, the code in the details)", n)
	}
	if strings.Contains(screen, "INVALID_RESPONSE: auditor") {
		t.Error("the details repeat the code before the message")
	}
}

// TestListTakesTheRowsItHas: with short details, the list shows every row
// instead of stopping at 40% of the pane.
func TestListTakesTheRowsItHas(t *testing.T) {
	m, _ := newTestModel(t, 120, 36)
	snap := busySnapshot(t)
	var chains []trace.Chain
	for i := range 12 {
		c := *snap.Chains.At(2).Rows[0].Call
		c.RequestID, c.CorrelationID = fmt.Sprintf("req-%012d", i), fmt.Sprintf("corr-%012d", i)
		chains = append(chains, trace.Chain{CorrelationID: c.CorrelationID, Start: t0, Rows: []trace.Row{{Call: &c}}})
	}
	snap.Chains = trace.ChainListOf(chains...)
	m.Update(SnapshotMsg(snap))
	send(m, "3")
	screen := ansi.Strip(m.View().Content)
	for i := range 12 {
		if id := fmt.Sprintf("corr-%012d", i); !strings.Contains(screen, id) {
			t.Errorf("chain %s is not on screen though the details need few lines:\n%s", id, screen)
		}
	}
}

// TestGoldenTraceLongError: the details of an INVALID_RESPONSE with a long
// message, at 80×24 and 120×36.
func TestGoldenTraceLongError(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {120, 36}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			m, _ := newTestModel(t, size[0], size[1])
			snap := busySnapshot(t)
			snap.Chains = trace.ChainListOf(errorChains()...)
			m.Update(SnapshotMsg(snap))
			send(m, "3", "j")
			golden.RequireEqual(t, m.View().Content)
		})
	}
}

// TestGoldenTracesCardAndJSON: the traces, a member's card and a message
// whose details are JSON, at 80×24, 120×36 and 200×50: the call's target
// stays on screen at every width, no gap opens between its columns, and
// the JSON is pretty.
func TestGoldenTracesCardAndJSON(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {120, 36}, {200, 50}} {
		for _, screen := range []struct {
			name string
			keys []string
		}{
			{"traces", []string{"3", "j"}},
			{"card", []string{"1", "j"}},
			{"message", []string{"4", "enter"}},
		} {
			t.Run(fmt.Sprintf("%s/%dx%d", screen.name, size[0], size[1]), func(t *testing.T) {
				m, _ := newTestModel(t, size[0], size[1])
				snap := busySnapshot(t)
				snap.Chains = trace.ChainListOf(append(errorChains(), fixtureChains()...)...)
				snap.Messages[len(snap.Messages)-1].Msg.Content = `{"indexed":1204,"ledger":"2026-11","ok":true}`
				m.Update(SnapshotMsg(snap))
				deliver(m, send(m, screen.keys...))
				golden.RequireEqual(t, m.View().Content)
			})
		}
	}
}

// TestEnterFoldsAChain: enter on a chain's header hides its calls under
// it (▸, its count kept) and shows them again; on a call it opens the
// details; new snapshots keep the fold.
func TestEnterFoldsAChain(t *testing.T) {
	m, _ := newTestModel(t, 120, 36)
	snap := busySnapshot(t)
	m.Update(SnapshotMsg(snap))
	send(m, "3", "G") // the oldest chain: corr-aaaaaaaaaaaa, 2 calls
	send(m, "k", "k")
	tr, _ := m.traces.list.selected()
	if tr.row >= 0 || tr.chain.CorrelationID != "corr-aaaaaaaaaaaa" {
		t.Fatalf("on %+v, want the header of corr-aaaaaaaaaaaa", tr)
	}
	before := m.traces.list.len()
	send(m, "enter")
	screen := ansi.Strip(m.View().Content)
	if m.traces.list.len() != before-2 || !strings.Contains(screen, "▸ corr-aaaaaaaaaaaa") || !strings.Contains(screen, "2 calls") || strings.Contains(screen, "data.escribir") || m.traces.list.open {
		t.Fatalf("enter on the header: %d rows (from %d), open %v:\n%s", m.traces.list.len(), before, m.traces.list.open, screen)
	}
	m.Update(SnapshotMsg(busySnapshot(t))) // a new snapshot keeps the fold
	if m.traces.list.len() != before-2 {
		t.Fatalf("a new snapshot unfolded it: %d rows", m.traces.list.len())
	}
	send(m, "enter")
	if m.traces.list.len() != before || !strings.Contains(ansi.Strip(m.View().Content), "▾ corr-aaaaaaaaaaaa") {
		t.Fatalf("enter again: %d rows, want %d", m.traces.list.len(), before)
	}
	send(m, "j", "enter")
	if !m.traces.list.open {
		t.Fatal("enter on a call did not open its details")
	}
}

func TestFitWhatKeepsTheTarget(t *testing.T) {
	what := "  reservas → finanzas.consultar_saldo"
	for w, want := range map[int]string{
		40: what + "   ",
		30: "  … → finanzas.consultar_saldo",
		20: "…zas.consultar_saldo",
	} {
		if got := fitWhat(what, w); got != want {
			t.Errorf("fitWhat(%d) = %q, want %q", w, got, want)
		}
	}
	// The layout gives up the bar, then the duration, then the status's
	// width, before who calls what.
	for _, c := range []struct {
		w    int
		want traceCols
	}{
		{200, traceCols{what: 37, status: 20, dur: 6, bar: 66}},
		{80, traceCols{what: 37, status: 20, dur: 6, bar: 14}},
		{66, traceCols{what: 37, status: 20, dur: 6}},
		{60, traceCols{what: 37, status: 20}},
		{50, traceCols{what: 37, status: 12}},
		{30, traceCols{what: 21, status: 8}},
	} {
		if got := traceLayout(c.w, 37, 17); got != c.want {
			t.Errorf("traceLayout(%d) = %+v, want %+v", c.w, got, c.want)
		}
	}
}
