package tui

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/teatest/v2"

	"huddle/internal/testkit"
	"huddle/internal/testkit/dirrecords"
	"huddle/protocol"
)

// TestFlowEachPaneDecidesWhatItDraws: in the running demo, with reservas's
// and finanzas's plans both pending, a person moves to finanzas's in each
// pane and presses a. Where the pane draws finanzas's plan (the Requests
// row's details, the roster's member card, the card with its log), the
// footer names it and a approves that plan, and reservas's stays pending;
// where the pane draws no request (traces, messages), a says so and decides
// nothing.
func TestFlowEachPaneDecidesWhatItDraws(t *testing.T) {
	cases := []struct {
		name    string
		keys    []string // nil: select finanzas's plan in Requests
		decides bool
		shows   string // what the screen shows once the keys are taken
	}{
		{"requests", nil, true, "[2 Requests"},
		{"roster", []string{"1", "j"}, true, "Member finanzas"},
		{"member view with its log", []string{"1", "j", "l"}, true, "(l: the card)"},
		{"traces", []string{"3"}, false, "[3 Traces"},
		{"messages", []string{"4"}, false, "[4 Messages"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, tm := startDemo(t)
			var res, fin *protocol.Request
			testkit.WaitFor(t, 15*time.Second, "both plans pending", func() bool {
				res, fin = pendingFrom(dir, "reservas"), pendingFrom(dir, "finanzas")
				return res != nil && fin != nil
			})
			waitScreen(t, tm, fin.ID)
			if tc.keys == nil {
				selectRequest(t, tm, dir, "finanzas")
			}
			for _, k := range tc.keys {
				pressKey(tm, k)
			}
			waitScreen(t, tm, tc.shows)
			if !tc.decides {
				pressKey(tm, "a")
				waitScreen(t, tm, "this pane shows no request")
				for _, r := range []*protocol.Request{res, fin} {
					if got, _ := dirrecords.LoadRequest(dir, r.ID); got == nil || got.Status != protocol.RequestPending {
						t.Errorf("a on %s decided %s: %+v", tc.name, r.ID, got)
					}
				}
				return
			}
			waitDecidable(t, tm, fin.ID)
			screen := waitScreenFunc(t, tm, "finanzas's plan drawn and named in the footer", func(s string) bool {
				return strings.Contains(s, "a approve finanzas "+fin.ID)
			})
			if got := readScreen(screen); !slices.Equal(got.drawn, []string{fin.ID}) || got.footerID != fin.ID || got.footerMember != "finanzas" {
				t.Fatalf("the screen draws %v and the footer names %s %s, want finanzas's %s:\n%s", got.drawn, got.footerMember, got.footerID, fin.ID, screen)
			}
			pressKey(tm, "a")
			testkit.WaitFor(t, 15*time.Second, "finanzas's plan approved", func() bool {
				got, _ := dirrecords.LoadRequest(dir, fin.ID)
				return got != nil && got.Status == protocol.RequestApproved && got.ResolvedBy == protocol.Lead
			})
			waitScreen(t, tm, "approved "+fin.ID+": finanzas may go on")
			if got, _ := dirrecords.LoadRequest(dir, res.ID); got == nil || got.Status != protocol.RequestPending {
				t.Fatalf("a on finanzas's plan also decided reservas's: %+v", got)
			}
		})
	}
}

// waitDecidable waits until the request a and r decide is id, past its
// grace period.
func waitDecidable(t *testing.T, tm *teatest.TestModel, id string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var ok bool
		var why string
		inLoop(t, tm, func(m *Model) {
			sel := m.selection()
			ok = sel.req != nil && sel.req.ID == id && sel.why == "" && !m.inGrace() && !m.requests.justArrived(id)
			why = sel.why
		})
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never became decidable on screen (%s)", id, why)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
