package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// toolThenText plays a two-turn conversation at zero latency: a
// send_message call, then a final answer.
type toolThenText struct{ n atomic.Int64 }

var benchCall = []ToolCall{{ID: "c1", Name: "send_message", Args: json.RawMessage(`{"to":"lead","content":"progress"}`)}}

func (m *toolThenText) Turn(context.Context, Request) (Response, error) {
	if m.n.Add(1)%2 == 1 {
		return Response{ToolCalls: benchCall, Usage: Usage{In: 100, Out: 10}}, nil
	}
	return Response{Text: "done", Usage: Usage{In: 120, Out: 5}}, nil
}

// nopEnv is a team that does nothing, instantly.
type nopEnv struct{}

func (nopEnv) SubmitPlan(context.Context, string) (bool, string, error) { return true, "", nil }
func (nopEnv) Send(string, string) error                                { return nil }
func (nopEnv) Broadcast(string) error                                   { return nil }
func (nopEnv) Call(context.Context, string, string, string, int) (string, error) {
	return "{}", nil
}
func (nopEnv) ShutdownResponse(string, bool, string) error { return nil }
func (nopEnv) Activity(string)                             {}
func (nopEnv) Usage(Usage)                                 {}

// benchAnswers runs b.N invocations of two model turns each and reports
// the cost per turn; the transcript is encoded as the runtime would.
func benchAnswers(b *testing.B, m Model) {
	enc := json.NewEncoder(io.Discard)
	a, err := NewAgent(Config{Model: m, Name: "coder", Teammates: []string{"lead"}, Env: nopEnv{}, MaxTurns: 1 << 30,
		Transcript: func(e Entry) { _ = enc.Encode(e) }})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := a.Answer(ctx, "r", "report progress"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*b.N), "ns/turn")
}

// BenchmarkTurnOverhead is huddle's own cost per model turn: the loop, the
// tool dispatch and the transcript, against a model that answers at once.
func BenchmarkTurnOverhead(b *testing.B) { benchAnswers(b, &toolThenText{}) }

// BenchmarkTurnOpenAILoopback is the same through the OpenAI SDK against a
// loopback server with canned answers: the SDK and HTTP cost beside it.
func BenchmarkTurnOpenAILoopback(b *testing.B) { benchLoopback(b, openaiDialect) }

// BenchmarkTurnAnthropicLoopback: the same through the Anthropic SDK.
func BenchmarkTurnAnthropicLoopback(b *testing.B) { benchLoopback(b, anthropicDialect) }

func benchLoopback(b *testing.B, d dialect) {
	tool := d.tools(benchCall...).body
	text := d.text("done").body
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		if n.Add(1)%2 == 1 {
			_, _ = io.WriteString(w, tool)
			return
		}
		_, _ = io.WriteString(w, text)
	}))
	defer srv.Close()
	m, err := NewModel(ProviderConfig{Provider: d.name, BaseURL: srv.URL + "/v1", Model: "m"})
	if err != nil {
		b.Fatal(err)
	}
	benchAnswers(b, m)
}

// BenchmarkIdleAgents reports the memory of an llm member waiting for
// messages: 100 agents, each with its Run goroutine parked, on one shared
// model client (the runtime builds one per member; its cost is in the
// provider benchmarks' B/op, not here).
func BenchmarkIdleAgents(b *testing.B) {
	const members = 100
	m, err := NewModel(ProviderConfig{Provider: "openai", BaseURL: "http://127.0.0.1:1/v1", Model: "m"})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		agents := make([]*Agent, members)
		for i := range agents {
			a, err := NewAgent(Config{Model: m, Name: fmt.Sprint("m", i), Teammates: []string{"lead"}, Env: nopEnv{}, Tools: KnownTools, Dir: b.TempDir(), PlanRequired: true})
			if err != nil {
				b.Fatal(err)
			}
			agents[i] = a
			wg.Go(func() { _ = a.Run(ctx) })
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc+(after.StackInuse-before.StackInuse))/members, "B/member")
		cancel()
		wg.Wait()
		runtime.KeepAlive(agents)
	}
}
