package tui

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"huddle/internal/testkit/dirrecords"
	"huddle/protocol"
	"huddle/team"
	"huddle/team/view"
)

func press(s string) tea.KeyPressMsg {
	switch s {
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "shift+tab":
		return tea.KeyPressMsg{Code: tea.KeyTab, Mod: tea.ModShift}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "pgup":
		return tea.KeyPressMsg{Code: tea.KeyPgUp}
	case "pgdn":
		return tea.KeyPressMsg{Code: tea.KeyPgDown}
	case "ctrl+c":
		return tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	}
	r := []rune(s)[0]
	return tea.KeyPressMsg{Code: r, Text: s}
}

// send feeds keys to the model and returns the last command.
func send(m *Model, keys ...string) tea.Cmd {
	var cmd tea.Cmd
	for _, k := range keys {
		_, cmd = m.Update(press(k))
	}
	return cmd
}

func typeText(m *Model, text string) {
	for _, r := range text {
		k := tea.KeyPressMsg{Code: r, Text: string(r)}
		if r == ' ' {
			k = tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
		}
		m.Update(k)
	}
}

// run runs a command and everything it batches, and returns the messages.
func run(cmd tea.Cmd) []tea.Msg {
	if cmd == nil {
		return nil
	}
	msg := cmd()
	if b, ok := msg.(tea.BatchMsg); ok {
		var out []tea.Msg
		for _, c := range b {
			out = append(out, run(c)...)
		}
		return out
	}
	return []tea.Msg{msg}
}

func isQuit(cmd tea.Cmd) bool {
	for _, msg := range run(cmd) {
		if _, ok := msg.(tea.QuitMsg); ok {
			return true
		}
	}
	return false
}

// onDisk gives the model a real team directory holding the snapshot's
// requests, so its actions act on files.
func onDisk(t *testing.T, m *Model, snap view.Snapshot) {
	t.Helper()
	if err := os.WriteFile(team.ConfigPath(m.dir), team.DemoTeam(), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, r := range snap.Requests {
		r := r
		if err := dirrecords.CreateRequest(m.dir, &r); err != nil {
			t.Fatal(err)
		}
	}
}

func TestPanesSwitchWithTabAndDigits(t *testing.T) {
	m, _ := newTestModel(t, 80, 24)
	m.Update(SnapshotMsg(busySnapshot(t)))
	if m.focus != paneRequests {
		t.Fatalf("starts on %v, want requests", m.focus)
	}
	want := []pane{paneTraces, paneMessages, paneDeadLetters, paneRoster, paneRequests}
	for _, p := range want {
		send(m, "tab")
		if m.focus != p {
			t.Fatalf("tab: focus %v, want %v", m.focus, p)
		}
	}
	send(m, "shift+tab")
	if m.focus != paneRoster {
		t.Fatalf("shift+tab: focus %v, want roster", m.focus)
	}
	for d, p := range map[string]pane{"1": paneRoster, "2": paneRequests, "3": paneTraces, "4": paneMessages, "5": paneDeadLetters} {
		send(m, d)
		if m.focus != p {
			t.Fatalf("%s: focus %v, want %v", d, m.focus, p)
		}
	}
	// The roster shows its member's card on the right; esc goes back to
	// the pane it was entered from.
	send(m, "3", "1")
	if !m.member.open || !strings.Contains(m.View().Content, "Member reservas") {
		t.Fatalf("roster focus should show reservas's card on the right:\n%s", m.View().Content)
	}
	send(m, "esc")
	if m.focus != paneTraces || !strings.Contains(m.View().Content, "[3 Traces") {
		t.Fatalf("esc on the roster should go back to traces: focus=%v", m.focus)
	}
}

func TestMoveSelectsRequestsAndMembers(t *testing.T) {
	m, _ := newTestModel(t, 80, 24)
	m.Update(SnapshotMsg(busySnapshot(t)))
	if r := m.selectedRequest(); r == nil || r.ID != "pl-5f1c9a2b7e31" {
		t.Fatalf("first selection %v", r)
	}
	send(m, "j")
	if r := m.selectedRequest(); r.ID != "pl-0a1b2c3d4e5f" {
		t.Fatalf("after j: %s", r.ID)
	}
	send(m, "down", "down") // stays on the last
	if r := m.selectedRequest(); r.ID != "pl-0a1b2c3d4e5f" {
		t.Fatalf("past the end: %s", r.ID)
	}
	send(m, "k")
	if r := m.selectedRequest(); r.ID != "pl-5f1c9a2b7e31" {
		t.Fatalf("after k: %s", r.ID)
	}
	send(m, "1", "j", "j")
	if mv := m.selectedMember(); memberName(mv) != "data" {
		t.Fatalf("roster selection %s, want data", memberName(mv))
	}
}

func TestApproveWaitsOutTheGraceThenWritesTheRecord(t *testing.T) {
	m, clock := newTestModel(t, 80, 24)
	snap := busySnapshot(t)
	onDisk(t, m, snap)
	m.Update(SnapshotMsg(snap))
	// The plan just landed under the cursor: a is swallowed.
	clock.Advance(100 * time.Millisecond)
	if cmd := send(m, "a"); cmd != nil {
		t.Fatal("a approved a request that landed under the cursor 100ms ago")
	}
	clock.Advance(grace)
	cmd := send(m, "a")
	if cmd == nil {
		t.Fatal("a after the grace period did nothing")
	}
	msgs := run(cmd)
	done, ok := msgs[0].(ActionDoneMsg)
	if !ok || done.Err != nil || !strings.Contains(done.Text, "approved pl-5f1c9a2b7e31") {
		t.Fatalf("approve: %+v", msgs)
	}
	r, err := dirrecords.LoadRequest(m.dir, "pl-5f1c9a2b7e31")
	if err != nil || r.Status != protocol.RequestApproved || r.ResolvedBy != protocol.Lead {
		t.Fatalf("record after a: %+v %v", r, err)
	}
	m.Update(done)
	if !strings.Contains(m.View().Content, "approved pl-5f1c9a2b7e31") {
		t.Fatal("the result is not shown")
	}
}

// TestMovingTheCursorNeedsNoGrace: a request that came under the cursor
// by itself waits out the grace period, unless the person then put the
// cursor on it (a request that arrived a moment ago waits whatever put it
// there).
func TestMovingTheCursorNeedsNoGrace(t *testing.T) {
	m, clock := newTestModel(t, 80, 24)
	snap := busySnapshot(t)
	onDisk(t, m, snap)
	m.Update(SnapshotMsg(snap))
	clock.Advance(time.Second)
	next := snap
	next.Requests = append([]protocol.Request(nil), snap.Requests...)
	next.Requests[0].Plan += " Then tell the client." // it changed on screen by itself
	m.Update(SnapshotMsg(next))
	if cmd := send(m, "a"); cmd != nil || !strings.Contains(m.flash, "changed: nothing decided") {
		t.Fatalf("a decided a plan that changed on screen a moment ago: flash %q", m.flash)
	}
	send(m, "j", "k") // the person put the cursor there
	if cmd := send(m, "a"); cmd == nil {
		t.Fatalf("a on a request the person selected was ignored: %q", m.flash)
	}
}

func TestNextRequestLandingAfterADecisionGetsGrace(t *testing.T) {
	m, clock := newTestModel(t, 80, 24)
	snap := busySnapshot(t)
	second := planRequest("pl-222222222222", "finanzas", "Close November", t0.Add(-5*time.Second))
	snap.Requests = append([]protocol.Request{snap.Requests[0], second}, snap.Requests[1:]...)
	snap.Pending = 2
	m.Update(SnapshotMsg(snap))
	clock.Advance(time.Second)
	// The first is approved elsewhere: the second moves under the cursor.
	next := snap
	next.Requests = append([]protocol.Request(nil), snap.Requests...)
	first := next.Requests[0]
	first.Apply(protocol.EventApprove, "lead", clock.Now(), "")
	next.Requests = []protocol.Request{second, first, snap.Requests[2]}
	next.Pending = 1
	m.Update(SnapshotMsg(next))
	if r := m.selectedRequest(); r.ID != "pl-222222222222" {
		t.Fatalf("under the cursor: %s", r.ID)
	}
	if cmd := send(m, "a"); cmd != nil {
		t.Fatal("a double-tap approved the next request the moment it landed")
	}
}

func TestRejectNeedsFeedbackAndEscNeverApproves(t *testing.T) {
	m, clock := newTestModel(t, 80, 24)
	snap := busySnapshot(t)
	onDisk(t, m, snap)
	m.Update(SnapshotMsg(snap))
	clock.Advance(time.Second)
	send(m, "r")
	if m.dialog == nil || m.dialog.kind != dialogReject {
		t.Fatal("r did not open the feedback dialog")
	}
	if cmd := send(m, "esc"); cmd != nil || m.dialog != nil {
		t.Fatal("esc did something other than close the dialog")
	}
	if r, _ := dirrecords.LoadRequest(m.dir, "pl-5f1c9a2b7e31"); r.Status != protocol.RequestPending {
		t.Fatalf("esc changed the request: %s", r.Status)
	}
	send(m, "r")
	if cmd := send(m, "enter"); cmd != nil || m.dialog == nil || !strings.Contains(m.dialog.err, "feedback is required") {
		t.Fatal("an empty rejection was accepted")
	}
	typeText(m, "use room 2")
	msgs := run(send(m, "enter"))
	if done := msgs[0].(ActionDoneMsg); done.Err != nil {
		t.Fatal(done.Err)
	}
	r, _ := dirrecords.LoadRequest(m.dir, "pl-5f1c9a2b7e31")
	if r.Status != protocol.RequestRejected || r.Feedback != "use room 2" {
		t.Fatalf("record after reject: %+v", r)
	}
}

func TestDialogClosesWhenResolvedElsewhere(t *testing.T) {
	m, clock := newTestModel(t, 80, 24)
	snap := busySnapshot(t)
	m.Update(SnapshotMsg(snap))
	clock.Advance(time.Second)
	send(m, "r")
	typeText(m, "half a thought")
	next := snap
	next.Requests = append([]protocol.Request(nil), snap.Requests...)
	next.Requests[0].Apply(protocol.EventApprove, "ana", clock.Now(), "")
	next.Pending = 0
	m.Update(SnapshotMsg(next))
	if m.dialog != nil {
		t.Fatal("the dialog stayed open for a request resolved elsewhere")
	}
	if !strings.Contains(m.View().Content, "resolved by ana (approved)") {
		t.Fatalf("the screen does not say who resolved it:\n%s", m.View().Content)
	}
}

func TestShutdownAsksFirst(t *testing.T) {
	m, _ := newTestModel(t, 80, 24)
	snap := busySnapshot(t)
	onDisk(t, m, snap)
	m.Update(SnapshotMsg(snap))
	send(m, "1", "j") // finanzas
	send(m, "s")
	if m.dialog == nil || m.dialog.kind != dialogShutdown || m.dialog.target != "finanzas" {
		t.Fatalf("s: dialog %+v", m.dialog)
	}
	if cmd := send(m, "n"); cmd != nil || m.dialog != nil {
		t.Fatal("n did not just cancel")
	}
	send(m, "s")
	msgs := run(send(m, "y"))
	done := msgs[0].(ActionDoneMsg)
	if done.Err != nil || !strings.Contains(done.Text, "asked finanzas to shut down") {
		t.Fatalf("shutdown: %+v", done)
	}
	rs, _ := dirrecords.ListRequests(m.dir)
	found := false
	for _, r := range rs {
		found = found || (r.Kind == protocol.KindShutdown && r.To == "finanzas")
	}
	if !found {
		t.Fatal("no shutdown request on disk")
	}
}

func TestApproveRefusesWhatTheLeadDoesNotDecide(t *testing.T) {
	m, clock := newTestModel(t, 80, 24)
	snap := busySnapshot(t)
	sd := protocol.NewRequest(protocol.KindShutdown, "sd-111111111111", protocol.Lead, "data", t0.Add(-time.Second), time.Minute)
	snap.Requests = append([]protocol.Request{sd}, snap.Requests...)
	snap.Pending = 2
	m.Update(SnapshotMsg(snap))
	clock.Advance(time.Second)
	if cmd := send(m, "a"); cmd != nil || !strings.Contains(m.flash, "only data answers it") {
		t.Fatalf("a on a shutdown request: flash %q", m.flash)
	}
	send(m, "j", "j") // the rejected plan
	if cmd := send(m, "a"); cmd != nil || !strings.Contains(m.flash, "already rejected by lead") {
		t.Fatalf("a on a final request: flash %q", m.flash)
	}
}

func TestMessageBroadcastAndFilter(t *testing.T) {
	m, _ := newTestModel(t, 80, 24)
	snap := busySnapshot(t)
	onDisk(t, m, snap)
	m.Update(SnapshotMsg(snap))
	send(m, "1", "m")
	typeText(m, "hello reservas")
	if done := run(send(m, "enter"))[0].(ActionDoneMsg); done.Err != nil || done.Text != "sent to reservas" {
		t.Fatalf("m: %+v", done)
	}
	send(m, "b")
	typeText(m, "stand up")
	if done := run(send(m, "enter"))[0].(ActionDoneMsg); done.Err != nil || done.Text != "broadcast to 4 members" {
		t.Fatalf("b: %+v", done)
	}
	send(m, "4", "/")
	typeText(m, "data")
	send(m, "enter")
	if len(m.messages.list.rows) != 2 {
		t.Fatalf("filter data: %d messages, want 2", len(m.messages.list.rows))
	}
	if !strings.Contains(m.View().Content, "4 Messages /data") {
		t.Fatal("the filter is not shown")
	}
	send(m, "/", "esc")
	if len(m.messages.list.rows) != 3 {
		t.Fatalf("esc clears the filter: %d messages", len(m.messages.list.rows))
	}
}

func TestQuitKeys(t *testing.T) {
	m, _ := newTestModel(t, 80, 24)
	m.Update(SnapshotMsg(busySnapshot(t)))
	if !isQuit(send(m, "q")) {
		t.Fatal("q does not quit")
	}
	send(m, "b") // a dialog takes q as text…
	if isQuit(send(m, "q")) {
		t.Fatal("q in a text field quit")
	}
	if !isQuit(send(m, "ctrl+c")) { // …but ctrl+c always quits
		t.Fatal("ctrl+c does not quit from a dialog")
	}
}

func TestNewRequestRingsAndTitles(t *testing.T) {
	m, _ := newTestModel(t, 80, 24)
	_, cmd := m.Update(SnapshotMsg(busySnapshot(t)))
	bell := false
	for _, msg := range run(cmd) {
		if raw, ok := msg.(tea.RawMsg); ok {
			seq := raw.Msg.(string)
			if !strings.HasSuffix(seq, "\a") {
				t.Fatalf("a notification without the bell: %q", seq)
			}
			bell = bell || strings.HasPrefix(seq, "\x1b]9;huddle: plan from ") && strings.Contains(seq, "\x1b]777;notify;huddle: plan from ")
		}
	}
	if !bell {
		t.Fatal("no notification (and bell) for a new pending request")
	}
	v := m.View()
	if v.WindowTitle != "huddle (1 pending)" {
		t.Fatalf("title %q", v.WindowTitle)
	}
	if v.MouseMode != tea.MouseModeNone {
		t.Fatal("mouse capture is on")
	}
	// The same request again: no second bell.
	_, cmd = m.Update(SnapshotMsg(busySnapshot(t)))
	for _, msg := range run(cmd) {
		if _, ok := msg.(tea.RawMsg); ok {
			t.Fatal("rang again for a request already announced")
		}
	}
}

func TestNoColorHasNoColourCodes(t *testing.T) {
	m, _ := newTestModel(t, 140, 40)
	m.Update(SnapshotMsg(busySnapshot(t)))
	out := m.View().Content
	for _, code := range []string{"38;2;", "48;2;", "38;5;", "48;5;"} {
		if strings.Contains(out, code) {
			t.Fatalf("colour code %q on a screen without colour", code)
		}
	}
	colored := New(Options{Styles: ptr(NewStyles(true, true)), Now: (&testClock{now: t0}).Now})
	colored.Update(tea.WindowSizeMsg{Width: 140, Height: 40})
	colored.Update(SnapshotMsg(busySnapshot(t)))
	if !strings.Contains(colored.View().Content, "38;2;") {
		t.Fatal("the coloured styles use no colour: the check above proves nothing")
	}
}

func ptr[T any](v T) *T { return &v }

func TestRemoteSpansAreMarked(t *testing.T) {
	m, _ := newTestModel(t, 120, 36)
	snap := busySnapshot(t)
	snap.Chains.At(2).Rows[1].Call.Remote = "http://127.0.0.1:7421"
	m.Update(SnapshotMsg(snap))
	send(m, "3")
	for range 6 {
		send(m, "j")
	}
	out := m.View().Content
	if !strings.Contains(out, "⇄ finanzas → data.escribir") || !strings.Contains(out, "http://127.0.0.1:7421") {
		t.Fatalf("the remote call is not marked:\n%s", out)
	}
	if strings.Count(out, "⇄") != 1 {
		t.Fatalf("local calls are marked remote too:\n%s", out)
	}
}

// TestFilterIsLiveOverTheTextOnScreen: the filter narrows the rows as it
// is typed, matches what a row says (a message's words, a plan's text), not
// only names and ids, underlines the match, counts "n of m" in the title,
// keeps what enter leaves and goes with esc.
func TestFilterIsLiveOverTheTextOnScreen(t *testing.T) {
	m, _ := newTestModel(t, 120, 36)
	m.Update(SnapshotMsg(busySnapshot(t)))
	send(m, "4", "/")
	typeText(m, "led")
	if n := len(m.messages.list.rows); n != 1 {
		t.Fatalf("while typing /led: %d messages, want the ledger's", n)
	}
	screen := m.View().Content
	if !strings.Contains(ansi.Strip(screen), "4 Messages /led 1 of 3") || !strings.Contains(screen, markOn+"led"+markOff+"ger closed") {
		t.Fatalf("the live filter's title or mark:\n%s", screen)
	}
	typeText(m, "gerx")
	if n := len(m.messages.list.rows); n != 0 || !strings.Contains(ansi.Strip(m.View().Content), "no message matches the filter") {
		t.Fatalf("/ledgerx: %d messages", n)
	}
	send(m, "backspace", "enter")
	if m.dialog != nil || m.messages.filter() != "ledger" || len(m.messages.list.rows) != 1 {
		t.Fatalf("enter keeps the filter: dialog %v, filter %q, %d rows", m.dialog, m.messages.filter(), len(m.messages.list.rows))
	}
	send(m, "/", "esc")
	if m.messages.filter() != "" || len(m.messages.list.rows) != 3 || !strings.Contains(ansi.Strip(m.View().Content), "4 Messages (3)") {
		t.Fatalf("esc clears it: %q, %d rows", m.messages.filter(), len(m.messages.list.rows))
	}
	// A plan's text, in the requests.
	send(m, "2", "/")
	typeText(m, "revised after")
	if n := len(m.requests.list.rows); n != 1 || m.requests.selected().ID != "pl-5f1c9a2b7e31" {
		t.Fatalf("/revised after, over the plans: %d requests", n)
	}
}

// TestHelpListsEveryFooterKey: on every pane, and with a member's card
// open, the ? screen lists each key the footer offers there, and the page
// and end keys move every list.
func TestHelpListsEveryFooterKey(t *testing.T) {
	m, _ := newTestModel(t, 200, 50)
	m.Update(SnapshotMsg(busySnapshot(t)))
	for _, keys := range [][]string{{"1"}, {"2"}, {"3"}, {"4"}, {"5"}, {"1", "enter"}} {
		send(m, keys...)
		footer := m.footerKeys()
		send(m, "?")
		help := ansi.Strip(m.View().Content)
		for _, b := range footer {
			if !strings.Contains(help, b.Help().Key+" ") {
				t.Errorf("after %v the footer offers %q (%s), which ? does not list:\n%s", keys, b.Help().Key, b.Help().Desc, help)
			}
		}
		send(m, "esc", "esc")
	}
	send(m, "4", "g")
	if m.messages.list.cursor != 0 {
		t.Fatalf("g on the messages: cursor %d", m.messages.list.cursor)
	}
	send(m, "end")
	if m.messages.list.cursor != 2 || !m.messages.follow {
		t.Fatalf("end on the messages: cursor %d, following %v", m.messages.list.cursor, m.messages.follow)
	}
	send(m, "3", "G")
	if last := m.traces.list.len() - 1; m.traces.list.cursor != last {
		t.Fatalf("G on the traces: cursor %d, want %d", m.traces.list.cursor, last)
	}
	send(m, "pgup")
	if m.traces.list.cursor == m.traces.list.len()-1 {
		t.Fatal("pgup on the traces did not move")
	}
	send(m, "home")
	if m.traces.list.cursor != 0 {
		t.Fatalf("home on the traces: cursor %d", m.traces.list.cursor)
	}
}

// TestFlashClearsItself: a flash gives the status line back a few seconds
// later (a failure twice as late), a new flash starting its own time.
func TestFlashClearsItself(t *testing.T) {
	m, clock := newTestModel(t, 80, 24)
	m.Update(SnapshotMsg(busySnapshot(t)))
	m.Update(ActionDoneMsg{Text: "sent to data"})
	clock.Advance(flashFor - time.Second)
	m.Update(tickMsg(clock.Now()))
	if m.flash != "sent to data" {
		t.Fatalf("gone too soon: %q", m.flash)
	}
	m.Update(ActionDoneMsg{Text: "broadcast to 4 members"})
	clock.Advance(2 * time.Second)
	m.Update(tickMsg(clock.Now()))
	if m.flash != "broadcast to 4 members" {
		t.Fatalf("a new flash took the old one's time: %q", m.flash)
	}
	clock.Advance(flashFor)
	m.Update(tickMsg(clock.Now()))
	if m.flash != "" || !strings.Contains(ansi.Strip(m.View().Content), "team directory .huddle") {
		t.Fatalf("still flashing after %v: %q", flashFor, m.flash)
	}
	m.Update(ActionDoneMsg{Err: errors.New("data is stopped")})
	clock.Advance(flashFor)
	m.Update(tickMsg(clock.Now()))
	if m.flash != "data is stopped" {
		t.Fatalf("a failure went as soon as a success: %q", m.flash)
	}
	clock.Advance(flashFor)
	m.Update(tickMsg(clock.Now()))
	if m.flash != "" {
		t.Fatalf("a failure stayed: %q", m.flash)
	}
}
