package supervisor

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/internal/testkit/dirlead"
	"huddle/internal/testkit/dirrecords"
	"huddle/internal/testkit/teamkit"
	"huddle/protocol"
	"huddle/team"
	"huddle/teamdir"
)

// chatServer is a fake OpenAI Chat Completions server on loopback: it
// answers each request with the next scripted assistant turn and keeps the
// bodies it was sent.
type chatServer struct {
	mu     sync.Mutex
	turns  []map[string]any // assistant messages, in order
	bodies []string
	srv    *httptest.Server
}

func newChatServer(t *testing.T, turns ...map[string]any) *chatServer {
	t.Helper()
	cs := &chatServer{turns: turns}
	cs.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		cs.mu.Lock()
		cs.bodies = append(cs.bodies, string(body))
		var msg map[string]any
		if len(cs.turns) > 0 {
			msg, cs.turns = cs.turns[0], cs.turns[1:]
		}
		cs.mu.Unlock()
		if msg == nil {
			// The script is over: hold the call until the runtime stops.
			<-r.Context().Done()
			return
		}
		finish := "stop"
		if _, ok := msg["tool_calls"]; ok {
			finish = "tool_calls"
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "c", "object": "chat.completion", "created": 1, "model": "fake",
			"choices": []any{map[string]any{"index": 0, "finish_reason": finish, "message": msg}},
			"usage":   map[string]any{"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
		})
	}))
	t.Cleanup(cs.srv.Close)
	return cs
}

func (cs *chatServer) sent() []string {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return append([]string(nil), cs.bodies...)
}

func toolTurn(id, name string, args map[string]any) map[string]any {
	b, _ := json.Marshal(args)
	return map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{
		map[string]any{"id": id, "type": "function", "function": map[string]any{"name": name, "arguments": string(b)}},
	}}
}

// TestLLMTeammateThroughTheRealLoop runs an llm member with the real Agent
// and the OpenAI provider against a fake server: its write is refused before
// its plan is approved, the plan waits for the lead, the write is done after,
// and the transcript, the roster's tokens and the key's absence all hold.
func TestLLMTeammateThroughTheRealLoop(t *testing.T) {
	const key = "sk-e2e-SECRET-4242"
	t.Setenv("HUDDLE_E2E_KEY", key)
	cs := newChatServer(t,
		toolTurn("c1", "write_file", map[string]any{"path": "hello.txt", "content": "too early"}),
		toolTurn("c2", "submit_plan", map[string]any{"plan": "write hello.txt"}),
		toolTurn("c3", "write_file", map[string]any{"path": "hello.txt", "content": "hi"}),
		map[string]any{"role": "assistant", "content": "done: hello.txt written"},
	)
	dir := t.TempDir()
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: []team.MemberSpec{{
		Name: "coder", Role: "writes", Dir: "work",
		Runtime: team.RuntimeSpec{Kind: team.RuntimeLLM, Provider: team.ProviderOpenAI, BaseURL: cs.srv.URL + "/v1", Model: "fake",
			APIKeyEnv: "HUDDLE_E2E_KEY", Prompt: "write hello.txt", Tools: []string{"write_file", "read_file"},
			Price: &team.LLMPrice{InputPerMTok: 3, OutputPerMTok: 15}},
	}}})
	startTeam(t, dir, Options{})

	var plan *protocol.Request
	testkit.WaitFor(t, 20*time.Second, "coder's plan", func() bool { plan = pendingPlan(dir, "coder"); return plan != nil })
	work := filepath.Join(dir, "work")
	if _, err := os.Stat(filepath.Join(work, "hello.txt")); err == nil {
		t.Fatal("the write before the plan's approval went through")
	}
	if _, err := dirlead.Decide(dir, plan.ID, protocol.EventApprove, "", protocol.Lead); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 20*time.Second, "hello.txt", func() bool {
		b, err := os.ReadFile(filepath.Join(work, "hello.txt"))
		return err == nil && string(b) == "hi"
	})
	testkit.WaitFor(t, 20*time.Second, "the final answer in the transcript", func() bool {
		b, _ := os.ReadFile(transcriptFile(t, dir, "coder"))
		return strings.Contains(string(b), "done: hello.txt written")
	})

	// The refusal the model saw names the need for an approved plan.
	bodies := cs.sent()
	if len(bodies) < 2 || !strings.Contains(bodies[1], "approved plan") {
		t.Fatalf("the second request does not carry the gate's refusal: %v", bodies)
	}
	m, err := dirrecords.LoadMember(dir, "coder")
	if err != nil {
		t.Fatal(err)
	}
	if m.Counters.TokensIn < 400 || m.Counters.TokensOut < 80 || m.Counters.CostUSD <= 0 {
		t.Fatalf("coder's counters after four turns: %+v", m.Counters)
	}
	// The key is in no file of the team directory.
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // moved since the listing (the runtime archives a decided request)
		}
		if err != nil {
			return err
		}
		if strings.Contains(string(b), key) {
			t.Errorf("%s holds the API key", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func transcriptFile(t *testing.T, dir, member string) string {
	t.Helper()
	p, err := teamdir.TranscriptPath(dir, member)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
