package full

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"huddle/internal/testkit"
	"huddle/internal/testkit/natsteam"
	"huddle/protocol"
	"huddle/store"
	"huddle/store/natsurl"
	"huddle/store/storetest"
	"huddle/team"
	"huddle/team/view"
	"huddle/tui"
)

// TestAttachStoreApprovesAPlanWithTheKey: the UI wired as huddle attach
// --store wires it, on a team in an embedded NATS server: a member's plan
// put in the store by another handle reaches the UI pending, a approves
// it, the store holds the lead's decision and the member's inbox the
// answer, and the UI sees the request approved (through the store's
// watch) and says so. The waits in the middle are on the snapshots the UI
// was handed, not on the terminal's bytes: a redraw writes only the cells
// that changed, so a text need not appear whole in them.
func TestAttachStoreApprovesAPlanWithTheKey(t *testing.T) {
	url := natsteam.New(t, "")
	writer := natsteam.OpenCrew(t, url, true)
	ui := startStoreUI(t, url)
	tm, handed := ui.tm, ui.handed
	key := func(s string) { tm.Send(tea.KeyPressMsg{Code: []rune(s)[0], Text: s}) }
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		return bytes.Contains(b, []byte("attached to the store "+natsurl.Redact(url)))
	}, teatest.WithDuration(20*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
	handed("the team", func(s view.Snapshot) bool { return s.Team != nil && len(s.Members) == 2 && s.Store })

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := writer.PutMember(ctx, &protocol.Member{Name: "alice", Role: "test", Runtime: "script", Status: protocol.MemberAwaitingApproval, Activity: "waiting for approval", Since: time.Now()}); err != nil {
		t.Fatal(err)
	}
	const id = "pl-a77ac4ed0001"
	natsteam.Plan(t, writer, id, "alice")
	handed("the plan pending", func(s view.Snapshot) bool {
		return s.Pending == 1 && s.Requests[0].ID == id
	})

	key("2")
	key("k")
	// a acts once the footer offers it: past the grace of a plan that
	// just arrived.
	testkit.WaitFor(t, 20*time.Second, "the footer offering "+id, func() bool { return strings.Contains(ui.drawn.screen(), "a approve alice "+id) })
	key("a")
	testkit.WaitFor(t, 20*time.Second, "the decision in the store", func() bool {
		r, err := writer.Request(ctx, id)
		return err == nil && r.Status == protocol.RequestApproved && r.ResolvedBy == protocol.Lead
	})
	got := storetest.Drain(t, context.Background(), writer, "alice", 1)
	if got[0].Type != protocol.TypePlanApprovalResponse || got[0].RequestID != id || got[0].Approve == nil || !*got[0].Approve {
		t.Fatalf("alice's inbox holds %+v, want the approval of %s", got[0], id)
	}
	handed("the plan approved", func(s view.Snapshot) bool {
		return s.Pending == 0 && len(s.Requests) == 1 && s.Requests[0].Status == protocol.RequestApproved
	})

	// The key's own answer comes back to the UI after its writes, which
	// the waits above saw: wait for it to be drawn before quitting.
	testkit.WaitFor(t, 20*time.Second, "the approval said on screen", func() bool {
		return strings.Contains(ui.drawn.screen(), "approved "+id+": alice may go on")
	})
	screen := ui.finish()
	for _, want := range []string{"approved " + id + ": alice may go on", "no pending requests", "✓ " + id} { // the flash stands where the footer was
		if !strings.Contains(screen, want) {
			t.Fatalf("the screen lacks %q:\n%s", want, screen)
		}
	}
}

// TestAttachStoreMemberViewReadsTheStoresLog: the member view of the UI
// on a store shows a member's log as the store holds it (what the runtime
// on the member's machine copied there), and the lines appended after it
// opened, as they come.
func TestAttachStoreMemberViewReadsTheStoresLog(t *testing.T) {
	url := natsteam.New(t, "")
	writer := natsteam.OpenCrew(t, url, false)
	// alice an exec teammate, whose stderr a runtime copies to the store.
	withLog := natsteam.Crew
	withLog.Members = slices.Clone(natsteam.Crew.Members)
	withLog.Members[0].Runtime = team.RuntimeSpec{Kind: team.RuntimeExec, Command: []string{"./agent"}}
	b, _ := json.Marshal(withLog)
	natsteam.PutConfigs(t, writer, map[string]string{store.ConfigTeam: string(b)})
	ui := startStoreUI(t, url)
	tm := ui.tm
	ui.handed("the team", func(s view.Snapshot) bool { return s.Team != nil && len(s.Members) == 2 })
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := writer.AppendLog(ctx, "alice", store.LogStderr, [][]byte{[]byte("qz1 before\n")}); err != nil {
		t.Fatal(err)
	}
	seen := func(s string) {
		t.Helper()
		teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte(s)) },
			teatest.WithDuration(20*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
	}
	seen("alice") // the roster has its rows: enter opens the first
	tm.Send(tea.KeyPressMsg{Code: '1', Text: "1"})
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	seen("qz1")
	if err := writer.AppendLog(ctx, "alice", store.LogStderr, [][]byte{[]byte("qz2 after\n")}); err != nil {
		t.Fatal(err)
	}
	seen("qz2")
	screen := ui.finish()
	for _, want := range []string{"qz1 before", "qz2 after"} {
		if !strings.Contains(screen, want) {
			t.Fatalf("the member view lacks %q:\n%s", want, screen)
		}
	}
}

// storeUI is the UI of huddle attach --store in a teatest program, on its
// own connection to the store at url (as another machine's), with the
// last snapshot handed to it.
type storeUI struct {
	t       *testing.T
	tm      *teatest.TestModel
	drawn   *lastDrawn
	stop    func() error
	stopped bool
	mu      sync.Mutex
	last    view.Snapshot
}

func startStoreUI(t *testing.T, url string) *storeUI {
	t.Helper()
	opts := storeRunOptions(t.Context(), natsteam.Open(t, url), natsurl.Redact(url))
	st := tui.NewStyles(false, true)
	drawn := &lastDrawn{Model: tui.New(tui.Options{Styles: &st, Footer: opts.Footer, Actions: opts.Actions, Lines: opts.Lines})}
	u := &storeUI{t: t, drawn: drawn, tm: teatest.NewTestModel(t, drawn, teatest.WithInitialTermSize(120, 36))}
	// Each snapshot goes to the program, in order, before the test's keys.
	stop, err := tui.Connect(t.Context(), opts.Store, func(msg tea.Msg) {
		if s, ok := msg.(tui.SnapshotMsg); ok {
			u.mu.Lock()
			u.last = view.Snapshot(s)
			u.mu.Unlock()
		}
		u.tm.Send(msg)
	})
	if err != nil {
		t.Fatal(err)
	}
	u.stop = stop
	t.Cleanup(func() {
		if !u.stopped {
			u.tm.Quit()
			_ = stop()
		}
	})
	return u
}

// handed waits until the last snapshot handed to the UI meets cond.
func (u *storeUI) handed(what string, cond func(s view.Snapshot) bool) {
	u.t.Helper()
	testkit.WaitFor(u.t, 20*time.Second, what, func() bool {
		u.mu.Lock()
		defer u.mu.Unlock()
		return cond(u.last)
	})
}

// finish quits the UI, stops its feed and returns its final screen.
func (u *storeUI) finish() string {
	u.t.Helper()
	u.tm.Quit()
	final := u.tm.FinalModel(u.t, teatest.WithFinalTimeout(15*time.Second))
	if d, isDrawn := final.(*lastDrawn); isDrawn {
		final = d.Model
	}
	m, ok := final.(*tui.Model)
	u.stopped = true
	if err := u.stop(); err != nil {
		u.t.Error(err)
	}
	if !ok {
		u.t.Fatal("the final model is not the UI's")
	}
	return ansi.Strip(m.View().Content)
}

// TestAttachStoreShowsTheStoresMessagesAndUnread: the UI on a store
// attached after messages were sent starts with them in its Messages pane
// and with each member's unread count in the roster, and a message sent
// after it attached shows once, its member's count going up.
func TestAttachStoreShowsTheStoresMessagesAndUnread(t *testing.T) {
	url := natsteam.New(t, "")
	writer := natsteam.OpenCrew(t, url, true)
	tm := natsteam.Crew
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	send := func(to, text string) {
		t.Helper()
		if err := team.Send(ctx, writer, &tm, protocol.Lead, to, text); err != nil {
			t.Fatal(err)
		}
	}
	send("alice", "qm1 before")
	send("alice", "qm2 before")
	send("bob", "qm3 before")
	ui := startStoreUI(t, url)
	count := func(s view.Snapshot, text string) int {
		n := 0
		for _, mv := range s.Messages {
			if mv.Msg.Content == text {
				n++
			}
		}
		return n
	}
	unread := func(s view.Snapshot, name string) int {
		for _, mv := range s.Members {
			if mv.Record.Name == name {
				return mv.Unread
			}
		}
		return -1
	}
	ui.handed("the messages held and the counts", func(s view.Snapshot) bool {
		return count(s, "qm1 before") == 1 && count(s, "qm2 before") == 1 && count(s, "qm3 before") == 1 &&
			unread(s, "alice") == 2 && unread(s, "bob") == 1
	})
	send("bob", "qm4 after")
	ui.handed("the message sent after", func(s view.Snapshot) bool {
		return count(s, "qm4 after") == 1 && unread(s, "bob") == 2 && len(s.Messages) == 4
	})
	ui.tm.Send(tea.KeyPressMsg{Code: '4', Text: "4"})
	screen := ui.finish()
	for _, want := range []string{"✉2", "qm1 before", "qm2 before", "qm3 before", "qm4 after"} {
		if !strings.Contains(screen, want) {
			t.Fatalf("the screen lacks %q:\n%s", want, screen)
		}
	}
}
