package replay

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"huddle/internal/testkit/dirlead"
	"huddle/internal/testkit/dirrecords"
	"huddle/internal/testkit/files"
	"huddle/ipc/trace"
	"huddle/protocol"
	"huddle/store"
	"huddle/store/filestore"
	"huddle/team"
	"huddle/team/supervisor"
	"huddle/team/view"
)

// watcher keeps the snapshots an observer hands out.
type watcher struct {
	mu    sync.Mutex
	snaps []view.Snapshot
}

func (w *watcher) send(s view.Snapshot) { w.mu.Lock(); w.snaps = append(w.snaps, s); w.mu.Unlock() }

// wait returns the first snapshot, from now on, that cond holds of.
func (w *watcher) wait(t *testing.T, what string, cond func(view.Snapshot) bool) view.Snapshot {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for seen := 0; ; {
		w.mu.Lock()
		snaps := w.snaps[seen:]
		w.mu.Unlock()
		for _, s := range snaps {
			if cond(s) {
				return s
			}
		}
		seen += len(snaps)
		if time.Now().After(deadline) {
			w.mu.Lock()
			if n := len(w.snaps); n > 0 {
				for _, mv := range w.snaps[n-1].Members {
					t.Logf("%s %s %q down=%v", mv.Record.Name, mv.Record.Status, mv.Record.Activity, w.snaps[n-1].Down)
				}
			}
			w.mu.Unlock()
			t.Fatalf("timed out waiting for the observer to show %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func memberIn(s view.Snapshot, name string) protocol.Member {
	for _, mv := range s.Members {
		if mv.Record.Name == name {
			return mv.Record
		}
	}
	return protocol.Member{}
}

func requestIn(s view.Snapshot, id string) *protocol.Request {
	for i := range s.Requests {
		if s.Requests[i].ID == id {
			return &s.Requests[i]
		}
	}
	return nil
}

// session is a demo team run for real: its plan approved once the
// observer shows it pending, run until a message reached the lead and a
// call chain ended, then stopped. It returns the directory and what the
// observer showed on the way.
type session struct {
	dir                 string
	planID              string
	whilePending, after view.Snapshot
	last                view.Snapshot
}

func runSession(t *testing.T) session {
	t.Helper()
	dir := t.TempDir()
	if err := team.Init(dir); err != nil {
		t.Fatal(err)
	}
	w := &watcher{}
	fs, err := filestore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	obs, err := view.Observe(context.Background(), fs, view.ObserveOptions{Frame: time.Millisecond}, w.send)
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Close()
	// The demo's exec member runs `huddle agent echo`; this test binary is
	// not huddle, so that member crashes and calls to it fail: more to see.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rt, err := supervisor.Start(ctx, files.Open(t, dir), dir, supervisor.Options{Executable: "/nonexistent/huddle"})
	if err != nil {
		t.Fatal(err)
	}
	var ss session
	ss.dir = dir
	// Snapshots taken while the observer knows the runtime runs: before it
	// has probed, it shows the members of a stopped team as stopped.
	ss.whilePending = w.wait(t, "reservas's plan pending", func(s view.Snapshot) bool {
		if s.Down {
			return false
		}
		for _, r := range s.Requests {
			if r.From == "reservas" && r.Status == protocol.RequestPending && memberIn(s, "reservas").Status == protocol.MemberAwaitingApproval {
				ss.planID = r.ID
				return true
			}
		}
		return false
	})
	if _, err := dirlead.Decide(dir, ss.planID, protocol.EventApprove, "", protocol.Lead); err != nil {
		t.Fatal(err)
	}
	ss.after = w.wait(t, "the plan approved", func(s view.Snapshot) bool {
		r := requestIn(s, ss.planID)
		return !s.Down && r != nil && r.Status == protocol.RequestApproved
	})
	w.wait(t, "a message to the lead and an ended call", func(s view.Snapshot) bool {
		toLead, ended := false, false
		for _, m := range s.Messages {
			toLead = toLead || m.Inbox == protocol.Lead
		}
		for _, ch := range s.Chains.All() {
			for _, row := range ch.Rows {
				ended = ended || row.Call.Status != trace.CallRunning
			}
		}
		return toLead && ended
	})
	cancel()
	if err := rt.Wait(); err != nil {
		t.Fatal(err)
	}
	// What the observer shows of the stopped team, once it has read the
	// records the runtime left (not a live record shown as stopped because
	// the team is down: that one keeps the time of its last move).
	onDisk, _, err := trace.ReadChains(dir)
	if err != nil {
		t.Fatal(err)
	}
	ss.last = w.wait(t, "every member's last record and every call", func(s view.Snapshot) bool {
		if !reflect.DeepEqual(s.Chains.Slice(), onDisk) {
			return false
		}
		for _, mv := range s.Members {
			st := mv.Record.Status
			if st != protocol.MemberStopped && st != protocol.MemberCrashed || strings.HasPrefix(mv.Record.Activity, "team not running") {
				return false
			}
		}
		return true
	})
	return ss
}

// positionAt is the position after every event at or before at.
func positionAt(tl *Timeline, at time.Time) int {
	k := 0
	for k < len(tl.Events) && !tl.Events[k].At.After(at) {
		k++
	}
	return k
}

func TestTimelineOfARealSession(t *testing.T) {
	ss := runSession(t)
	tl, err := readDir(t, ss.dir)
	if err != nil {
		t.Fatal(err)
	}

	// Ordered.
	for i := 1; i < len(tl.Events); i++ {
		if tl.Events[i].At.Before(tl.Events[i-1].At) {
			t.Fatalf("event %d (%s at %v) comes after event %d at %v", i, tl.Events[i].Kind, tl.Events[i].At, i-1, tl.Events[i-1].At)
		}
	}

	// Complete: every status move, every transition, every span, every
	// message the observer saw.
	count := map[Kind]int{}
	for _, e := range tl.Events {
		count[e.Kind]++
	}
	moves := 0
	for _, spec := range tl.Team.Members {
		h, err := team.ReadStatusHistory(ss.dir, spec.Name, 0)
		if err != nil {
			t.Fatal(err)
		}
		if spec.Runtime.Kind == team.RuntimeScript && (len(h) == 0 || h[0].Status != protocol.MemberStarting) {
			t.Errorf("%s's history does not start with starting: %+v", spec.Name, h)
		}
		moves += len(h)
	}
	if count[KindStatus] != moves || moves == 0 {
		t.Errorf("%d status events, want the %d moves of the histories", count[KindStatus], moves)
	}
	reqs, _ := dirrecords.ListRequests(ss.dir)
	transitions := 0
	for _, r := range reqs {
		transitions += len(r.History)
	}
	if count[KindRequest] != transitions || transitions < 2 {
		t.Errorf("%d request events, want the %d transitions of the records", count[KindRequest], transitions)
	}
	spans, err := trace.NewTraceReader(ss.dir).Read()
	if err != nil {
		t.Fatal(err)
	}
	if count[KindSpan] != len(spans) || len(spans) == 0 {
		t.Errorf("%d span events, want the %d spans of traces.jsonl", count[KindSpan], len(spans))
	}
	ids := map[string]bool{}
	for _, e := range tl.Events {
		if e.Kind == KindMessage {
			ids[e.Inbox+"/"+e.Message.ID] = true
		}
	}
	for _, m := range ss.last.Messages {
		if !ids[m.Inbox+"/"+m.Msg.ID] {
			t.Errorf("message %s in %s's inbox, seen by the observer, is not in the timeline", m.Msg.ID, m.Inbox)
		}
	}
	if len(ss.last.Messages) == 0 {
		t.Error("the observer saw no message")
	}

	f := NewFold(tl)
	// Each member, at its move, has the status the observer showed.
	for _, s := range []view.Snapshot{ss.whilePending, ss.after, ss.last} {
		for _, mv := range s.Members {
			if mv.Record.Status == "" {
				continue
			}
			f.Seek(positionAt(tl, mv.Record.Since))
			if got := memberIn(f.Snapshot(), mv.Record.Name); got.Status != mv.Record.Status {
				t.Errorf("at %v the fold shows %s %s; the observer showed %s", mv.Record.Since, mv.Record.Name, got.Status, mv.Record.Status)
			}
		}
	}
	// The plan: pending until its decision, approved from it on.
	created, decided := -1, -1
	for i, e := range tl.Events {
		if e.Kind == KindRequest && e.Request.ID == ss.planID {
			switch e.Request.Status {
			case protocol.RequestPending:
				created = i
			case protocol.RequestApproved:
				decided = i
			}
		}
	}
	if created < 0 || decided <= created {
		t.Fatalf("the plan's events: created at %d, approved at %d", created, decided)
	}
	f.Seek(created)
	if r := requestIn(f.Snapshot(), ss.planID); r != nil {
		t.Errorf("the plan is there before it was made: %+v", r)
	}
	f.Seek(decided)
	s := f.Snapshot()
	if r := requestIn(s, ss.planID); r == nil || r.Status != protocol.RequestPending || r.Approve != nil || r.ResolvedAt != nil || s.Pending == 0 {
		t.Errorf("just before its decision the plan is %+v (pending count %d); want it pending, unanswered", r, s.Pending)
	}
	f.Seek(decided + 1)
	if r := requestIn(f.Snapshot(), ss.planID); r == nil || r.Status != protocol.RequestApproved || !reflect.DeepEqual(r, requestIn(ss.after, ss.planID)) {
		t.Errorf("after its decision the plan is %+v; the observer showed %+v", r, requestIn(ss.after, ss.planID))
	}
	// At the end: the chains and the statuses the observer showed last.
	f.Seek(f.Len())
	end := f.Snapshot()
	if !reflect.DeepEqual(end.Chains.Slice(), ss.last.Chains.Slice()) {
		t.Errorf("the chains at the end differ from the observer's:\n%+v\n%+v", end.Chains.Slice(), ss.last.Chains.Slice())
	}
	for _, mv := range ss.last.Members {
		if got := memberIn(end, mv.Record.Name); got.Status != mv.Record.Status {
			t.Errorf("at the end the fold shows %s %s; the observer showed %s", mv.Record.Name, got.Status, mv.Record.Status)
		}
	}
	// Going back folds the same again.
	f.Seek(decided)
	if r := requestIn(f.Snapshot(), ss.planID); r == nil || r.Status != protocol.RequestPending {
		t.Errorf("back before the decision the plan is %+v", r)
	}

	// Export, then read back: the same timeline.
	var buf bytes.Buffer
	if err := Export(&buf, tl, time.Now()); err != nil {
		t.Fatal(err)
	}
	back, err := ReadExport(&buf, "session.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back.TeamJSON, compactJSON(t, tl.TeamJSON)) || back.Team.Name != tl.Team.Name {
		t.Errorf("team.json did not travel: %s", back.TeamJSON)
	}
	sameEvents(t, back.Events, tl.Events)
}

// sameEvents fails unless got and want are the same events, time for time.
func sameEvents(t *testing.T, got, want []Event) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d events, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if !g.At.Equal(w.At) {
			t.Fatalf("event %d at %v, want %v", i, g.At, w.At)
		}
		g.At, w.At = time.Time{}, time.Time{}
		gb, _ := g.MarshalJSON()
		wb, _ := w.MarshalJSON()
		if !bytes.Equal(gb, wb) {
			t.Fatalf("event %d:\n got %s\nwant %s", i, gb, wb)
		}
	}
}

// openFiles opens the files store of a team directory, as internal/cli
// does for one (Open's openDir).
func openFiles(dir string) (store.Store, error) { return filestore.Open(dir) }

// readDir is the timeline of the team directory dir, read through its
// files store.
func readDir(t *testing.T, dir string) (*Timeline, error) {
	t.Helper()
	return Read(t.Context(), files.Open(t, dir), dir)
}
