package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"huddle/internal/testkit"
	"huddle/internal/testkit/teamkit"
	"huddle/ipc/trace"
	"huddle/ipc/trace/otelexport"
	"huddle/team"
)

// TestGenAISpansOfAnLLMAnswer: a scripted member calls an llm member (the
// real loop, a fake OpenAI server), which lists its files and answers.
// Exported with the GenAI semantic conventions: the call is invoke_agent
// coder, and under it, in the chain's trace, a chat span per model turn
// with its tokens and model, and execute_tool list_files.
func TestGenAISpansOfAnLLMAnswer(t *testing.T) {
	mem := tracetest.NewInMemoryExporter()
	ex, err := otelexport.Start(context.Background(), otelexport.Options{Exporter: mem})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ex.Shutdown(context.Background()) })
	cs := newChatServer(t,
		toolTurn("c1", "list_files", map[string]any{"path": "."}),
		map[string]any{"role": "assistant", "content": "looked: notes.txt is there"},
	)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "work"), 0o700)
	os.WriteFile(filepath.Join(dir, "work", "notes.txt"), []byte("x"), 0o600)
	os.WriteFile(filepath.Join(dir, "asker.json"), []byte(`{"allowed_targets":["coder"]}`), 0o600)
	asker := teamkit.Scripted("asker", "", team.Step{Call: "coder", Action: "review", Prompt: "what is there?", TimeoutSec: 30},
		team.Step{Wait: team.Duration(time.Hour)})
	asker.IPC = "asker.json"
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: []team.MemberSpec{asker, {
		Name: "coder", Role: "reads", Dir: "work",
		Runtime: team.RuntimeSpec{Kind: team.RuntimeLLM, Provider: team.ProviderOpenAI, BaseURL: cs.srv.URL + "/v1", Model: "fake-model",
			Tools: []string{"list_files"}, MaxTurns: 50}, // no prompt: the main conversation waits, the call has the model
	}}})
	ev := startTeam(t, dir, Options{})
	testkit.WaitFor(t, 20*time.Second, "asker's call to coder", func() bool {
		return ev.has(func(e Event) bool { return e["event"] == "call" && e["member"] == "asker" })
	})
	if !ev.has(func(e Event) bool { return e["event"] == "call" && e["member"] == "asker" && e["status"] == "ok" }) {
		t.Fatal("asker's call to coder failed")
	}
	var corr, req string
	ev.has(func(e Event) bool {
		if e["event"] == "call" && e["member"] == "asker" {
			corr, req = e["correlation_id"].(string), e["request_id"].(string)
		}
		return false
	})
	t.Cleanup(func() {
		if t.Failed() {
			for _, s := range mem.GetSpans() {
				t.Logf("span %s trace %v parent %v", s.Name, s.SpanContext.TraceID(), s.Parent.SpanID())
			}
			b, _ := os.ReadFile(transcriptFile(t, dir, "coder"))
			t.Logf("transcript:\n%s", b)
		}
	})
	var call, tool tracetest.SpanStub
	var chats []tracetest.SpanStub
	testkit.WaitFor(t, 20*time.Second, "the call, its model turns and its tool exported", func() bool {
		if err := ex.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		chats = nil
		for _, s := range mem.GetSpans() {
			switch {
			case s.Name == "invoke_agent coder":
				call = s
			case s.Name == "execute_tool list_files":
				tool = s
			case s.Name == "chat fake-model" && s.SpanContext.TraceID() == trace.TraceID(corr):
				chats = append(chats, s)
			}
		}
		return call.Name != "" && tool.Name != "" && len(chats) == 2
	})
	t.Cleanup(func() {
		if t.Failed() {
			for _, s := range mem.GetSpans() {
				t.Logf("span %s trace %v parent %v", s.Name, s.SpanContext.TraceID(), s.Parent.SpanID())
			}
			b, _ := os.ReadFile(transcriptFile(t, dir, "coder"))
			t.Logf("transcript:\n%s", b)
		}
	})
	want := trace.TraceID(corr)
	if call.SpanContext.TraceID() != want || call.SpanContext.SpanID() != trace.SpanID(req) {
		t.Fatalf("the call's span is not the chain's: %v", call.SpanContext)
	}
	a := attrsOf(call)
	if a["gen_ai.operation.name"] != "invoke_agent" || a["gen_ai.agent.name"] != "coder" || a["gen_ai.conversation.id"] != corr || a["huddle.caller"] != "asker" {
		t.Errorf("invoke_agent's attributes: %v", a)
	}
	for _, s := range append(chats, tool) {
		if s.SpanContext.TraceID() != want || s.Parent.SpanID() != trace.SpanID(req) {
			t.Errorf("%s is not under the call: trace %v parent %v", s.Name, s.SpanContext.TraceID(), s.Parent.SpanID())
		}
	}
	for _, c := range chats {
		a := attrsOf(c)
		if a["gen_ai.operation.name"] != "chat" || a["gen_ai.provider.name"] != "openai" || a["gen_ai.request.model"] != "fake-model" ||
			a["gen_ai.usage.input_tokens"] != "100" || a["gen_ai.usage.output_tokens"] != "20" {
			t.Errorf("a chat span's attributes: %v", a)
		}
	}
	if a := attrsOf(tool); a["gen_ai.operation.name"] != "execute_tool" || a["gen_ai.tool.name"] != "list_files" || a["gen_ai.tool.call.id"] != "c1" {
		t.Errorf("execute_tool's attributes: %v", a)
	}
	if !tool.StartTime.Before(tool.EndTime) && !tool.StartTime.Equal(tool.EndTime) {
		t.Errorf("execute_tool ends before it starts: %v %v", tool.StartTime, tool.EndTime)
	}
}

func attrsOf(s tracetest.SpanStub) map[string]string {
	out := map[string]string{}
	for _, kv := range s.Attributes {
		out[string(kv.Key)] = kv.Value.String()
	}
	return out
}
