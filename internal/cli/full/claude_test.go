package full

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"huddle/claudeteam"
	"huddle/internal/testkit"
	"huddle/internal/testkit/claudefix"
	"huddle/protocol"
	"huddle/tui"
)

// The UI on a Claude Code team, wired as `huddle claude attach` wires it:
// its roster and its pending plan show, a on the plan says why huddle does
// not answer it, s asks a member to shut down, and with the flag a and r
// answer a permission request.
func TestClaudeAttachShowsRosterAndPlan(t *testing.T) {
	root := t.TempDir()
	claudefix.Alpha(t, root)
	at := claudeteam.Stamp(time.Now())
	lead := claudeteam.InboxPath(root, "alpha", claudeteam.LeadName)
	b, _ := os.ReadFile(lead)
	var es []claudeteam.Entry
	_ = json.Unmarshal(b, &es)
	es = append(es, claudeteam.Entry{From: "alice", Text: claudefix.Text(map[string]any{"type": "permission_request", "request_id": "perm-2", "agent_id": "alice", "tool_name": "Edit", "description": "edit main.go"}), Timestamp: at})
	b, _ = json.MarshalIndent(es, "", "  ")
	if err := os.WriteFile(lead, b, 0o600); err != nil {
		t.Fatal(err)
	}

	opts := claudeRunOptions(root, "alpha", "", true)
	st := tui.NewStyles(false, true)
	drawn := &lastDrawn{Model: tui.New(tui.Options{Dir: root, Styles: &st, Footer: opts.Footer, Actions: opts.Actions, NoFeed: opts.NoFeed})}
	tm := teatest.NewTestModel(t, drawn, teatest.WithInitialTermSize(140, 40))
	stop, err := opts.Connect(t.Context(), tm.Send)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		tm.Quit()
		if err := stop(); err != nil {
			t.Error(err)
		}
	})
	// screen waits until the program has drawn every text; what it reads
	// is consumed, so each wait names all it needs of one stretch.
	screen := func(texts ...string) {
		t.Helper()
		teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
			for _, text := range texts {
				if !bytes.Contains(b, []byte(text)) {
					return false
				}
			}
			return true
		}, teatest.WithDuration(15*time.Second), teatest.WithCheckInterval(10*time.Millisecond))
	}
	key := func(s string) { tm.Send(tea.KeyPressMsg{Code: []rune(s)[0], Text: s}) }
	screen("claude code team alpha", "alice", "bob", "plan-1@alice", "perm-2", "no deadline")

	key("2")
	for range 4 {
		key("k") // to the oldest pending request, the plan; a moved cursor has no grace
	}
	key("a")
	screen("✗ " + planRefusal) // whole, on one line

	key("j") // perm-2, alice's pending permission request
	// r acts once the footer offers it: past the grace of a request that
	// just arrived.
	testkit.WaitFor(t, 15*time.Second, "the footer offering perm-2", func() bool { return strings.Contains(drawn.screen(), "a allow alice once") })
	key("r")
	screen("why alice may not")
	for _, r := range "not in main" {
		key(string(r))
	}
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	screen("denied") // "denied perm-2 for alice (as huddle:…)"
	testkit.WaitFor(t, 15*time.Second, "the denial in alice's inbox", func() bool {
		b, _ := os.ReadFile(claudeteam.InboxPath(root, "alpha", "alice"))
		return bytes.Contains(b, []byte(`\"request_id\":\"perm-2\"`)) && bytes.Contains(b, []byte("not in main")) && bytes.Contains(b, []byte(`answeredBy`))
	})

	key("1")
	key("j") // alice, after team-lead
	// s, m and b are not offered, and say why at once: Claude Code would
	// not act on what they wrote, and nothing is written.
	testkit.WaitFor(t, 15*time.Second, "alice's row acted on", func() bool { return strings.Contains(drawn.screen(), "next member") })
	if s := drawn.screen(); strings.Contains(s, "s shut down") || strings.Contains(s, "m message") || strings.Contains(s, "b broadcast") {
		t.Errorf("the footer offers what a Claude Code team refuses:\n%s", s)
	}
	key("s")
	testkit.WaitFor(t, 15*time.Second, "the shutdown refused on screen", func() bool {
		return strings.Contains(drawn.screen(), "✗ "+shutdownRefusal)
	})
	key("m")
	testkit.WaitFor(t, 15*time.Second, "the message refused on screen", func() bool {
		return strings.Contains(drawn.screen(), "✗ "+sendRefusal)
	})
	if b, _ := os.ReadFile(claudeteam.InboxPath(root, "alpha", "alice")); bytes.Contains(b, []byte("shutdown_request")) {
		t.Errorf("a shutdown_request reached alice's inbox: %s", b)
	}
}

// lastDrawn is a program's model that keeps the screen it last drew: the
// renderer's output carries only the cells that changed.
type lastDrawn struct {
	tea.Model
	mu   sync.Mutex
	last string
}

func (d *lastDrawn) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	m, cmd := d.Model.Update(msg)
	d.Model = m
	return d, cmd
}

func (d *lastDrawn) View() tea.View {
	v := d.Model.View()
	d.mu.Lock()
	d.last = v.Content
	d.mu.Unlock()
	return v
}

func (d *lastDrawn) screen() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return ansi.Strip(d.last)
}

// Without --experimental-permissions, a and r refuse a permission request.
func TestClaudeActionsWithoutPermissions(t *testing.T) {
	root := t.TempDir()
	claudefix.Alpha(t, root)
	a := claudeRunOptions(root, "alpha", "", false).Actions.(claudeActions)
	plan := &protocol.Request{ID: "plan-1@alice", Kind: protocol.KindPlan}
	perm := &protocol.Request{ID: "perm-9", Kind: protocol.KindPermission}
	if why := a.Refuses(plan); why != planRefusal || len(why) > 76 {
		t.Errorf("plan: %q", why)
	}
	if why := a.Refuses(perm); !strings.Contains(why, "--experimental-permissions") {
		t.Errorf("permission: %q", why)
	}
	if _, err := a.Approve("perm-9"); err == nil {
		t.Error("approved without the flag")
	}
	if _, err := a.Send("alice", "hi"); err == nil {
		t.Error("sent a message to a Claude Code team")
	}
	if b, _ := os.ReadFile(claudeteam.InboxPath(root, "alpha", "alice")); b != nil {
		t.Errorf("alice's inbox written: %s", b)
	}
}

// `huddle claude attach` through tui.Run itself: the observer's first fold
// is handed to a program that is not running yet, without a deadlock.
func TestClaudeAttachRunsTheUI(t *testing.T) {
	root := t.TempDir()
	claudefix.Alpha(t, root)
	in, inW := io.Pipe()
	defer inW.Close()
	var out testkit.Buffer
	ctx, cancel := context.WithCancel(t.Context())
	opts := claudeRunOptions(root, "alpha", "", false)
	opts.Input, opts.Output = in, &out
	done := make(chan error, 1)
	go func() { done <- tui.Run(ctx, opts) }()
	// Without a terminal the program learns no size and draws no panes;
	// the window title says the first fold reached it.
	testkit.WaitFor(t, 15*time.Second, "the team's snapshot in the program", func() bool {
		return strings.Contains(out.String(), "huddle (1 pending)")
	})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("tui.Run: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("tui.Run did not return after its context ended")
	}
}
