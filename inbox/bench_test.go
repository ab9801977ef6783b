package inbox

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"huddle/protocol"
)

// BenchmarkAppend measures append throughput of one writer.
func BenchmarkAppend(b *testing.B) {
	team := b.TempDir()
	m := msg("alice", "bob", "a message of an ordinary length, about as long as a short status line")
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		if err := Append(team, "bob", m); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
}

// BenchmarkDelivery measures the latency from Append returning to the
// watching consumer's handler receiving the message, and in the same run the
// floor: a plain file write to the fsnotify event arriving, no huddle code.
func BenchmarkDelivery(b *testing.B) {
	team := b.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A long rescan period: every delivery here is pushed by fsnotify.
	w, err := NewWatcher(ctx, team, Options{Rescan: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	got := make(chan time.Time, 1)
	if err := w.Consume("bob", func(context.Context, Delivery) error { got <- time.Now(); return nil }); err != nil {
		b.Fatal(err)
	}
	m := msg("alice", "bob", "ping")
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		m.ID = protocol.NewMessageID()
		if err := Append(team, "bob", m); err != nil {
			b.Fatal(err)
		}
		sent := time.Now()
		select {
		case at := <-got:
			lat = append(lat, at.Sub(sent))
		case <-time.After(10 * time.Second):
			b.Fatal("no delivery within 10s")
		}
	}
	b.StopTimer()
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	floor := fsnotifyFloor(b, b.N)
	b.ReportMetric(pct(lat, 50), "p50-us")
	b.ReportMetric(pct(lat, 99), "p99-us")
	b.ReportMetric(pct(floor, 99), "floor-p99-us")
}

// fsnotifyFloor times n plain appends to a file until fsnotify reports each.
func fsnotifyFloor(b *testing.B, n int) []time.Duration {
	dir := b.TempDir()
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		b.Fatal(err)
	}
	defer fw.Close()
	if err := fw.Add(dir); err != nil {
		b.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "x.jsonl"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	<-fw.Events // the create
	line := []byte(`{"id":"m-1","type":"message","from":"alice","to":"bob","content":"ping"}` + "\n")
	out := make([]time.Duration, 0, n)
	for range n {
		t0 := time.Now()
		if _, err := f.Write(line); err != nil {
			b.Fatal(err)
		}
		select {
		case <-fw.Events:
			out = append(out, time.Since(t0))
		case <-time.After(10 * time.Second):
			b.Fatal("no fsnotify event within 10s")
		}
	}
	return out
}

func pct(d []time.Duration, p int) float64 {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[min(len(s)-1, len(s)*p/100)].Microseconds())
}
