package tui

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"huddle/protocol"
	"huddle/team/view"
)

// drawnRequest finds the request the details on screen draw (the Requests
// pane's details header, or the member card's pending line); footerRequest
// the one the footer's a names, with its member.
var (
	drawnRequest  = regexp.MustCompile(`(?:plan|permission|shutdown) ([a-z]{2}-[0-9a-f]{12}) · `)
	footerRequest = regexp.MustCompile(`a approve (\S+) ([a-z]{2}-[0-9a-f]{12})`)
)

// onScreen is what a person reads on a frame: the ids the details draw and
// the member and id the footer's a names ("" when it names none).
type onScreen struct {
	drawn        []string
	footerMember string
	footerID     string
}

func readScreen(content string) onScreen {
	lines := strings.Split(ansi.Strip(content), "\n")
	var s onScreen
	if len(lines) < 2 {
		return s
	}
	for _, l := range lines[:len(lines)-2] { // not the footer, not the status line
		for _, sm := range drawnRequest.FindAllStringSubmatch(l, -1) {
			s.drawn = append(s.drawn, sm[1])
		}
	}
	if sm := footerRequest.FindStringSubmatch(lines[len(lines)-2]); sm != nil {
		s.footerMember, s.footerID = sm[1], sm[2]
	}
	return s
}

// decision is one call the keys made on the team.
type decision struct{ verb, id string }

// recordingActions are a team's Actions that keep what the keys decided.
type recordingActions struct{ decided []decision }

func (a *recordingActions) Approve(id string) (string, error) {
	a.decided = append(a.decided, decision{"approve", id})
	return "approved " + id, nil
}

func (a *recordingActions) Reject(id, _ string) (string, error) {
	a.decided = append(a.decided, decision{"reject", id})
	return "rejected " + id, nil
}
func (a *recordingActions) Shutdown(string) (string, error)     { return "", nil }
func (a *recordingActions) Send(string, string) (string, error) { return "", nil }
func (a *recordingActions) Broadcast(string) (string, error)    { return "", nil }

// world is the team the walk changes by itself: its requests, kept in the
// order the observer lists them (pending first, oldest first).
type world struct {
	snap    view.Snapshot
	reqs    []protocol.Request
	clock   *testClock
	rng     *rand.Rand
	counter int
}

func (w *world) publish() view.Snapshot {
	slices.SortStableFunc(w.reqs, func(a, b protocol.Request) int {
		ap, bp := a.Status == protocol.RequestPending, b.Status == protocol.RequestPending
		switch {
		case ap && !bp:
			return -1
		case bp && !ap:
			return 1
		case ap:
			return a.Created.Compare(b.Created)
		}
		return b.Created.Compare(a.Created)
	})
	s := w.snap
	s.Version++
	s.Requests = append([]protocol.Request(nil), w.reqs...) // a new slice, as the observer hands out
	s.Pending = 0
	for _, r := range s.Requests {
		if r.Status == protocol.RequestPending {
			s.Pending++
		}
	}
	w.snap = s
	return s
}

func (w *world) newID() string {
	w.counter++
	return fmt.Sprintf("pl-%012x", 0xa00000000000+w.counter)
}

// pendingPlans are the indexes of the pending plans.
func (w *world) pendingPlans() []int {
	var out []int
	for i, r := range w.reqs {
		if r.Status == protocol.RequestPending && r.Kind == protocol.KindPlan {
			out = append(out, i)
		}
	}
	return out
}

// change makes one thing happen to the team by itself: a plan arrives,
// one is decided elsewhere, one is revised, or one's text changes.
func (w *world) change() {
	members := []string{"reservas", "finanzas", "data"}
	plans := w.pendingPlans()
	switch k := w.rng.IntN(4); {
	case k == 0 || len(plans) == 0:
		from := members[w.rng.IntN(len(members))]
		w.reqs = append(w.reqs, planRequest(w.newID(), from, "plan of "+from+" #"+fmt.Sprint(w.counter), w.clock.Now()))
	case k == 1:
		r := &w.reqs[plans[w.rng.IntN(len(plans))]]
		_ = r.Apply(protocol.EventApprove, "cli", w.clock.Now(), "")
	case k == 2:
		r := &w.reqs[plans[w.rng.IntN(len(plans))]]
		_ = r.Apply(protocol.EventReject, "cli", w.clock.Now(), "try again")
		next := planRequest(w.newID(), r.From, r.Plan+" (revised)", w.clock.Now())
		next.Revises = r.ID
		w.reqs = append(w.reqs, next)
	default:
		r := &w.reqs[plans[w.rng.IntN(len(plans))]]
		r.Plan += " More."
	}
}

// TestKeysDecideOnlyWhatTheScreenShows walks random cursor moves, key
// presses and changes of the team over a model with several pending
// requests. On every frame the footer's a names the request the details
// draw, and nothing else; after every a and r that decided something, the
// id decided is the one the last frame drew and its footer named; a
// request the team changed under the cursor, with no move of the person
// since, is not decided within the grace period.
func TestKeysDecideOnlyWhatTheScreenShows(t *testing.T) {
	keys := []string{"1", "2", "3", "4", "5", "j", "k", "j", "k", "tab", "shift+tab", "esc", "enter", "l", "a", "a", "a", "r"}
	moving := map[string]bool{"1": true, "2": true, "3": true, "4": true, "5": true, "j": true, "k": true, "tab": true, "shift+tab": true}
	decidedOn := map[pane]int{} // the panes the walks decided from
	for seed := range uint64(24) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			st := NewStyles(false, true)
			clock := &testClock{now: t0}
			rec := &recordingActions{}
			m := New(Options{Dir: t.TempDir(), Styles: &st, Now: clock.Now, Actions: rec})
			sizes := [][2]int{{80, 24}, {120, 36}, {200, 50}}
			size := sizes[seed%uint64(len(sizes))]
			m.Update(tea.WindowSizeMsg{Width: size[0], Height: size[1]})
			w := &world{snap: busySnapshot(t), clock: clock, rng: rand.New(rand.NewPCG(seed, 7))}
			w.reqs = append([]protocol.Request(nil), w.snap.Requests...)
			for _, from := range []string{"finanzas", "data"} {
				w.reqs = append(w.reqs, planRequest(w.newID(), from, "first plan of "+from, t0.Add(-time.Minute)))
			}
			sd := protocol.NewRequest(protocol.KindShutdown, "sd-0123456789ab", protocol.Lead, "auditor", t0.Add(-time.Minute), 10*time.Minute)
			w.reqs = append(w.reqs, sd)
			m.Update(SnapshotMsg(w.publish()))
			clock.Advance(time.Second)

			var changedAt time.Time // when the team last changed what the details draw
			movedSince := true      // whether the person moved since
			frame := readScreen(m.View().Content)
			for step := range 400 {
				where := fmt.Sprintf("step %d (focus %s)", step, paneNames[m.focus])
				if m.dialog == nil {
					if frame.footerID != "" {
						if len(frame.drawn) != 1 || frame.drawn[0] != frame.footerID {
							t.Fatalf("%s: the footer offers %s while the details draw %v", where, frame.footerID, frame.drawn)
						}
					}
				}
				if w.rng.IntN(4) == 0 {
					w.change()
					m.Update(SnapshotMsg(w.publish()))
					next := readScreen(m.View().Content)
					if !slices.Equal(next.drawn, frame.drawn) {
						changedAt, movedSince = clock.Now(), false
					}
					frame = next
					continue
				}
				if w.rng.IntN(3) == 0 {
					clock.Advance(time.Duration(w.rng.IntN(300)) * time.Millisecond)
					m.Update(tickMsg(clock.Now()))
					frame = readScreen(m.View().Content)
				}
				k := keys[w.rng.IntN(len(keys))]
				if m.dialog != nil {
					k = "esc" // a dialog left open by a walk is closed without deciding
				}
				before := len(rec.decided)
				m.flash = ""
				cmd := send(m, k)
				if moving[k] {
					movedSince = true
				}
				if k == "r" && m.dialog != nil && m.dialog.kind == dialogReject {
					if m.dialog.target != frame.footerID {
						t.Fatalf("%s: r opened the feedback for %s; the screen showed %v, the footer named %s", where, m.dialog.target, frame.drawn, frame.footerID)
					}
					typeText(m, "no")
					cmd = send(m, "enter")
				}
				for _, msg := range run(cmd) {
					if done, ok := msg.(ActionDoneMsg); ok {
						m.Update(done)
					}
				}
				if len(rec.decided) > before {
					d := rec.decided[len(rec.decided)-1]
					if len(rec.decided) != before+1 {
						t.Fatalf("%s: one key decided %v", where, rec.decided[before:])
					}
					if d.id != frame.footerID || len(frame.drawn) != 1 || d.id != frame.drawn[0] {
						t.Fatalf("%s: %s decided %s; the screen drew %v and the footer named %s", where, k, d.id, frame.drawn, frame.footerID)
					}
					if !movedSince && clock.Now().Sub(changedAt) < grace {
						t.Fatalf("%s: %s decided %s %v after it changed on screen by itself", where, k, d.id, clock.Now().Sub(changedAt))
					}
					decidedOn[m.focus]++
					r := findRequest(w.reqs, d.id)
					if r == nil || r.Status != protocol.RequestPending || r.Kind != protocol.KindPlan {
						t.Fatalf("%s: decided %s, which is %+v", where, d.id, r)
					}
					ev := protocol.EventApprove
					if d.verb == "reject" {
						ev = protocol.EventReject
					}
					if err := r.Apply(ev, protocol.Lead, clock.Now(), ""); err != nil {
						t.Fatal(err)
					}
					m.Update(SnapshotMsg(w.publish()))
				} else if k == "a" && m.flash == "" {
					t.Fatalf("%s: a decided nothing and said nothing", where)
				}
				frame = readScreen(m.View().Content)
			}
			if len(rec.decided) == 0 {
				t.Fatal("the walk decided nothing: it tests nothing")
			}
		})
	}
	if decidedOn[paneRoster] == 0 || decidedOn[paneRequests] == 0 {
		t.Fatalf("the walks decided from the roster %d times and from Requests %d times: both must be tested", decidedOn[paneRoster], decidedOn[paneRequests])
	}
	t.Logf("decided from the roster %d times, from Requests %d times", decidedOn[paneRoster], decidedOn[paneRequests])
}

func findRequest(rs []protocol.Request, id string) *protocol.Request {
	for i := range rs {
		if rs[i].ID == id {
			return &rs[i]
		}
	}
	return nil
}
