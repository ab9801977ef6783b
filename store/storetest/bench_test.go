package storetest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/nats-io/nats.go"

	"huddle/internal/benchfloor"
	"huddle/ipc/trace"
	"huddle/protocol"
	"huddle/store"
	"huddle/store/filestore"
	"huddle/store/natsserver"
	"huddle/store/natsstore"
)

// benchStore is one of the two stores side by side.
type benchStore struct {
	name string
	// team makes a fresh team and returns an opener of handles on it: each
	// handle is what one process (for NATS one connection) of the team
	// holds. Handles are closed when the benchmark ends.
	team func(b *testing.B) func() store.Store
}

// open is one handle on a fresh team.
func (st benchStore) open(b *testing.B) store.Store { return st.team(b)() }

// stores are the two stores side by side, both on a disk an fsync reaches:
// the team directory, and an embedded NATS server on loopback whose
// JetStream files are on the same disk.
func stores(b *testing.B) []benchStore {
	base := benchfloor.RealDiskDir(b)
	srv, err := natsserver.Start(natsserver.Options{Addr: "127.0.0.1:0", DataDir: filepath.Join(base, "nats")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Shutdown)
	var teams atomic.Int64
	return []benchStore{
		{"files", func(b *testing.B) func() store.Store {
			dir := filepath.Join(base, fmt.Sprintf("files-%d", teams.Add(1)))
			return func() store.Store {
				s, err := filestore.Open(dir)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { s.Close() })
				return s
			}
		}},
		{"nats", func(b *testing.B) func() store.Store {
			url := srv.URL(fmt.Sprintf("b%d", teams.Add(1)))
			return func() store.Store {
				s, err := natsstore.Open(context.Background(), url, natsstore.Options{})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { s.Close() })
				return s
			}
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

// BenchmarkPlanApprovalRoundTrip is a plan approval through the store as
// the team makes one (docs/ARCHITECTURE.md, "State machines"), between two handles on one team
// (two processes, or for NATS two connections, as on two machines): the
// member creates the request record and appends the plan_approval_request
// to the lead's inbox; the lead's running consumer decides it (approve)
// and appends the plan_approval_response to the member's inbox; the
// member's running consumer reads the record and sees it approved. The
// clock runs from before the record's creation to that read: p50-us and
// p99-us. Interleaved one for one, the floor on the same machine in the
// same run (see roundTripFloor): its p50 and p99, and the round trip's
// percentiles over the floor's (p50-ratio, p99-ratio). ns/op covers one
// round trip and one floor sample.
func BenchmarkPlanApprovalRoundTrip(b *testing.B) {
	for _, st := range stores(b) {
		b.Run(st.name, func(b *testing.B) {
			ctx := context.Background()
			open := st.team(b)
			lead, alice := open(), open()
			floor := roundTripFloor(b, alice, "fsync")
			done := make(chan error, 1)
			leadConsumes(ctx, b, lead, done)
			seen, err := alice.Consume(ctx, "alice", func(ctx context.Context, d store.Delivery) error {
				if d.Msg.Type != protocol.TypePlanApprovalResponse {
					return nil
				}
				r, err := alice.Request(ctx, d.Msg.RequestID)
				if err == nil && r.Status != protocol.RequestApproved {
					err = fmt.Errorf("plan %s is %s after the lead's approval", r.ID, r.Status)
				}
				hand(ctx, done, err)
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			defer seen.Stop()
			lat := make([]time.Duration, 0, b.N)
			fl := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				fl = append(fl, floor.sample(b))
				t0 := time.Now()
				r := protocol.NewRequest(protocol.KindPlan, protocol.NewRequestID(protocol.KindPlan), "alice", protocol.Lead, t0, time.Hour)
				r.Plan = "refactor the parser"
				if err := alice.CreateRequest(ctx, &r); err != nil {
					b.Fatal(err)
				}
				m := protocol.NewMessage(protocol.TypePlanApprovalRequest, "alice", protocol.Lead)
				m.RequestID, m.Plan = r.ID, r.Plan
				if err := alice.Append(ctx, protocol.Lead, &m); err != nil {
					b.Fatal(err)
				}
				await(b, done, "the approved plan")
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			report(b, lat, fl, floor.name)
		})
	}
}

// leadConsumes runs the lead's consumer of BenchmarkPlanApprovalRoundTrip:
// each plan_approval_request is approved (Decide, first resolver wins) and
// answered in its member's inbox. A failure goes to done, so the waiting
// member does not wait for an answer that will not come.
func leadConsumes(ctx context.Context, b *testing.B, lead store.Store, done chan<- error) {
	sub, err := lead.Consume(ctx, protocol.Lead, func(ctx context.Context, d store.Delivery) error {
		if d.Msg.Type != protocol.TypePlanApprovalRequest {
			return nil
		}
		_, err := lead.Decide(ctx, d.Msg.RequestID, store.Decision{Event: protocol.EventApprove, By: protocol.Lead})
		if err == nil {
			resp := protocol.NewMessage(protocol.TypePlanApprovalResponse, protocol.Lead, d.Msg.From)
			resp.RequestID, resp.Approve = d.Msg.RequestID, protocol.Bool(true)
			err = lead.Append(ctx, d.Msg.From, &resp)
		}
		if err != nil {
			hand(ctx, done, fmt.Errorf("the lead on %s: %w", d.Msg.RequestID, err))
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sub.Stop() })
}

// BenchmarkCallRoundTrip is one teammate calling another through the store
// as the runtime does (docs/ARCHITECTURE.md, "Invocation (Puruto IPC)", "Two walks through the code" (b)), between two handles on
// one team: the caller appends the call's start span and an
// invocation_request to the target's inbox; the target's running consumer
// answers with an invocation_result in the caller's inbox; the caller's
// running consumer hands it to the waiting call, which checks its ids and
// appends the end span. The clock runs from before the start span to the
// end span appended (what ipc.Caller.Call costs, the spans included):
// p50-us and p99-us, beside the floor as in BenchmarkPlanApprovalRoundTrip.
func BenchmarkCallRoundTrip(b *testing.B) {
	for _, st := range stores(b) {
		b.Run(st.name, func(b *testing.B) {
			ctx := context.Background()
			open := st.team(b)
			alice, bob := open(), open()
			floor := roundTripFloor(b, alice, "inotify")
			results := make(chan protocol.InvocationResult, 1)
			failed := make(chan error, 1)
			targetAnswers(ctx, b, bob, failed)
			sub, err := alice.Consume(ctx, "alice", func(ctx context.Context, d store.Delivery) error {
				if d.Msg.Type == protocol.TypeInvocationResult {
					hand(ctx, results, *d.Msg.Result)
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			defer sub.Stop()
			lat := make([]time.Duration, 0, b.N)
			fl := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				fl = append(fl, floor.sample(b))
				t0 := time.Now()
				req := protocol.InvocationRequest{RequestID: protocol.NewInvocationID(), CorrelationID: protocol.NewCorrelationID(),
					Caller: "alice", Target: "bob", Action: "echo", Prompt: "say it back", TimeoutSec: 120}
				if err := alice.AppendSpan(ctx, trace.Start(req, t0)); err != nil {
					b.Fatal(err)
				}
				m := protocol.NewMessage(protocol.TypeInvocationRequest, "alice", "bob")
				m.Invocation = &req
				if err := alice.Append(ctx, "bob", &m); err != nil {
					b.Fatal(err)
				}
				res := awaitResult(b, results, failed)
				if res.RequestID != req.RequestID || res.CorrelationID != req.CorrelationID || res.Status != protocol.ResultOK {
					b.Fatalf("answer to %s/%s: %+v", req.RequestID, req.CorrelationID, res)
				}
				if err := alice.AppendSpan(ctx, trace.End(req, res, "", false, time.Now())); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			report(b, lat, fl, floor.name)
		})
	}
}

// targetAnswers runs the target's consumer of BenchmarkCallRoundTrip: each
// invocation_request is answered at once, ok, in the caller's inbox. A
// failure goes to failed.
func targetAnswers(ctx context.Context, b *testing.B, target store.Store, failed chan<- error) {
	sub, err := target.Consume(ctx, "bob", func(ctx context.Context, d store.Delivery) error {
		if d.Msg.Type != protocol.TypeInvocationRequest {
			return nil
		}
		req := d.Msg.Invocation
		res, err := protocol.OK(req, 0, map[string]string{"echo": req.Prompt})
		if err == nil {
			m := protocol.NewMessage(protocol.TypeInvocationResult, "bob", req.Caller)
			m.Result = &res
			err = target.Append(ctx, req.Caller, &m)
		}
		if err != nil {
			hand(ctx, failed, fmt.Errorf("the target on %s: %w", req.RequestID, err))
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sub.Stop() })
}

// hand gives v to the benchmark's loop, or drops it when the consumer is
// stopped (the loop has failed and gone), so a handler never blocks a Stop.
func hand[T any](ctx context.Context, ch chan<- T, v T) {
	select {
	case ch <- v:
	case <-ctx.Done():
	}
}

// roundTripWait bounds every wait of the round trips: a store that lost a
// message fails the benchmark instead of hanging it.
const roundTripWait = 30 * time.Second

func await(b *testing.B, done <-chan error, what string) {
	select {
	case err := <-done:
		if err != nil {
			b.Fatal(err)
		}
	case <-time.After(roundTripWait):
		b.Fatalf("no %s within %s", what, roundTripWait)
	}
}

func awaitResult(b *testing.B, results <-chan protocol.InvocationResult, failed <-chan error) protocol.InvocationResult {
	select {
	case res := <-results:
		return res
	case err := <-failed:
		b.Fatal(err)
	case <-time.After(roundTripWait):
		b.Fatalf("no invocation_result within %s", roundTripWait)
	}
	return protocol.InvocationResult{}
}

// report puts the round trip's percentiles, the floor's (named floorName)
// and their ratios.
func report(b *testing.B, lat, floor []time.Duration, floorName string) {
	p50, p99 := benchfloor.Percentiles(lat)
	f50, f99 := benchfloor.Percentiles(floor)
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	b.ReportMetric(us(p50), "p50-us")
	b.ReportMetric(us(p99), "p99-us")
	b.ReportMetric(us(f50), floorName+"-p50-us")
	b.ReportMetric(us(f99), floorName+"-p99-us")
	b.ReportMetric(float64(p50)/float64(f50), "p50-ratio")
	b.ReportMetric(float64(p99)/float64(f99), "p99-ratio")
}

// floorProbe is the physical floor of a round trip, sampled once per
// round trip in the same run.
type floorProbe struct {
	name   string // the metric prefix: what is measured
	sample func(b *testing.B) time.Duration
}

// roundTripFloor is the floor beside a round trip on s. For NATS it is
// the transport: a bare request/reply on s's own connection to a
// subscriber that answers at once (nats-rtt), with a payload the size of
// an inbox line. For files it is what the disk and the kernel cannot go
// below: fileFloor "fsync" is creating, writing and fsyncing a small file
// on the store's disk (the plan's record and decision are fsync'd), and
// "inotify" is two writes to two watched files, each waited for until its
// fsnotify event arrives (a call is two appends, each waking a consumer).
func roundTripFloor(b *testing.B, s store.Store, fileFloor string) floorProbe {
	switch s := s.(type) {
	case *natsstore.Store:
		return natsRTT(b, s.Conn())
	case *filestore.Store:
		dir, err := os.MkdirTemp(filepath.Dir(s.Dir()), "floor-") // beside the team: the same disk
		if err != nil {
			b.Fatal(err)
		}
		if fileFloor == "fsync" {
			return floorProbe{"fsync", func(b *testing.B) time.Duration { return benchfloor.Fsync(b, filepath.Join(dir, "probe"), floorLine()) }}
		}
		return inotifyRoundTrip(b, dir)
	}
	b.Fatalf("no floor for a %T", s)
	return floorProbe{}
}

// natsRTT answers requests on nc itself, so a sample is one request/reply
// through the server on the store's own connection.
func natsRTT(b *testing.B, nc *nats.Conn) floorProbe {
	subject := "huddle_bench.floor." + nats.NewInbox()[len(nats.InboxPrefix):]
	sub, err := nc.Subscribe(subject, func(m *nats.Msg) { _ = m.Respond(m.Data) })
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := nc.Flush(); err != nil { // the subscription reached the server
		b.Fatal(err)
	}
	payload := floorLine()
	return floorProbe{"nats-rtt", func(b *testing.B) time.Duration {
		t0 := time.Now()
		if _, err := nc.Request(subject, payload, roundTripWait); err != nil {
			b.Fatal(err)
		}
		return time.Since(t0)
	}}
}

// inotifyRoundTrip watches dir and, per sample, appends a line to one file
// and waits for its event, then to another and waits again.
func inotifyRoundTrip(b *testing.B, dir string) floorProbe {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { w.Close() })
	if err := w.Add(dir); err != nil {
		b.Fatal(err)
	}
	var files [2]*os.File
	for i := range files {
		if files[i], err = os.OpenFile(filepath.Join(dir, fmt.Sprintf("hop-%d.jsonl", i)), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { files[i].Close() })
		awaitEvent(b, w) // the create
	}
	line := floorLine()
	return floorProbe{"inotify", func(b *testing.B) time.Duration {
		t0 := time.Now()
		for _, f := range files {
			if _, err := f.Write(line); err != nil {
				b.Fatal(err)
			}
			awaitEvent(b, w)
		}
		return time.Since(t0)
	}}
}

func awaitEvent(b *testing.B, w *fsnotify.Watcher) {
	select {
	case _, ok := <-w.Events:
		if !ok {
			b.Fatal("fsnotify closed")
		}
	case err := <-w.Errors:
		b.Fatal(err)
	case <-time.After(roundTripWait):
		b.Fatalf("no fsnotify event within %s", roundTripWait)
	}
}

// floorLine is a line the size of a plan_approval_request.
func floorLine() []byte {
	return []byte(`{"id":"m-01KB0000000000000000000000","type":"plan_approval_request","from":"alice","to":"lead","ts":"2026-12-01T00:00:00Z","request_id":"plan-0123456789ab","plan":"refactor the parser"}` + "\n")
}
