package blueprint

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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

// BenchmarkCycle runs full invoke → status → result cycles on loopback
// against a no-op skill, from 16 concurrent clients with keep-alive
// connections, and reports cycles per second and the p99 of one cycle.
func BenchmarkCycle(b *testing.B) {
	srv, err := NewServer(ServerConfig{Backend: noopBackend{}, MaxRunning: 4096})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 64}}
	body := `{"caller":{"id":"bench","type":"test"},"skill_id":"noop.run","inputs":{"prompt":"x"}}`
	get := func(path string, into any) (int, error) {
		resp, err := client.Get(ts.URL + path)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		return resp.StatusCode, json.NewDecoder(resp.Body).Decode(into)
	}
	cycle := func() error {
		resp, err := client.Post(ts.URL+"/invoke", "application/json", strings.NewReader(body))
		if err != nil {
			return err
		}
		var acc Accepted
		json.NewDecoder(resp.Body).Decode(&acc)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		for {
			var st Status
			if _, err := get("/status/"+acc.ExecutionID, &st); err != nil {
				return err
			}
			if Final(st.Status) {
				break
			}
		}
		var res Result
		code, err := get("/result/"+acc.ExecutionID, &res)
		if err == nil && code != 200 {
			b.Fatalf("result: %d", code)
		}
		return err
	}
	const workers = 16
	var mu sync.Mutex
	lat := make([]time.Duration, 0, b.N)
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for next.Add(1) <= int64(b.N) {
				t0 := time.Now()
				if err := cycle(); err != nil {
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
	elapsed := time.Since(start)
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "cycles/s")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
}
