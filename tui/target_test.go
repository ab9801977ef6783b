package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"huddle/internal/testkit"
	"huddle/internal/testkit/dirrecords"
	"huddle/internal/testkit/files"
	"huddle/ipc/trace"
	"huddle/protocol"
	"huddle/team/view"
)

// TestMessageAndShutdownActOnTheRowsMember: m and s act on the member the
// focused pane's row names, the footer says which, and a row that names
// none says so instead of touching the roster's hidden cursor.
func TestMessageAndShutdownActOnTheRowsMember(t *testing.T) {
	m, _ := newTestModel(t, 140, 40)
	snap := busySnapshot(t)
	snap.Messages = append(snap.Messages, view.MessageView{Inbox: "auditor", Msg: textMessage("lead", "auditor", "are you there?", t0)})
	m.Update(SnapshotMsg(snap))
	footer := func() string {
		lines := strings.Split(ansi.Strip(m.View().Content), "\n")
		return lines[len(lines)-2]
	}
	cases := []struct {
		name string
		keys []string
		want string
	}{
		{"a pending plan: its teammate", []string{"2"}, "reservas"},
		{"the roster: its member", []string{"1", "j"}, "finanzas"},
		{"a call: its caller", []string{"3", "j", "j", "j", "j", "j", "j"}, "finanzas"}, // finanzas → data.escribir
		{"a message from the lead: its recipient", []string{"4"}, "auditor"},
		{"a message from a member: its sender", []string{"4", "k"}, "data"},
	}
	for _, tc := range cases {
		send(m, tc.keys...)
		if got := m.actedOn(); got != tc.want {
			t.Errorf("%s: m and s act on %q, want %q", tc.name, got, tc.want)
		}
		if f := footer(); !strings.Contains(f, "m message "+tc.want) {
			t.Errorf("%s: the footer %q does not name %s", tc.name, f, tc.want)
		}
		send(m, "m")
		if m.dialog == nil || m.dialog.kind != dialogMessage || m.dialog.target != tc.want {
			t.Errorf("%s: m opened %+v, want a message to %s", tc.name, m.dialog, tc.want)
		}
		send(m, "esc")
		send(m, "s")
		if tc.want == "auditor" { // crashed: nothing to shut down, and s is not offered
			if m.dialog != nil || !strings.Contains(m.flash, "auditor is crashed: there is nothing to shut down") || strings.Contains(footer(), "shut down auditor") {
				t.Errorf("%s: s on a crashed member: dialog %+v, flash %q, footer %q", tc.name, m.dialog, m.flash, footer())
			}
			continue
		}
		if m.dialog == nil || m.dialog.kind != dialogShutdown || m.dialog.target != tc.want {
			t.Errorf("%s: s opened %+v, want a shutdown of %s", tc.name, m.dialog, tc.want)
		}
		send(m, "n")
	}

	send(m, "3") // a chain's header names no member
	for m.traces.list.cursor > 0 {
		send(m, "k")
	}
	if got := m.actedOn(); got != "" {
		t.Fatalf("a chain header acts on %q", got)
	}
	send(m, "m")
	if m.dialog != nil || !strings.Contains(m.flash, "names no member") {
		t.Fatalf("m on a chain header: dialog %+v, flash %q", m.dialog, m.flash)
	}
}

// TestApproveFromTheRoster: a on a member awaiting approval decides its
// pending plan, with the same grace as in Requests; on a member with no
// plan it says so.
func TestApproveFromTheRoster(t *testing.T) {
	m, clock := newTestModel(t, 140, 40)
	snap := busySnapshot(t)
	onDisk(t, m, snap)
	m.Update(SnapshotMsg(snap))
	send(m, "1") // reservas, awaiting approval of pl-5f1c9a2b7e31
	clock.Advance(100 * time.Millisecond)
	if cmd := send(m, "a"); cmd != nil {
		t.Fatal("a on the roster decided a plan that arrived 100ms ago")
	}
	clock.Advance(grace)
	lines := strings.Split(ansi.Strip(m.View().Content), "\n")
	if f := lines[len(lines)-2]; !strings.Contains(f, "a approve reservas pl-5f1c9a2b7e31") {
		t.Errorf("the footer %q does not offer reservas's plan", f)
	}
	msgs := run(send(m, "a"))
	if len(msgs) == 0 {
		t.Fatal("a on reservas did nothing")
	}
	if done, ok := msgs[0].(ActionDoneMsg); !ok || done.Err != nil {
		t.Fatalf("a on reservas: %+v", msgs)
	}
	r, err := dirrecords.LoadRequest(m.dir, "pl-5f1c9a2b7e31")
	if err != nil || r.Status != protocol.RequestApproved {
		t.Fatalf("record after a on the roster: %+v %v", r, err)
	}

	send(m, "j") // finanzas: working, no plan
	if cmd := send(m, "a"); cmd != nil || !strings.Contains(m.flash, "finanzas has no request waiting for the lead") {
		t.Fatalf("a on finanzas: flash %q", m.flash)
	}
	send(m, "k", "r") // r on reservas: the snapshot on screen still shows its plan pending
	if m.dialog == nil || m.dialog.kind != dialogReject || m.dialog.target != "pl-5f1c9a2b7e31" {
		t.Fatalf("r on reservas: dialog %+v", m.dialog)
	}
}

// TestSelectionsFollowTheItem: a selected call and a selected message stay
// selected while new ones arrive above them and old ones leave.
func TestSelectionsFollowTheItem(t *testing.T) {
	m, _ := newTestModel(t, 140, 40)
	snap := busySnapshot(t)
	m.Update(SnapshotMsg(snap))

	send(m, "3", "j", "j", "j") // the DENIED call
	if c := m.traces.selectedCall(); c == nil || c.ErrorCode != "DENIED" {
		t.Fatalf("setup: selected call %+v", c)
	}
	send(m, "4", "k") // the message before the newest: no longer following
	want := m.messages.selectedMessage().Msg.Content

	next := snap
	newer := *snap.Chains.At(0).Rows[0].Call
	newer.RequestID, newer.CorrelationID = "req-000000000009", "corr-dddddddddddd"
	next.Chains = trace.ChainListOf(append([]trace.Chain{{CorrelationID: newer.CorrelationID, Start: t0, Rows: []trace.Row{{Call: &newer}}}}, snap.Chains.Slice()...)...)
	next.Messages = append(append([]view.MessageView(nil), snap.Messages[1:]...),
		view.MessageView{Inbox: "lead", Offset: 99, Msg: textMessage("finanzas", "lead", "a new one", t0)})
	m.Update(SnapshotMsg(next))

	if got := m.messages.selectedMessage().Msg.Content; got != want {
		t.Errorf("the selected message moved to %q, want %q", got, want)
	}
	send(m, "3")
	if c := m.traces.selectedCall(); c == nil || c.ErrorCode != "DENIED" {
		t.Errorf("the selected call moved to %+v, want the DENIED one", c)
	}
}

// TestQuitAsksWhileTheTeamWorks: q in a UI that runs the team asks once
// while members work or requests wait; n stays, y quits; a UI that only
// watches, or a team with nothing going on, quits at once.
func TestQuitAsksWhileTheTeamWorks(t *testing.T) {
	st := NewStyles(false, true)
	m := New(Options{Dir: t.TempDir(), Styles: &st, RunsTeam: true})
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	m.Update(SnapshotMsg(busySnapshot(t)))
	if isQuit(send(m, "q")) || m.dialog == nil || m.dialog.kind != dialogQuit {
		t.Fatalf("q with work going on: dialog %+v", m.dialog)
	}
	screen := ansi.Strip(m.View().Content)
	for _, want := range []string{"Stop the team?", "2 members at work, 1 pending request.", "these pending requests are cancelled:", "pl-5f1c9a2b7e31 reservas's plan"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the question lacks %q:\n%s", want, screen)
		}
	}
	if isQuit(send(m, "n")) || m.dialog != nil {
		t.Fatal("n did not keep the UI")
	}
	send(m, "q")
	if !isQuit(send(m, "y")) {
		t.Fatal("y did not quit")
	}

	idle := busySnapshot(t)
	for i := range idle.Members {
		idle.Members[i].Record.Status = protocol.MemberIdle
	}
	idle.Requests, idle.Pending = nil, 0
	m.Update(SnapshotMsg(idle))
	if !isQuit(send(m, "q")) {
		t.Fatal("q with nothing going on asked")
	}

	watcher, _ := newTestModel(t, 80, 24) // huddle attach
	watcher.Update(SnapshotMsg(busySnapshot(t)))
	if !isQuit(send(watcher, "q")) {
		t.Fatal("q in a UI that does not run the team asked")
	}
}

// TestShutdownRefusalIsShownWhenItArrives: a member refusing a shutdown
// the UI saw pending is said on the status line, with its reason.
func TestShutdownRefusalIsShownWhenItArrives(t *testing.T) {
	m, clock := newTestModel(t, 120, 36)
	snap := busySnapshot(t)
	sd := protocol.NewRequest(protocol.KindShutdown, "sd-0123456789ab", protocol.Lead, "finanzas", t0, time.Minute)
	sd.Reason = "asked from the huddle UI"
	snap.Requests = append([]protocol.Request{sd}, snap.Requests...)
	snap.Pending = 2
	m.Update(SnapshotMsg(snap))
	if m.flash != "" {
		t.Fatalf("a flash before any answer: %q", m.flash)
	}
	clock.Advance(time.Second)
	next := snap
	next.Requests = append([]protocol.Request(nil), snap.Requests...)
	if err := next.Requests[0].Apply(protocol.EventReject, "finanzas", clock.Now(), "closing invoices, ask again in a minute"); err != nil {
		t.Fatal(err)
	}
	next.Requests[0].ResponseReason = "closing invoices, ask again in a minute"
	next.Pending = 1
	m.Update(SnapshotMsg(next))
	lines := strings.Split(ansi.Strip(m.View().Content), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, "finanzas refused to shut down (sd-0123456789ab): closing invoices, ask again in a minute") {
		t.Errorf("the status line %q does not say the refusal", last)
	}
	// Said once: a later snapshot with the same requests (only a chain
	// changed) does not say it again once it was dismissed.
	send(m, "esc")
	again := next
	again.Version++
	again.Chains = trace.ChainListOf(append(next.Chains.Slice(), trace.Chain{CorrelationID: "corr-later", Start: t0.Add(-time.Hour)})...)
	m.Update(SnapshotMsg(again))
	if m.flash != "" {
		t.Errorf("the refusal was said again with a snapshot that did not bring it: %q", m.flash)
	}
}

// TestRequestsOpenOnThePendingOne: moving to the Requests pane with a
// final request selected selects the first pending one.
func TestRequestsOpenOnThePendingOne(t *testing.T) {
	m, _ := newTestModel(t, 120, 36)
	m.Update(SnapshotMsg(busySnapshot(t)))
	send(m, "j") // the rejected plan
	if r := m.selectedRequest(); r == nil || r.Status != protocol.RequestRejected {
		t.Fatalf("setup: %+v", r)
	}
	send(m, "1", "2")
	if r := m.selectedRequest(); r == nil || r.ID != "pl-5f1c9a2b7e31" {
		t.Fatalf("the Requests pane opened on %+v, want the pending pl-5f1c9a2b7e31", r)
	}
	send(m, "j", "2") // staying in the pane keeps the person's choice
	if r := m.selectedRequest(); r == nil || r.Status != protocol.RequestRejected {
		t.Fatalf("pressing 2 in the pane moved the cursor to %+v", r)
	}
}

// TestReadOnlyFooterOffersNoAction: a read-only UI (a replay) offers its
// controls in the footer and none of the keys that act on the team.
func TestReadOnlyFooterOffersNoAction(t *testing.T) {
	st := NewStyles(false, true)
	pause := key.NewBinding(key.WithKeys("space"), key.WithHelp("space", "pause/play"))
	m := New(Options{Dir: t.TempDir(), Styles: &st, Controls: []key.Binding{pause}})
	m.Update(tea.WindowSizeMsg{Width: 200, Height: 40})
	m.Update(SnapshotMsg(busySnapshot(t)))
	for _, keys := range [][]string{{"2"}, {"1"}, {"3", "j"}, {"4"}} {
		send(m, keys...)
		lines := strings.Split(ansi.Strip(m.View().Content), "\n")
		footer := lines[len(lines)-2]
		if !strings.Contains(footer, "space pause/play") {
			t.Errorf("pane %s: the footer %q lacks the controls", keys[0], footer)
		}
		for _, act := range []string{"a approve", "r reject", "m message", "s shut down", "b broadcast"} {
			if strings.Contains(footer, act) {
				t.Errorf("pane %s: the read-only footer %q offers %q", keys[0], footer, act)
			}
		}
	}
}

// TestRestartFromTheUI: R on a crashed member asks the running runtime to
// run it again, which it does (a new run id); on a member still running it
// says why not.
func TestRestartFromTheUI(t *testing.T) {
	dir, tm := startDemo(t) // its exec member, auditor, crashes: no huddle binary here
	testkit.WaitFor(t, 15*time.Second, "auditor crashed", func() bool {
		rec, err := dirrecords.LoadMember(dir, "auditor")
		return err == nil && rec.Status == protocol.MemberCrashed
	})
	before, _ := dirrecords.LoadMember(dir, "auditor")
	waitScreen(t, tm, "crashed")
	for _, k := range []string{"1", "j", "j", "j"} { // auditor is the fourth member
		pressKey(tm, k)
	}
	waitScreen(t, tm, "R restart auditor")
	pressKey(tm, "R")
	testkit.WaitFor(t, 15*time.Second, "auditor run again", func() bool {
		rec, err := dirrecords.LoadMember(dir, "auditor")
		return err == nil && rec.RunID != before.RunID
	})
	waitScreen(t, tm, "asked the runtime to run auditor again") // R's own answer, before the next key's
	pressKey(tm, "k")                                           // data: running
	pressKey(tm, "R")
	waitScreen(t, tm, "R runs a stopped or crashed member again")
}

// TestTracesFollowTheNewestUntilChosen: a traces pane nobody moved keeps
// the newest chain selected as new ones arrive on top.
func TestTracesFollowTheNewestUntilChosen(t *testing.T) {
	m, _ := newTestModel(t, 140, 40)
	snap := busySnapshot(t)
	m.Update(SnapshotMsg(snap))
	send(m, "3")
	next := snap
	newer := *snap.Chains.At(0).Rows[0].Call
	newer.RequestID, newer.CorrelationID = "req-000000000009", "corr-dddddddddddd"
	next.Chains = trace.ChainListOf(append([]trace.Chain{{CorrelationID: newer.CorrelationID, Start: t0, Rows: []trace.Row{{Call: &newer}}}}, snap.Chains.Slice()...)...)
	m.Update(SnapshotMsg(next))
	if tr, ok := m.traces.list.selected(); !ok || tr.chain.CorrelationID != "corr-dddddddddddd" {
		t.Fatalf("the unmoved pane selects %+v, want the newest chain", tr)
	}
}

// TestDeskRefusesMemberKeys: on a desk, s, m and b say at once why they
// cannot act on a person's own session (no dialog, no request, no message)
// and the footer leaves them out; a, A and r stay.
func TestDeskRefusesMemberKeys(t *testing.T) {
	st := NewStyles(false, true)
	dir := t.TempDir()
	m := New(Options{Dir: dir, Styles: &st, Now: (&testClock{now: t0}).Now, Footer: "desk", Actions: DeskActions(StoreLead(context.Background(), files.Open(t, dir)))})
	m.Update(tea.WindowSizeMsg{Width: 140, Height: 40})
	m.Update(SnapshotMsg(busySnapshot(t)))
	send(m, "1", "j")
	lines := strings.Split(ansi.Strip(m.View().Content), "\n")
	if f := lines[len(lines)-2]; strings.Contains(f, "shut down") || strings.Contains(f, "m message") {
		t.Errorf("the desk's footer offers what it refuses: %q", f)
	}
	for key, want := range map[string]string{"s": "end it in its terminal", "m": "reads only the desk's answers", "b": "reads only the desk's answers"} {
		send(m, key)
		if m.dialog != nil || !m.flashBad || !strings.Contains(m.flash, want) {
			t.Errorf("%s on a desk: dialog %+v, flash %q; want it refused with %q", key, m.dialog, m.flash, want)
		}
		send(m, "esc")
	}
	if _, ok := m.actions.(SessionAllower); !ok {
		t.Error("a desk cannot allow for the session")
	}
	if _, ok := m.actions.(Restarter); ok {
		t.Error("a desk offers R, restarting what no runtime runs")
	}
}

// TestKeysNotOfferedWhereTheyCannotAct: with no runtime running the team,
// R is not offered on a crashed member and says why; s is not offered on
// a crashed member; a watcher's screen offers neither.
func TestKeysNotOfferedWhereTheyCannotAct(t *testing.T) {
	m, _ := newTestModel(t, 140, 40)
	snap := busySnapshot(t)
	m.Update(SnapshotMsg(snap))
	send(m, "1", "j", "j", "j") // auditor, crashed
	footer := func() string {
		lines := strings.Split(ansi.Strip(m.View().Content), "\n")
		return lines[len(lines)-2]
	}
	if f := footer(); !strings.Contains(f, "R restart auditor") || strings.Contains(f, "shut down auditor") {
		t.Fatalf("a crashed member on a running team: footer %q", f)
	}
	down := busySnapshot(t)
	down.Down = true
	m.Update(SnapshotMsg(down))
	if f := footer(); strings.Contains(f, "R restart") {
		t.Fatalf("R offered while no runtime runs the team: %q", f)
	}
	send(m, "R")
	if !strings.Contains(m.flash, "the team is not running") {
		t.Fatalf("R while down: flash %q", m.flash)
	}
	w := New(Options{Dir: t.TempDir(), Styles: ptr(NewStyles(false, true)), Actions: WatchOnly("bob's key may watch, not decide")})
	w.Update(tea.WindowSizeMsg{Width: 140, Height: 40})
	w.Update(SnapshotMsg(snap))
	send(w, "1", "j", "j", "j")
	lines := strings.Split(ansi.Strip(w.View().Content), "\n")
	if f := lines[len(lines)-2]; strings.Contains(f, "R restart") || strings.Contains(f, "m message") || strings.Contains(f, "s shut down") {
		t.Fatalf("a watcher's footer offers acting keys: %q", f)
	}
}
