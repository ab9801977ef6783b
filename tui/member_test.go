package tui

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"huddle/protocol"
	"huddle/team"
	"huddle/team/view"
)

// llmSnapshot is busySnapshot with finanzas an llm teammate at work.
func llmSnapshot(t testing.TB) view.Snapshot {
	snap := busySnapshot(t)
	fin := &snap.Members[1]
	fin.Spec.Runtime = team.RuntimeSpec{Kind: "llm", Provider: "openai", Model: "qwen2.5-coder:7b"}
	fin.Record.Runtime = "llm"
	fin.Record.Activity = "running bash: go test ./..."
	fin.Record.Counters = protocol.Counters{Received: 2, Sent: 1, Plans: 1, Calls: 1, TokensIn: 12_300, TokensOut: 4_100, CostUSD: 0.098}
	// data an exec teammate, with a log of its stderr.
	snap.Members[2].Spec.Runtime = team.RuntimeSpec{Kind: team.RuntimeExec, Command: []string{"./index"}}
	return snap
}

// entry is one transcript line at t0+sec.
func entry(sec int, fields string) string {
	return fmt.Sprintf(`{"ts":%q,%s}`, t0.Add(time.Duration(sec)*time.Second).Format(time.RFC3339Nano), fields) + "\n"
}

// writeTranscript writes finanzas's transcript into the model's team
// directory.
func writeTranscript(t testing.TB, dir string, lines ...string) string {
	t.Helper()
	path := filepath.Join(dir, "members", "finanzas.transcript.jsonl")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, l := range lines {
		if _, err := f.WriteString(l); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// writeHistory writes finanzas's status history.
func writeHistory(t testing.TB, dir string) {
	t.Helper()
	lines := []string{
		entry(-60, `"status":"starting"`),
		entry(-59, `"status":"working","activity":"started"`),
		entry(-40, `"status":"awaiting_approval","activity":"waiting for approval of pl-111111111111"`),
		entry(-35, `"status":"working","activity":"plan approved"`),
	}
	path := filepath.Join(dir, "members", "finanzas.history.jsonl")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
}

var finanzasTranscript = []string{
	entry(-50, `"kind":"prompt","conv":"main","text":"Close the open invoices of November and tell data to archive the ledger."`),
	entry(-48, `"kind":"model","conv":"main","turn":1,"text":"I will list the invoices first.","usage":{"in":1200,"out":80},"duration_ms":412`),
	entry(-48, `"kind":"tool_call","conv":"main","turn":1,"tool":"bash","args":{"command":"ls invoices/"}`),
	entry(-47, `"kind":"tool_result","conv":"main","turn":1,"tool":"bash","text":"2026-11-03.json 2026-11-17.json 2026-11-28.json"`),
	entry(-30, `"kind":"model","conv":"main","turn":2,"text":"Three invoices are open; the one of the 28th has no payment reference, which the ledger needs before it can be closed, so I ask data for it.","usage":{"in":1900,"out":120},"duration_ms":530`),
	entry(-29, `"kind":"tool_call","conv":"main","turn":2,"tool":"write_file","args":{"path":"ledger.md"}`),
	entry(-29, `"kind":"tool_result","conv":"main","turn":2,"tool":"write_file","is_error":true,"text":"refused: write_file needs an approved plan (submit_plan first) \u001b[31mred\u001b[0m"`),
}

// openMember focuses the roster and moves to the row'th member, whose card
// the right column shows; it reads the feed as the program would (not the
// follow-up command, which would wait for appended lines).
func openMember(t *testing.T, m *Model, downs int) {
	t.Helper()
	keys := []string{"1"}
	for range downs {
		keys = append(keys, "j")
	}
	for _, k := range keys {
		deliver(m, send(m, k))
	}
	t.Cleanup(m.member.close)
}

// deliver runs cmd and hands the model what it brings, as the program
// would (not the commands those messages return).
func deliver(m *Model, cmd tea.Cmd) {
	for _, msg := range run(cmd) {
		if msg != nil {
			m.Update(msg)
		}
	}
}

// TestGoldenMemberView: the member view of an llm teammate, its card over
// its transcript, at 80×24 and 120×36.
func TestGoldenMemberView(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {120, 36}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			m, _ := newTestModel(t, size[0], size[1])
			writeTranscript(t, m.dir, finanzasTranscript...)
			writeHistory(t, m.dir)
			m.Update(SnapshotMsg(llmSnapshot(t)))
			openMember(t, m, 1)
			golden.RequireEqual(t, m.View().Content)
		})
	}
}

// TestMemberViewShowsTheTranscriptSafely: enter opens the member under the
// roster's cursor with its card and transcript; what the model wrote
// reaches the screen without its escape sequences.
func TestMemberViewShowsTheTranscriptSafely(t *testing.T) {
	m, _ := newTestModel(t, 120, 36)
	writeTranscript(t, m.dir, finanzasTranscript...)
	writeHistory(t, m.dir)
	m.Update(SnapshotMsg(llmSnapshot(t)))
	openMember(t, m, 1)
	raw := m.View().Content
	screen := ansi.Strip(raw)
	for _, want := range []string{
		"Member finanzas", "llm · openai qwen2.5-coder:7b", "moves", "09:12:20 ◐ awaiting approval · waiting for approval of pl-111111111111", "running bash: go test ./...", "↑12.3k ↓4.1k $0.10",
		"transcript members/finanzas.transcript.jsonl",
		`tool_call #1 bash {"command":"ls invoices/"}`, "ERROR → refused: write_file needs an", "approved plan (submit_plan first)", "?[31mred?[0m",
	} {
		if !strings.Contains(screen, want) {
			t.Errorf("the member view lacks %q:\n%s", want, screen)
		}
	}
	if strings.Contains(raw, "\x1b[31m") {
		t.Error("an escape sequence from the transcript reached the screen")
	}
}

// TestMemberViewKeys: moving the roster's cursor shows the next member (an
// exec member's log), page up scrolls the feed, esc and tab close the view.
func TestMemberViewKeys(t *testing.T) {
	m, _ := newTestModel(t, 120, 36)
	writeTranscript(t, m.dir, finanzasTranscript...)
	m.Update(SnapshotMsg(llmSnapshot(t)))
	openMember(t, m, 1)
	screen := func() string { return ansi.Strip(m.View().Content) }

	send(m, "pgup")
	if !strings.Contains(screen(), "(scrolled: pgdn to follow)") {
		t.Errorf("pgup did not scroll the transcript:\n%s", screen())
	}
	send(m, "pgdn")
	if strings.Contains(screen(), "(scrolled") {
		t.Errorf("pgdn did not follow the newest again:\n%s", screen())
	}

	// data runs as a script member here: its feed is its log.
	logPath := filepath.Join(m.dir, "members", "data.log")
	if err := os.WriteFile(logPath, []byte("data: indexing records\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, msg := range run(send(m, "j")) {
		if msg != nil {
			m.Update(msg)
		}
	}
	if s := screen(); !strings.Contains(s, "Member data") || !strings.Contains(s, "log members/data.log") || !strings.Contains(s, "data: indexing records") {
		t.Errorf("moving down did not show data and its log:\n%s", s)
	}
	if strings.Contains(screen(), "ls invoices/") {
		t.Error("finanzas's transcript is still on data's view")
	}

	send(m, "l")
	if s := screen(); strings.Contains(s, "role ") || !strings.Contains(s, "(l: the card)") || !strings.Contains(s, "data: indexing records") {
		t.Errorf("l did not give the log the whole view:\n%s", s)
	}
	send(m, "esc") // esc gives the card back first
	if s := screen(); !strings.Contains(s, "counts ") || m.focus != paneRoster {
		t.Errorf("esc did not bring the card back:\n%s", s)
	}
	send(m, "enter")
	if s := screen(); !strings.Contains(s, "(l: the card)") {
		t.Errorf("enter did not give the log the whole view:\n%s", s)
	}
	send(m, "l")
	if s := screen(); !strings.Contains(s, "counts ") {
		t.Errorf("l again did not bring the card back:\n%s", s)
	}

	send(m, "esc") // back to the pane the roster was entered from
	if s := screen(); strings.Contains(s, "Member data") || !strings.Contains(s, "2 Requests") || m.focus != paneRequests {
		t.Errorf("esc did not close the member view:\n%s", s)
	}
	send(m, "3")
	deliver(m, send(m, "1"))
	if s := screen(); !strings.Contains(s, "Member data") {
		t.Errorf("the roster did not show its member's card again:\n%s", s)
	}
	send(m, "tab")
	if s := screen(); strings.Contains(s, "Member ") || m.focus != paneRequests {
		t.Errorf("tab did not close the member view and focus the requests:\n%s", s)
	}
}

// TestMemberViewDropsAReplacedFeed: the feed of a member the cursor has
// left does not reach the view of the next one, and its follower is
// closed.
func TestMemberViewDropsAReplacedFeed(t *testing.T) {
	m, _ := newTestModel(t, 120, 36)
	writeTranscript(t, m.dir, finanzasTranscript...)
	m.Update(SnapshotMsg(llmSnapshot(t)))
	send(m, "1")
	stale := run(send(m, "j")) // finanzas's feed, read but not yet delivered
	fresh := run(send(m, "j")) // the cursor moves on to data
	for _, msg := range fresh {
		if msg != nil {
			m.Update(msg)
		}
	}
	t.Cleanup(m.member.close)
	var closed bool
	for _, msg := range stale {
		if o, ok := msg.(tailOpenedMsg); ok {
			_, cmd := m.Update(o)
			run(cmd) // closes the stale follower
			closed = o.f != nil
		}
	}
	if !closed {
		t.Fatal("finanzas's feed was never opened")
	}
	if s := ansi.Strip(m.View().Content); strings.Contains(s, "ls invoices/") || !strings.Contains(s, "Member data") {
		t.Errorf("a replaced feed reached the view:\n%s", s)
	}
}

// TestMemberViewFollowsTheTranscriptLive: in a running program, what an
// llm member appends to its transcript appears in the open member view
// (real fsnotify, no polling).
func TestMemberViewFollowsTheTranscriptLive(t *testing.T) {
	dir := t.TempDir()
	path := writeTranscript(t, dir, finanzasTranscript[:2]...)
	st := NewStyles(false, true)
	tm := probed(t, New(Options{Dir: dir, Styles: &st, Footer: "test", Actions: dirActions(t, dir)}))
	t.Cleanup(func() { tm.Quit() })
	tm.Send(SnapshotMsg(llmSnapshot(t)))
	waitScreen(t, tm, "finanzas")
	for _, k := range []string{"1", "j", "enter"} {
		pressKey(tm, k)
	}
	waitScreen(t, tm, "I will list the invoices first.")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(entry(1, `"kind":"message","conv":"main","text":"a note from the lead arrived while working"`)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	waitScreen(t, tm, "a note from the lead arrived while working")
	inLoop(t, tm, func(m *Model) { m.member.close() }) // before the program quits: its watch goes
}

// inotifyWatches counts this process's inotify instances.
func inotifyWatches(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	n := 0
	for _, fd := range fds {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && target == "anon_inode:inotify" {
			n++
		}
	}
	return n
}

// TestMemberViewLeavesNoWatch: opening, moving through and closing member
// views many times, in every way the view closes, leaves no inotify watch
// behind (the kernel allows a user only 128 by default).
func TestMemberViewLeavesNoWatch(t *testing.T) {
	m, _ := newTestModel(t, 120, 36)
	writeTranscript(t, m.dir, finanzasTranscript...)
	m.Update(SnapshotMsg(llmSnapshot(t)))
	before := inotifyWatches(t)
	for range 40 {
		send(m, "1")
		deliver(m, send(m, "j"))   // finanzas: a follower
		deliver(m, send(m, "j"))   // data: finanzas's closes, data's opens
		send(m, "esc")             // closed by a key
		deliver(m, send(m, "1"))   // opened again
		send(m, "l")               // whole
		send(m, "2")               // closed by moving the focus
		stale := run(send(m, "1")) // opened, its feed still on its way…
		send(m, "esc")             // …when the view closes
		for _, msg := range stale {
			if msg != nil {
				m.Update(msg) // the late follower is closed on arrival
			}
		}
	}
	if after := inotifyWatches(t); after != before {
		t.Fatalf("%d inotify watches before, %d after 40 rounds of member views", before, after)
	}
}

// TestAgentTextNeverReachesTheTerminalRaw: an escape sequence an agent
// wrote, in its activity, its crash error, a plan, a message, a call's
// error or its transcript, reaches no pane as a control sequence.
func TestAgentTextNeverReachesTheTerminalRaw(t *testing.T) {
	const evil = "\x1b]0;pwned\x07\x1b[2J"
	m, _ := newTestModel(t, 120, 36)
	writeTranscript(t, m.dir, entry(0, `"kind":"model","text":"clear \u001b[2J the screen"`))
	snap := llmSnapshot(t)
	snap.Members[1].Record.Activity = "working " + evil
	snap.Members[3].Record.Error = "exit " + evil
	snap.Requests[0].Plan = "plan " + evil
	snap.Messages[0].Msg.Content = "hello " + evil
	snap.Chains.At(1).Rows[0].Call.ErrorMessage = "denied " + evil
	m.Update(SnapshotMsg(snap))
	var screens []string
	look := func() { screens = append(screens, m.View().Content) }
	look()              // roster and the pending plan's details
	openMember(t, m, 1) // finanzas: activity and transcript
	look()
	send(m, "3", "j", "j") // the DENIED call's details
	look()
	send(m, "4") // the messages
	look()
	openMember(t, m, 3) // auditor: its crash error
	look()
	for i, s := range screens {
		for _, bad := range []string{"\x1b]0;", "\x07", "\x1b[2J"} {
			if strings.Contains(s, bad) {
				t.Errorf("screen %d holds %q from an agent:\n%s", i, bad, ansi.Strip(s))
			}
		}
	}
	if all := ansi.Strip(strings.Join(screens, "\n")); !strings.Contains(all, "?]0;pwned??[2J") || !strings.Contains(all, "clear ?[2J the screen") {
		t.Errorf("the agent's text is not shown with its control characters marked:\n%s", all)
	}
}

// TestCrashedRowEndsWithTheLastLogLine: a crashed member's roster row ends
// with the last line it wrote on stderr, and its member view has both the
// exit status and that line.
func TestCrashedRowEndsWithTheLastLogLine(t *testing.T) {
	m, _ := newTestModel(t, 120, 36)
	snap := busySnapshot(t)
	snap.Members[3].Record.LastLog = "panic: ledger locked"
	m.Update(SnapshotMsg(snap))
	screen := ansi.Strip(m.View().Content)
	if !strings.Contains(screen, "crashed · panic: ledger locked") {
		t.Errorf("the crashed row does not end with the last log line:\n%s", screen)
	}
	openMember(t, m, 3)
	screen = ansi.Strip(m.View().Content)
	for _, want := range []string{"process exited: exit status 3", "last log line: panic: ledger locked"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the member view lacks %q:\n%s", want, screen)
		}
	}
}

// fakeActions stand for another kind of team's actions (a Claude Code
// team's).
type fakeActions struct{}

func (fakeActions) Approve(string) (string, error)        { return "", nil }
func (fakeActions) Reject(string, string) (string, error) { return "", nil }
func (fakeActions) Shutdown(string) (string, error)       { return "", nil }
func (fakeActions) Send(string, string) (string, error)   { return "", nil }
func (fakeActions) Broadcast(string) (string, error)      { return "", nil }

// TestMemberViewOfATeamHuddleDoesNotRun: a member of a team that is not a
// huddle team directory has no log huddle keeps; the view says so and
// reads no file.
func TestMemberViewOfATeamHuddleDoesNotRun(t *testing.T) {
	st := NewStyles(false, true)
	m := New(Options{Dir: t.TempDir(), Styles: &st, Now: (&testClock{now: t0}).Now, Actions: fakeActions{}, NoFeed: "huddle keeps no log of a member it does not run"})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 36})
	writeTranscript(t, m.dir, finanzasTranscript...) // there, but not this team's
	m.Update(SnapshotMsg(llmSnapshot(t)))
	openMember(t, m, 1)
	screen := ansi.Strip(m.View().Content)
	if !strings.Contains(screen, "huddle keeps no log of a member it does not run") || strings.Contains(screen, "ls invoices/") {
		t.Errorf("the member view of another kind of team:\n%s", screen)
	}
}

// deadLetters are two refusals: a forged plan answer reservas sent
// finanzas, and a line auditor wrote that is not an action.
func deadLetters() []team.DeadLetter {
	return []team.DeadLetter{
		{At: t0.Add(-20 * time.Second), Source: "inbox/finanzas.jsonl", Member: "finanzas", By: "reservas", MessageID: "m-forged", Type: "plan_approval_response",
			Offset: 1234, Reason: "only the lead answers a plan request: reservas is not the lead", Raw: `{"id":"m-forged","type":"plan_approval_response","from":"reservas","to":"finanzas","request_id":"pl-5f1c9a2b7e31","approve":true}`},
		{At: t0.Add(-5 * time.Second), Source: "exec:auditor", Member: "auditor", By: "auditor", Type: "", Offset: 77,
			Reason: "auditor wrote a line that is not a JSON action: invalid character 'h' looking for beginning of value", Raw: "hello from the auditor"},
	}
}

// TestGoldenDeadLetters: the dead letters pane with the forged answer's
// details, at 80×24 and 120×36.
func TestGoldenDeadLetters(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {120, 36}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			m, _ := newTestModel(t, size[0], size[1])
			snap := busySnapshot(t)
			snap.DeadLetters = deadLetters()
			m.Update(SnapshotMsg(snap))
			send(m, "5", "j")
			golden.RequireEqual(t, m.View().Content)
		})
	}
}

// TestDeadLettersLeadSomewhere: the pane lists the newest first with who
// caused it, the details say why and what; m and s act on who caused it;
// the member view counts what it caused.
func TestDeadLettersLeadSomewhere(t *testing.T) {
	m, _ := newTestModel(t, 120, 36)
	snap := busySnapshot(t)
	snap.DeadLetters = deadLetters()
	m.Update(SnapshotMsg(snap))
	send(m, "5")
	screen := ansi.Strip(m.View().Content)
	if i, j := strings.Index(screen, "auditor wrote a line"), strings.Index(screen, "reservas → finanzas"); i < 0 || j < 0 || i > j {
		t.Errorf("the pane does not list the newest first with who caused it:\n%s", screen)
	}
	send(m, "j")
	screen = ansi.Strip(m.View().Content)
	for _, want := range []string{"caused by    reservas", "inbox/finanzas.jsonl at offset 1234", "plan_approval_response m-forged", "what was refused"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the details lack %q:\n%s", want, screen)
		}
	}
	if got := m.actedOn(); got != "reservas" {
		t.Errorf("m and s act on %q, want reservas, who caused it", got)
	}
	send(m, "1")
	openMember(t, m, 0)
	if s := ansi.Strip(m.View().Content); !strings.Contains(s, "refused 1 dead letter (5) · last: only the lead answers") {
		t.Errorf("reservas's member view does not count the dead letter it caused:\n%s", s)
	}
}

// TestMemberViewOfAMissingMembersDirectory: a member's log under a members/
// that does not exist cannot be followed; the card says why, and a stale
// answer of that kind (the cursor moved on before it came) is dropped
// without a follower to close. It crashed the UI: a nil follower in the
// message read as one.
func TestMemberViewOfAMissingMembersDirectory(t *testing.T) {
	m, _ := newTestModel(t, 120, 36) // its directory has no members/
	snap := busySnapshot(t)
	for i := range snap.Members[:2] {
		snap.Members[i].Spec.Runtime = team.RuntimeSpec{Kind: team.RuntimeExec, Command: []string{"./agent"}}
	}
	m.Update(SnapshotMsg(snap))
	stale := run(send(m, "1")) // reservas's feed, not yet delivered
	deliver(m, send(m, "j"))   // finanzas's, delivered
	for _, msg := range stale {
		if msg != nil {
			m.Update(msg) // dropped: the view is on finanzas
		}
	}
	s := ansi.Strip(m.View().Content)
	if !strings.Contains(s, "Member finanzas") || !strings.Contains(s, "members") {
		t.Fatalf("the card of a member whose log cannot be followed:\n%s", s)
	}
	if m.member.tail != nil {
		t.Fatalf("a follower is kept for a log that could not be followed: %#v", m.member.tail)
	}
}

// TestScriptMemberSaysItHasNoLog: the card of a member huddle keeps no log
// of says why, instead of waiting for one.
func TestScriptMemberSaysItHasNoLog(t *testing.T) {
	m, _ := newTestModel(t, 120, 36)
	m.Update(SnapshotMsg(busySnapshot(t))) // data is a script member
	deliver(m, send(m, "1", "j", "j"))
	s := ansi.Strip(m.View().Content)
	if !strings.Contains(s, "Member data") || !strings.Contains(s, "a script member writes no log: its steps are in team.json") || strings.Contains(s, "nothing in its log yet") {
		t.Fatalf("a script member's card:\n%s", s)
	}
}

// TestTranscriptSaysTheModelIsAwaited: while an llm member's loop waits on
// its model, the transcript ends with how long it has waited, from the
// record's activity_since; it goes when the model answered.
func TestTranscriptSaysTheModelIsAwaited(t *testing.T) {
	m, clock := newTestModel(t, 120, 36)
	writeTranscript(t, m.dir, finanzasTranscript...)
	snap := llmSnapshot(t)
	fin := &snap.Members[1].Record
	fin.Status, fin.Activity, fin.ActivitySince = protocol.MemberWorking, "thinking", t0.Add(-2*time.Second)
	m.Update(SnapshotMsg(snap))
	openMember(t, m, 1)
	clock.Advance(2 * time.Second)
	m.Update(tickMsg(clock.Now()))
	if s := ansi.Strip(m.View().Content); !strings.Contains(s, "waiting for the model, 4s") {
		t.Fatalf("no wait on the model under the transcript:\n%s", s)
	}
	answered := llmSnapshot(t)
	answered.Members[1].Record.Activity = "running bash: go test ./..."
	m.Update(SnapshotMsg(answered))
	if s := ansi.Strip(m.View().Content); strings.Contains(s, "waiting for the model") {
		t.Fatalf("still waiting after the model answered:\n%s", s)
	}
}
