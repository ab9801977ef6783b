package storetest_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"huddle/protocol"
	"huddle/store"
	"huddle/store/filestore"
	"huddle/store/natsstore"
)

// stores are the two stores side by side: each opens a fresh team.
func stores(b *testing.B) []struct {
	name string
	open func(b *testing.B) store.Store
} {
	srv, err := natsstore.StartServer(natsstore.ServerOptions{Addr: "127.0.0.1:0", DataDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Shutdown)
	var teams atomic.Int64
	return []struct {
		name string
		open func(b *testing.B) store.Store
	}{
		{"files", func(b *testing.B) store.Store {
			s, err := filestore.Open(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		}},
		{"nats", func(b *testing.B) store.Store {
			s, err := natsstore.Open(context.Background(), srv.URL(fmt.Sprintf("b%d", teams.Add(1))), natsstore.Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			return s
		}},
	}
}

func note(i int) *protocol.Message {
	m := protocol.NewMessage(protocol.TypeMessage, protocol.Lead, "alice")
	m.Content = fmt.Sprintf("message %d", i)
	return &m
}

// BenchmarkDelivery: one message at a time from Append to the running
// consumer's handler; p50 and p99 of that latency.
func BenchmarkDelivery(b *testing.B) {
	for _, st := range stores(b) {
		b.Run(st.name, func(b *testing.B) {
			ctx := context.Background()
			s := st.open(b)
			got := make(chan struct{}, 1)
			sub, err := s.Consume(ctx, "alice", func(context.Context, store.Delivery) error {
				got <- struct{}{}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			defer sub.Stop()
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				t0 := time.Now()
				if err := s.Append(ctx, "alice", note(i)); err != nil {
					b.Fatal(err)
				}
				<-got
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-us")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-us")
		})
	}
}

// BenchmarkAppend: one writer appending one message per call.
func BenchmarkAppend(b *testing.B) {
	for _, st := range stores(b) {
		b.Run(st.name, func(b *testing.B) {
			ctx := context.Background()
			s := st.open(b)
			msgs := make([]*protocol.Message, b.N)
			for i := range msgs {
				msgs[i] = note(i)
			}
			b.ResetTimer()
			start := time.Now()
			for _, m := range msgs {
				if err := s.Append(ctx, "alice", m); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msgs/s")
		})
	}
}

// BenchmarkDecide: the exclusive creation of a decision and the record's
// rewrite, for a request made before the clock runs.
func BenchmarkDecide(b *testing.B) {
	for _, st := range stores(b) {
		b.Run(st.name, func(b *testing.B) {
			ctx := context.Background()
			s := st.open(b)
			ids := make([]string, b.N)
			for i := range ids {
				r := protocol.NewRequest(protocol.KindPlan, fmt.Sprintf("plan-%08d", i), "alice", protocol.Lead, time.Now(), time.Hour)
				r.Plan = "p"
				if err := s.CreateRequest(ctx, &r); err != nil {
					b.Fatal(err)
				}
				ids[i] = r.ID
			}
			b.ResetTimer()
			for _, id := range ids {
				if _, err := s.Decide(ctx, id, store.Decision{Event: protocol.EventApprove, By: protocol.Lead}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
