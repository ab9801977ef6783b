package tui

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"huddle/ipc/trace"
)

// growingSpans are spans of calls in 40 chains, in an order that moves
// chains (a call older than a chain's first arrives later) and that makes
// a chain match a filter late (its calls to "data" come after others).
func growingSpans(n int) []trace.Span {
	r := rand.New(rand.NewPCG(7, 8))
	var out []trace.Span
	for i := range n {
		corr := fmt.Sprintf("corr-%02d", r.IntN(40))
		target := "finanzas"
		if r.IntN(4) == 0 {
			target = "data"
		}
		at := t0.Add(time.Duration(r.IntN(600)) * time.Second)
		req := fmt.Sprintf("req-%04d", i)
		start := trace.Span{Span: trace.SpanStart, TS: at, RequestID: req, CorrelationID: corr, Caller: "reservas", Target: target, Action: "pagar"}
		out = append(out, start)
		if r.IntN(2) == 0 {
			end := start
			end.Span, end.TS, end.Status, end.DurationMS = trace.SpanEnd, at.Add(time.Second), "ok", 1000
			out = append(out, end)
		}
	}
	return out
}

// paneRows lists the ids of every row of the traces pane.
func paneRows(p *tracesPane) []string {
	var ids []string
	for i := range p.list.len() {
		ids = append(ids, p.list.idOf(p.list.at(i)))
	}
	return ids
}

// TestTracesPaneUpdatesOnlyWhatChanged: a pane that takes every snapshot of
// a fold, updating from what changed, shows the same rows as a pane given
// only the last snapshot (built from all its chains), with and without a
// filter, and keeps the chain the person chose selected.
func TestTracesPaneUpdatesOnlyWhatChanged(t *testing.T) {
	for _, filter := range []string{"", "data"} {
		t.Run("filter="+filter, func(t *testing.T) {
			spans := growingSpans(400)
			live, _ := newTestModel(t, 120, 36)
			tr := trace.NewTraces()
			snap := busySnapshot(t)
			send(live, "3")
			if filter != "" {
				live.traces.setFilter(filter)
			}
			chosen := ""
			for i, s := range spans {
				tr.Add(s)
				if i%5 != 0 && i != len(spans)-1 {
					continue
				}
				snap.Version++
				snap.Chains = tr.List()
				live.Update(SnapshotMsg(snap))
				if i == 100 {
					send(live, "j", "j", "j") // chosen: stays selected from here on
					chosen = live.traces.list.id
				}
				fresh, _ := newTestModel(t, 120, 36)
				if filter != "" {
					fresh.traces.setFilter(filter)
				}
				fresh.Update(SnapshotMsg(snap))
				got, want := paneRows(live.traces), paneRows(fresh.traces)
				if !slices.Equal(got, want) {
					t.Fatalf("after %d spans the updated pane shows\n%v\nthe pane built from the whole snapshot\n%v", i+1, got, want)
				}
				if chosen != "" {
					if sel, ok := live.traces.list.selected(); !ok || live.traces.list.idOf(sel) != chosen {
						t.Fatalf("after %d spans %s is no longer selected", i+1, chosen)
					}
				}
				if live.traces.Render(100, 20) == "" {
					t.Fatal("nothing drawn")
				}
			}
			if chosen == "" || len(paneRows(live.traces)) < 40 {
				t.Fatalf("the pane ended with %d rows, %q chosen", len(paneRows(live.traces)), chosen)
			}
		})
	}
}

// TestTracesPaneStartsOverOnAnotherFold: traces.jsonl replaced (a new fold,
// whose changes say nothing of the old one) rebuilds the rows.
func TestTracesPaneStartsOverOnAnotherFold(t *testing.T) {
	spans := growingSpans(100)
	m, _ := newTestModel(t, 120, 36)
	snap := busySnapshot(t)
	one := trace.NewTraces()
	for _, s := range spans {
		one.Add(s)
	}
	snap.Chains = one.List()
	m.Update(SnapshotMsg(snap))
	two := trace.NewTraces()
	for _, s := range spans[:10] {
		two.Add(s)
	}
	snap.Chains = two.List()
	m.Update(SnapshotMsg(snap))
	fresh, _ := newTestModel(t, 120, 36)
	fresh.Update(SnapshotMsg(snap))
	if got, want := paneRows(m.traces), paneRows(fresh.traces); !slices.Equal(got, want) {
		t.Fatalf("after another fold the pane shows\n%v\nwant\n%v", got, want)
	}
}
