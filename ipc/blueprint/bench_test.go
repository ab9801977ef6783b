package blueprint

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"huddle/ipc"
	"huddle/protocol"
)

// noopBackend answers every call at once.
type noopBackend struct{}

func (noopBackend) Skills() []Skill               { return []Skill{{ID: "noop.run"}} }
func (noopBackend) Has(string) bool               { return true }
func (noopBackend) Check(string, int) *ipc.Denial { return nil }
func (noopBackend) Call(_ context.Context, req protocol.InvocationRequest) protocol.InvocationResult {
	res, _ := protocol.OK(&req, 0, map[string]bool{"ok": true})
	return res
}

// benchClients is how many clients run cycles at once (issue 11: 16).
const benchClients = 16

// BenchmarkCycle runs full invoke → status → result cycles through the
// stack `huddle serve` runs (NewServed: the handler chain, the store in a
// real team directory, the request log to a real file, the http.Server with
// its timeouts, on a real loopback listener) against a no-op skill, from 16
// concurrent blueprint.Clients sharing the default HTTP client, as a remote
// target does. It reports cycles per second and the p50 and p99 of one
// cycle. In the same run it times the floor: the same 16 clients making
// three requests per cycle to a bare net/http server whose handler answers
// {} at once, and reports floor-cycles/s and the ratio, and the CPU time
// (this process: clients and server) per cycle of both and its ratio, which
// a busy machine disturbs less than the rates; conns is how many
// connections the served stack accepted (16 when every client keeps its
// connection).
//
//	go test -run '^$' -bench Cycle -benchtime 20000x -count 3 ./ipc/blueprint
func BenchmarkCycle(b *testing.B) {
	dir := b.TempDir()
	logFile, err := os.Create(filepath.Join(dir, "serve.log"))
	if err != nil {
		b.Fatal(err)
	}
	defer logFile.Close()
	srv, err := NewServed(ServedConfig{Dir: dir, Backend: noopBackend{}, MaxRunning: 4096, Keep: time.Hour, LogTo: logFile})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	// Counting connections shows whether the clients reuse theirs.
	var conns atomic.Int64
	srv.HTTP.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	url := serveLoopback(b, srv.HTTP)
	floorURL := serveLoopback(b, &http.Server{Handler: floorHandler()})
	b.ResetTimer()
	cpu0 := processCPU(b)
	lat, elapsed := runCycles(b, b.N, func(ctx context.Context) error { return servedCycle(ctx, url) })
	cpu1 := processCPU(b)
	b.StopTimer()
	_, floorElapsed := runCycles(b, b.N, func(ctx context.Context) error { return floorCycle(ctx, floorURL) })
	cpu2 := processCPU(b)
	if b.Failed() {
		return
	}
	slices.Sort(lat)
	cps := float64(len(lat)) / elapsed.Seconds()
	floor := float64(b.N) / floorElapsed.Seconds()
	b.ReportMetric(cps, "cycles/s")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(floor, "floor-cycles/s")
	b.ReportMetric(floor/cps, "floor-ratio")
	b.ReportMetric(float64(conns.Load()), "conns")
	// CPU per cycle (clients and server, this process) depends less on
	// what else the machine runs than cycles/s does.
	cpuPer, floorCPUPer := (cpu1-cpu0)/time.Duration(b.N), (cpu2-cpu1)/time.Duration(b.N)
	b.ReportMetric(float64(cpuPer.Nanoseconds())/1000, "cpu-µs/cycle")
	b.ReportMetric(float64(floorCPUPer.Nanoseconds())/1000, "floor-cpu-µs/cycle")
	b.ReportMetric(float64(cpuPer)/float64(floorCPUPer), "cpu-ratio")
	checkStoreAndLog(b, dir, logFile.Name(), b.N)
}

// floorHandler answers {} at once: the floor's server.
func floorHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte("{}\n"))
	})
}

// processCPU is the user and system CPU time this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// serveLoopback serves hs on a fresh loopback port until the benchmark
// ends and returns its root URL.
func serveLoopback(b *testing.B, hs *http.Server) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); hs.Serve(ln) }()
	b.Cleanup(func() { hs.Close(); <-done })
	return "http://" + ln.Addr().String()
}

// servedCycle is one invoke → status (until final) → result through the
// real client.
func servedCycle(ctx context.Context, url string) error {
	c := &Client{BaseURL: url}
	acc, err := c.Invoke(ctx, InvokeRequest{Caller: Caller{ID: "bench", Type: "test"}, SkillID: "noop.run",
		Inputs: map[string]any{"prompt": "x"}}, "")
	if err != nil {
		return err
	}
	for {
		st, err := c.Status(ctx, acc.ExecutionID)
		if err != nil {
			return err
		}
		if Final(st.Status) {
			break
		}
	}
	res, _, err := c.Result(ctx, acc.ExecutionID)
	if err == nil && res.Status != StateCompleted {
		err = fmt.Errorf("result %s: %s", acc.ExecutionID, res.Status)
	}
	return err
}

// floorCycle is three requests with the client's HTTP client and nothing
// behind them: what the cycle costs without huddle.
func floorCycle(ctx context.Context, url string) error {
	c := &Client{BaseURL: url}
	for _, cl := range []call{{method: http.MethodPost, path: "/invoke", body: []byte(`{}`)},
		{method: http.MethodGet, path: "/status/x"}, {method: http.MethodGet, path: "/result/x"}} {
		a, err := c.do(ctx, cl)
		if err != nil {
			return err
		}
		if a.status != http.StatusOK {
			return fmt.Errorf("floor: %d", a.status)
		}
	}
	return nil
}

// runCycles runs n cycles from benchClients goroutines and returns each
// cycle's duration and the wall time of all.
func runCycles(b *testing.B, n int, cycle func(context.Context) error) ([]time.Duration, time.Duration) {
	var mu sync.Mutex
	lat := make([]time.Duration, 0, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	ctx := context.Background()
	start := time.Now()
	for range benchClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for next.Add(1) <= int64(n) {
				t0 := time.Now()
				if err := cycle(ctx); err != nil {
					b.Error(err)
					return
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return lat, time.Since(start)
}

// checkStoreAndLog makes sure the benchmark went through the store and the
// request log: two lines per execution and three log lines per cycle.
func checkStoreAndLog(b *testing.B, dir, logPath string, cycles int) {
	b.Helper()
	loaded, err := NewStore(dir).Load(time.Time{})
	if err != nil {
		b.Fatal(err)
	}
	if loaded.Lines != 2*cycles || len(loaded.Executions) != cycles {
		b.Fatalf("executions.jsonl: %d lines, %d executions after %d cycles", loaded.Lines, len(loaded.Executions), cycles)
	}
	log, err := os.ReadFile(logPath)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		b.Fatal(err)
	}
	if n := countLines(log); n < 3*cycles {
		b.Fatalf("request log: %d lines after %d cycles", n, cycles)
	}
}

func countLines(b []byte) int {
	n := 0
	for _, c := range b {
		if c == '\n' {
			n++
		}
	}
	return n
}
