package tui

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"huddle/internal/testkit"
	"huddle/internal/testkit/dirlead"
	"huddle/internal/testkit/dirrecords"
	"huddle/internal/testkit/files"
	"huddle/protocol"
	"huddle/team"
	"huddle/team/supervisor"
)

// startDemo runs the demo team in a fresh directory and opens a teatest
// program on it, wired as production wires it: supervisor.Start, New, Connect.
func startDemo(t *testing.T) (dir string, tm *teatest.TestModel) {
	t.Helper()
	dir = t.TempDir()
	if err := team.Init(dir); err != nil {
		t.Fatal(err)
	}
	return dir, startTeamUI(t, dir, Options{Actions: dirActions(t, dir)})
}

// startTeamUI runs the team in dir and opens a teatest program on it with
// opts (its directory, styles and footer set here), wired as production
// wires it. The demo's exec member runs `huddle agent echo`; this test
// binary is not huddle, so that member crashes, which the flows do not
// mind.
func startTeamUI(t *testing.T, dir string, opts Options) *teatest.TestModel {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	rt, err := supervisor.Start(ctx, files.Open(t, dir), dir, supervisor.Options{Executable: "/nonexistent/huddle"})
	if err != nil {
		t.Fatal(err)
	}
	st := NewStyles(false, true)
	opts.Dir, opts.Styles, opts.Footer = dir, &st, "test"
	tm := probed(t, New(opts))
	stop, err := Connect(ctx, files.Open(t, dir), tm.Send)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		tm.Quit()
		cancel()
		stop()
		rt.Wait()
	})
	return tm
}

// probes are the screen probes of the programs probed started.
var probes sync.Map // *teatest.TestModel → *screenProbe

// probed starts a 120×36 test program on m whose screen waitScreen reads
// from what the model last drew: the renderer's byte stream carries only
// the cells that changed, so a text on screen may never be in it whole.
func probed(t *testing.T, m tea.Model) *teatest.TestModel {
	t.Helper()
	p := &screenProbe{Model: m}
	tm := teatest.NewTestModel(t, p, teatest.WithInitialTermSize(120, 36))
	probes.Store(tm, p)
	t.Cleanup(func() {
		probes.Delete(tm)
		// As Run does once the program stops: the member view's follower
		// would keep an inotify instance for the rest of the test binary.
		tm.Quit()
		tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
		if m, ok := m.(interface{ Close() }); ok {
			m.Close()
		}
	})
	return tm
}

// finalModel is the program's model once it has quit.
func finalModel(t *testing.T, tm *teatest.TestModel) *Model {
	t.Helper()
	m := tm.FinalModel(t, teatest.WithFinalTimeout(10*time.Second))
	if p, ok := m.(*screenProbe); ok {
		m = p.Model
	}
	return m.(*Model)
}

// waitScreen waits until the program's screen shows text.
func waitScreen(t *testing.T, tm *teatest.TestModel, text string) {
	t.Helper()
	if p, ok := probes.Load(tm); ok {
		p.(*screenProbe).waitFor(t, fmt.Sprintf("%q on screen", text), func(s string) bool { return strings.Contains(s, text) })
		return
	}
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte(text)) },
		teatest.WithDuration(15*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
}

func pendingFrom(dir, from string) *protocol.Request {
	rs, _ := dirrecords.ListRequests(dir)
	for _, r := range rs {
		if r.From == from && r.Kind == protocol.KindPlan && r.Status == protocol.RequestPending {
			return &r
		}
	}
	return nil
}

func pressKey(tm *teatest.TestModel, s string) { tm.Send(press(s)) }

// selectRequest moves the cursor onto the pending plan of from, as a person
// would (a moved cursor needs no grace period).
func selectRequest(t *testing.T, tm *teatest.TestModel, dir, from string) *protocol.Request {
	t.Helper()
	var r *protocol.Request
	testkit.WaitFor(t, 15*time.Second, "a plan from "+from, func() bool { r = pendingFrom(dir, from); return r != nil })
	waitScreen(t, tm, r.ID)
	pressKey(tm, "2")
	for range 4 {
		pressKey(tm, "k")
	}
	// Pending plans are listed oldest first: step down to this one.
	rs, _ := dirrecords.ListRequests(dir)
	for _, x := range rs {
		if x.ID == r.ID {
			break
		}
		pressKey(tm, "j")
	}
	// a and r decide it once the footer offers it and its grace is over.
	waitScreenFunc(t, tm, "the footer offering "+r.ID+" past its grace", func(s string) bool {
		return strings.Contains(s, "a approve "+from+" "+r.ID) && !strings.Contains(s, "just arrived or changed")
	})
	return r
}

// waitScreenFunc waits until the program's screen satisfies ok, and
// returns it.
func waitScreenFunc(t *testing.T, tm *teatest.TestModel, what string, ok func(screen string) bool) string {
	t.Helper()
	p, found := probes.Load(tm)
	if !found {
		t.Fatal("waitScreenFunc needs a program started by probed")
	}
	return p.(*screenProbe).waitFor(t, what, ok)
}

func TestFlowApproveFromTheUI(t *testing.T) {
	dir, tm := startDemo(t)
	r := selectRequest(t, tm, dir, "reservas")
	pressKey(tm, "a")
	testkit.WaitFor(t, 15*time.Second, "the plan approved on disk", func() bool {
		got, _ := dirrecords.LoadRequest(dir, r.ID)
		return got != nil && got.Status == protocol.RequestApproved && got.ResolvedBy == protocol.Lead
	})
	testkit.WaitFor(t, 15*time.Second, "reservas working", func() bool {
		m, _ := dirrecords.LoadMember(dir, "reservas")
		return m != nil && m.Status == protocol.MemberWorking
	})
	waitScreen(t, tm, "may go on")
	tm.Send(tea.QuitMsg{})
	final := finalModel(t, tm)
	if !strings.Contains(final.View().Content, "approved "+r.ID) {
		t.Fatalf("the screen does not say it was approved:\n%s", final.View().Content)
	}
}

func TestFlowRejectThenRevisedPlan(t *testing.T) {
	dir, tm := startDemo(t)
	r := selectRequest(t, tm, dir, "reservas")
	pressKey(tm, "r")
	waitScreen(t, tm, "feedback for reservas")
	tm.Type("room 2 please")
	pressKey(tm, "enter")
	testkit.WaitFor(t, 15*time.Second, "the plan rejected on disk", func() bool {
		got, _ := dirrecords.LoadRequest(dir, r.ID)
		return got != nil && got.Status == protocol.RequestRejected && got.Feedback == "room 2 please"
	})
	var revised *protocol.Request
	testkit.WaitFor(t, 15*time.Second, "a revised plan", func() bool {
		revised = pendingFrom(dir, "reservas")
		return revised != nil && strings.Contains(revised.Plan, "room 2 please")
	})
	waitScreen(t, tm, revised.ID)
}

func TestFlowDialogClosesWhenTheCLIApproves(t *testing.T) {
	dir, tm := startDemo(t)
	r := selectRequest(t, tm, dir, "reservas")
	pressKey(tm, "r")
	waitScreen(t, tm, "feedback for reservas")
	tm.Type("hm")
	// Meanwhile, from another terminal: huddle approve ID.
	if _, err := dirlead.Decide(dir, r.ID, protocol.EventApprove, "", protocol.Lead); err != nil {
		t.Fatal(err)
	}
	waitScreen(t, tm, "resolved by lead")
	tm.Send(tea.QuitMsg{})
	final := finalModel(t, tm)
	if final.dialog != nil {
		t.Fatal("the dialog is still open")
	}
	if got, _ := dirrecords.LoadRequest(dir, r.ID); got.Status != protocol.RequestApproved {
		t.Fatalf("record %s", got.Status)
	}
}

// TestFlowMessageFromTheRequestsPane: m on a pending plan messages the
// plan's teammate, not the roster's hidden cursor.
func TestFlowMessageFromTheRequestsPane(t *testing.T) {
	dir, tm := startDemo(t)
	selectRequest(t, tm, dir, "finanzas") // the roster's cursor stays on reservas
	waitScreen(t, tm, "m message finanzas")
	pressKey(tm, "m")
	waitScreen(t, tm, "message to finanzas")
	tm.Type("move the reserve on Monday")
	pressKey(tm, "enter")
	testkit.WaitFor(t, 15*time.Second, "the message in finanzas's inbox", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "inbox", "finanzas.jsonl"))
		return bytes.Contains(b, []byte("move the reserve on Monday"))
	})
	if b, _ := os.ReadFile(filepath.Join(dir, "inbox", "reservas.jsonl")); bytes.Contains(b, []byte("move the reserve on Monday")) {
		t.Fatal("the message went to the roster's member")
	}
}

// TestFlowSelectionKeptAcrossArrivals: a message selected in a running
// team stays selected while the team's traffic goes on.
func TestFlowSelectionKeptAcrossArrivals(t *testing.T) {
	dir, tm := startDemo(t)
	for _, from := range []string{"reservas", "finanzas"} { // the team goes to work
		var r *protocol.Request
		testkit.WaitFor(t, 15*time.Second, "a plan from "+from, func() bool { r = pendingFrom(dir, from); return r != nil })
		if _, err := dirlead.Decide(dir, r.ID, protocol.EventApprove, "", protocol.Lead); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(15 * time.Second)
	for enough := false; !enough; {
		inLoop(t, tm, func(m *Model) { enough = len(m.snap.Messages) >= 3 })
		if time.Now().After(deadline) {
			t.Fatal("the team sent no messages")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A call: chains are listed newest first, so new ones land above it.
	for enough := false; !enough; {
		inLoop(t, tm, func(m *Model) { enough = m.snap.Chains.Len() >= 1 })
		if time.Now().After(deadline) {
			t.Fatal("the team made no calls")
		}
		time.Sleep(20 * time.Millisecond)
	}
	pressKey(tm, "3")
	pressKey(tm, "j") // the newest chain's first call
	var call string
	var chains int
	inLoop(t, tm, func(m *Model) {
		if c := m.traces.selectedCall(); c != nil {
			call = c.RequestID
		}
		chains = m.snap.Chains.Len()
	})
	pressKey(tm, "4")
	pressKey(tm, "k") // off the newest: no longer following
	var id string
	var n int
	inLoop(t, tm, func(m *Model) {
		if mv := m.messages.selectedMessage(); mv != nil {
			id = mv.Msg.ID
		}
		n = len(m.snap.Messages)
	})
	if id == "" || call == "" {
		t.Fatalf("nothing selected: message %q, call %q", id, call)
	}
	deadline = time.Now().Add(15 * time.Second)
	for more := false; !more; {
		inLoop(t, tm, func(m *Model) { more = len(m.snap.Messages) > n+1 && m.snap.Chains.Len() > chains })
		if time.Now().After(deadline) {
			t.Fatal("no new messages and calls arrived")
		}
		time.Sleep(20 * time.Millisecond)
	}
	inLoop(t, tm, func(m *Model) {
		if mv := m.messages.selectedMessage(); mv == nil || mv.Msg.ID != id {
			t.Errorf("the selected message moved from %s to %+v as messages arrived", id, mv)
		}
		if c := m.traces.selectedCall(); c == nil || c.RequestID != call {
			t.Errorf("the selected call moved from %s to %+v as calls arrived", call, c)
		}
	})
}

// TestFlowQuitAsksWhileTheTeamWorks: q in a UI that runs the team asks
// first while a plan waits; n stays, y quits.
func TestFlowQuitAsksWhileTheTeamWorks(t *testing.T) {
	dir := t.TempDir()
	if err := team.Init(dir); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rt, err := supervisor.Start(ctx, files.Open(t, dir), dir, supervisor.Options{Executable: "/nonexistent/huddle"})
	if err != nil {
		t.Fatal(err)
	}
	st := NewStyles(false, true)
	tm := probed(t, New(Options{Dir: dir, Styles: &st, Footer: "test", RunsTeam: true, Actions: dirActions(t, dir)}))
	stop, err := Connect(ctx, files.Open(t, dir), tm.Send)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); stop(); rt.Wait() })
	testkit.WaitFor(t, 15*time.Second, "a pending plan", func() bool { return pendingFrom(dir, "reservas") != nil })
	deadline := time.Now().Add(15 * time.Second)
	for work := ""; work == ""; { // the UI has seen the work going on
		inLoop(t, tm, func(m *Model) { work = m.workGoingOn() })
		if time.Now().After(deadline) {
			t.Fatal("the UI never saw the team at work")
		}
		time.Sleep(10 * time.Millisecond)
	}
	pressKey(tm, "q")
	waitScreen(t, tm, "Stop the team?")
	pressKey(tm, "n")
	inLoop(t, tm, func(m *Model) {
		if m.dialog != nil {
			t.Error("n did not close the question")
		}
	})
	pressKey(tm, "q")
	waitScreen(t, tm, "Stop the team?")
	pressKey(tm, "y")
	tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
}

// TestQuitLeavesNoWatch: a program that quits with a member view open
// leaves no inotify instance behind once Close ran (the kernel allows a
// user 128): the demo started, a member's view opened, the program quit,
// and the process holds as many instances as before.
func TestQuitLeavesNoWatch(t *testing.T) {
	before := inotifyInstances(t)
	for range 3 {
		t.Run("session", func(t *testing.T) {
			dir, tm := startDemo(t)
			testkit.WaitFor(t, 15*time.Second, "auditor crashed", func() bool {
				rec, err := dirrecords.LoadMember(dir, "auditor")
				return err == nil && rec.Status == protocol.MemberCrashed
			})
			waitScreen(t, tm, "crashed")
			for _, k := range []string{"1", "j", "j", "j"} { // auditor, whose log the view follows
				pressKey(tm, k)
			}
			waitScreen(t, tm, "R restart auditor")
		})
	}
	if after := inotifyInstances(t); after != before {
		t.Fatalf("the process holds %d inotify instances after three sessions, %d before", after, before)
	}
}

// inotifyInstances counts the process's open inotify instances.
func inotifyInstances(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fd := range fds {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && l == "anon_inode:inotify" {
			n++
		}
	}
	return n
}
