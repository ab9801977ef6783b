package replay

import (
	"strings"
	"testing"
	"time"

	"huddle/protocol"
)

func TestPlayerScalesTimeAndCapsIdleSpells(t *testing.T) {
	tl := synthTimeline(t, 100) // a second apart, an hour's gap between 49 and 50
	p := NewPlayer(tl, 4)
	if d, ok := p.Delay(); !ok || d != 0 {
		t.Fatalf("before the first event: delay %v %v, want 0", d, ok)
	}
	p.Step(1)
	if d, _ := p.Delay(); d != 250*time.Millisecond {
		t.Fatalf("a second at ×4: %v, want 250ms", d)
	}
	p.Faster()
	if d, _ := p.Delay(); d != 125*time.Millisecond || p.Speed() != 8 {
		t.Fatalf("a second at ×8: %v (speed %v), want 125ms", d, p.Speed())
	}
	p.Seek(50)
	if d, _ := p.Delay(); d != MaxGap {
		t.Fatalf("an hour's idle spell: %v on screen, want it capped at %v", d, MaxGap)
	}
	p.Seek(p.Len())
	if _, ok := p.Delay(); ok || !p.AtEnd() {
		t.Fatal("at the end there is still a next event")
	}
	for range 20 {
		p.Slower()
	}
	if p.Speed() != MinSpeed {
		t.Fatalf("speed %v after halving 20 times from 8, want the bound %v", p.Speed(), MinSpeed)
	}
}

func TestPlayerAdvanceShowsABurstAtOnce(t *testing.T) {
	tl := synthTimeline(t, 10)
	for i := range tl.Events[3:6] { // three events at the same instant
		tl.Events[3+i].At = tl.Events[3].At
	}
	p := NewPlayer(tl, 1)
	p.Seek(3)
	if n := p.Advance(); n != 3 || p.Pos() != 6 {
		t.Fatalf("advance over a burst of 3: showed %d, at %d; want 3, at 6", n, p.Pos())
	}
	if n := p.Advance(); n != 1 || p.Pos() != 7 {
		t.Fatalf("advance after the burst: showed %d, at %d; want 1, at 7", n, p.Pos())
	}
}

func TestPlayerStatusLine(t *testing.T) {
	tl := synthTimeline(t, 12)
	p := NewPlayer(tl, 4)
	p.SetPaused(true)
	p.Seek(5)
	want := "replay 5/12 · " + tl.Events[4].At.Local().Format("15:04:05") + " · ×4 · paused"
	if got := p.Status(); got != want {
		t.Fatalf("status %q, want %q", got, want)
	}
	if !p.Now().Equal(tl.Events[4].At) {
		t.Fatalf("now %v, want the fifth event's time %v", p.Now(), tl.Events[4].At)
	}
	p.Slower()
	p.Slower()
	p.Slower()
	p.Seek(12)
	if got := p.Status(); !strings.HasSuffix(got, "· ×0.5 · end") || !strings.HasPrefix(got, "replay 12/12") {
		t.Fatalf("status at the end %q", got)
	}
}

// TestFoldForwardAndBackAgree: the snapshot at k is the same whether the
// fold came from the start, from before k or from after it.
func TestFoldForwardAndBackAgree(t *testing.T) {
	tl := synthTimeline(t, 400)
	fresh := func(k int) string {
		f := NewFold(tl)
		f.Seek(k)
		return describe(f)
	}
	f := NewFold(tl)
	for _, k := range []int{0, 1, 57, 200, 199, 400, 3, 250, 251, 0} {
		f.Seek(k)
		if got, want := describe(f), fresh(k); got != want {
			t.Fatalf("at %d after moving there:\n%s\nfrom the start:\n%s", k, got, want)
		}
	}
	f.Seek(400)
	s := f.Snapshot()
	if len(s.Requests) != 40 || s.Chains.Len() == 0 || len(s.Messages) != 160 || len(s.Members) != 4 {
		t.Fatalf("at the end: %d requests, %d chains, %d messages, %d members; want 40, some, 160, 4", len(s.Requests), s.Chains.Len(), len(s.Messages), len(s.Members))
	}
	sawPending := false
	for k := 0; k <= 400; k += 7 {
		f.Seek(k)
		s := f.Snapshot()
		pending := 0
		for i, r := range s.Requests {
			if r.Status == protocol.RequestPending {
				pending++
				if i >= s.Pending {
					t.Fatalf("at %d: pending request %s listed after the final ones", k, r.ID)
				}
			}
		}
		if pending != s.Pending {
			t.Fatalf("at %d: %d pending listed, count says %d", k, pending, s.Pending)
		}
		sawPending = sawPending || pending > 0
	}
	if !sawPending {
		t.Fatal("no position had a pending request")
	}
}

// describe is what a snapshot shows, as text to compare.
func describe(f *Fold) string {
	s := f.Snapshot()
	var b strings.Builder
	for _, mv := range s.Members {
		b.WriteString(mv.Record.Name + " " + string(mv.Record.Status) + " " + mv.Record.Activity + "\n")
	}
	for _, r := range s.Requests {
		b.WriteString(r.ID + " " + string(r.Status) + "\n")
	}
	for _, ch := range s.Chains.All() {
		for _, row := range ch.Rows {
			b.WriteString(ch.CorrelationID + " " + row.Call.RequestID + " " + row.Call.Status + "\n")
		}
	}
	for _, m := range s.Messages {
		b.WriteString(m.Msg.ID + "\n")
	}
	return b.String()
}

// BenchmarkSnapshotAtEnd folds a 10k-event timeline from the start to its
// last event: what stepping back costs at the end of a long session.
func BenchmarkSnapshotAtEnd(b *testing.B) {
	tl := synthTimeline(b, 10000)
	for b.Loop() {
		f := NewFold(tl)
		f.Seek(f.Len())
		_ = f.Snapshot()
	}
}

// BenchmarkStepForward is one step and its snapshot, near the end of a
// 10k-event timeline: what playing costs per frame.
func BenchmarkStepForward(b *testing.B) {
	tl := synthTimeline(b, 10000)
	f := NewFold(tl)
	for b.Loop() {
		if f.Pos() == f.Len() {
			f.Seek(f.Len() - 1000)
		}
		f.Seek(f.Pos() + 1)
		_ = f.Snapshot()
	}
}
