package tui

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"huddle/ipc/trace"
	"huddle/protocol"
	"huddle/team/view"
)

// tickIn is how long after now the model's clock ticks next.
func tickIn(m *Model) time.Duration { return m.tickDue.Sub(m.now()) }

// TestIdleScreenTicksOnceAMinute: with nothing on screen counted in
// seconds the clock ticks when its minute turns; a request, a flash or a
// member at work brings the tick forward to a second, a tick so replaced
// does nothing, and a screen gone quiet again ticks at the minute.
func TestIdleScreenTicksOnceAMinute(t *testing.T) {
	m, clock := newTestModel(t, 120, 36)
	clock.Advance(13 * time.Second) // 09:13:13
	tm := demoTeam(t)
	quiet := view.Snapshot{Version: 1, Team: tm, Members: []view.MemberView{member(tm, "data", protocol.MemberIdle, "waiting", 0)}}
	m.Update(SnapshotMsg(quiet))
	m.Init()
	if got := tickIn(m); got != 47*time.Second {
		t.Fatalf("an idle screen ticks in %v; want 47s, at 09:14", got)
	}
	first := m.tickGen

	// A pending plan: its countdown is in seconds.
	busy := quiet
	busy.Version = 2
	busy.Requests = []protocol.Request{planRequest("pl-000000000001", "data", "archive the ledger", clock.Now())}
	busy.Pending = 1
	if _, cmd := m.Update(SnapshotMsg(busy)); cmd == nil || tickIn(m) != time.Second {
		t.Fatalf("a pending request left the tick in %v", tickIn(m))
	}
	// The minute's tick it replaced comes and changes nothing.
	clock.Advance(47 * time.Second)
	before := m.clock
	if _, cmd := m.Update(clockMsg{gen: first}); cmd != nil || !m.clock.Equal(before) {
		t.Fatal("a replaced tick moved the clock or scheduled another")
	}

	// Decided two hours ago, nothing counts seconds: the next tick is at
	// the minute again.
	clock.Advance(2 * time.Hour) // 11:14:00
	done := busy.Requests[0]
	if err := done.Apply(protocol.EventApprove, "lead", t0, ""); err != nil {
		t.Fatal(err)
	}
	busy.Version, busy.Requests, busy.Pending = 3, []protocol.Request{done}, 0
	m.Update(SnapshotMsg(busy))
	clock.Advance(500 * time.Millisecond)
	m.Update(clockMsg{gen: m.tickGen})
	if got := tickIn(m); got != time.Minute-500*time.Millisecond {
		t.Fatalf("a quiet screen ticks in %v; want 59.5s", got)
	}
	if !m.clock.Equal(clock.Now()) {
		t.Fatalf("the clock shows %v; want %v", m.clock, clock.Now())
	}

	// A flash clears after seconds: the tick comes forward for it, and
	// the screen drawn with it has the time now, not the last tick's.
	clock.Advance(20 * time.Second)
	m.Update(ActionDoneMsg{Text: "could not approve", Err: errors.New("no")})
	if tickIn(m) != time.Second {
		t.Fatalf("a flash left the tick in %v", tickIn(m))
	}
	if !m.clock.Equal(clock.Now()) {
		t.Fatalf("drawn with the clock at %v; want %v", m.clock, clock.Now())
	}
	clock.Advance(9 * time.Second)
	m.Update(clockMsg{gen: m.tickGen})
	if m.flash != "" {
		t.Fatalf("the flash %q stayed", m.flash)
	}

	// A member at work: its spinner and times.
	working := busy
	working.Version = 4
	working.Members = []view.MemberView{member(tm, "data", protocol.MemberWorking, "archiving", 0)}
	m.Update(clockMsg{gen: m.tickGen}) // the flash gone, the minute again
	if tickIn(m) == time.Second {
		t.Fatal("the tick stayed at a second with nothing counted")
	}
	m.Update(SnapshotMsg(working))
	if tickIn(m) != time.Second {
		t.Fatalf("a member at work left the tick in %v", tickIn(m))
	}
}

// TestTracesTickOnlyWhileACallRuns: the Traces pane counts seconds only
// while a call it shows is running (its time grows on screen); with every
// call ended the clock ticks at the minute, so a screen left on Traces
// sleeps.
func TestTracesTickOnlyWhileACallRuns(t *testing.T) {
	m, clock := newTestModel(t, 120, 36)
	clock.Advance(13 * time.Second) // 09:13:13
	tm := demoTeam(t)
	quiet := view.Snapshot{Version: 1, Team: tm, Members: []view.MemberView{member(tm, "data", protocol.MemberIdle, "waiting", 0)},
		Chains: trace.ChainListOf(errorChains()...)}
	m.Update(SnapshotMsg(quiet))
	m.Init()
	send(m, "3")
	if m.focus != paneTraces {
		t.Fatal("3 did not open Traces")
	}
	if got := tickIn(m); got != 47*time.Second {
		t.Fatalf("Traces with every call ended ticks in %v; want 47s, at 09:14", got)
	}

	running := &trace.Call{RequestID: "req-00000000000c", CorrelationID: "corr-000000000001", Caller: "reservas", Target: "data",
		Action: "leer", Start: clock.Now(), Status: trace.CallRunning}
	withCall := func(version uint64, c *trace.Call) view.Snapshot {
		s := quiet
		s.Version = version
		s.Chains = trace.ChainListOf(append(errorChains(), trace.Chain{CorrelationID: c.CorrelationID, Start: c.Start, Rows: []trace.Row{{Call: c}}})...)
		return s
	}
	m.Update(SnapshotMsg(withCall(2, running)))
	if got := tickIn(m); got != time.Second {
		t.Fatalf("a running call left the tick in %v; want 1s", got)
	}
	clock.Advance(3 * time.Second)
	m.Update(clockMsg{gen: m.tickGen})
	if screen := ansi.Strip(m.View().Content); !strings.Contains(screen, "3.0s") {
		t.Fatalf("the running call's time did not grow to 3.0s:\n%s", screen)
	}

	ended := *running
	ended.Status, ended.DurationMS, ended.End = trace.CallOK, 3000, clock.Now()
	m.Update(SnapshotMsg(withCall(3, &ended)))
	m.Update(clockMsg{gen: m.tickGen})
	if got := tickIn(m); got == time.Second {
		t.Fatal("the tick stayed at a second once every call had ended")
	}
}
