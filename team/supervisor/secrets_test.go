package supervisor

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"huddle/internal/redact"
	"huddle/internal/testkit"
	"huddle/llm"
	"huddle/protocol"
	"huddle/store"
	"huddle/team"
	"huddle/teamdir"
)

// wrap76 is s broken into lines of 76 characters, as base64(1) prints it.
func wrap76(s string) string {
	var b strings.Builder
	for len(s) > 76 {
		b.WriteString(s[:76] + "\n")
		s = s[76:]
	}
	return b.String() + s
}

// TestSecretsScrubbedFromTranscriptsShippedLinesAndEvents: an llm member's
// key and the secrets the runtime is given (a store URL's token) are in no
// transcript line, local or shipped to the store, no shipped log line and
// no event, raw, URL-escaped or base64-encoded (wrapped as base64(1) wraps
// it, from /proc/PID/environ).
func TestSecretsScrubbedFromTranscriptsShippedLinesAndEvents(t *testing.T) {
	const key = "sk-HUDDLE-key-0a1b2c3d4e5f6a7b"
	const token = "nats-T0KEN-9f8e7d6c5b4a"
	t.Setenv("HUDDLE_TEST_SCRUB_KEY", key)
	secrets := redact.New(key, token)
	coder := llmMember("coder")
	coder.Runtime.APIKeyEnv = "HUDDLE_TEST_SCRUB_KEY"
	open := natsTeam(t, team.Team{Name: "crew", Members: []team.MemberSpec{coder, roleSpec("x", "stderrsay")}}, nil)
	fk := &fakes{}
	ev := &events{}
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	rt, err := Start(ctx, open(), dir, Options{OnEvent: ev.add, Tick: 100 * time.Millisecond, newThinker: fk.build, Secrets: []string{token}})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	s := &storeRuntime{ev: ev, cancel: cancel, rt: rt}
	t.Cleanup(func() { s.stop(t) })
	testkit.WaitFor(t, 15*time.Second, "x and coder running", func() bool { return runsHere(s, "x") && runsHere(s, "coder") })

	environ := "PATH=/usr/bin\x00HOME=/root\x00OPENAI_API_KEY=" + key + "\x00HUDDLE_STORE=nats://" + token + "@127.0.0.1:4222/crew\x00"
	tr := fk.of(t, "coder").cfg.Transcript
	for off := range 3 {
		b64 := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("x", off) + environ))
		tr(llm.Entry{Kind: "tool_result", Tool: "bash", Text: "$ base64 /proc/$PPID/environ\n" + wrap76(b64)})
	}
	args, _ := json.Marshal(map[string]string{"command": "curl https://x/?t=" + url.QueryEscape(token) + " -H 'key: " + key + "'"})
	tr(llm.Entry{Kind: "tool_call", Tool: "bash", Args: args})
	tr(llm.Entry{Kind: "model", Text: "the token is " + token + "; done-marker"})

	reader := open()
	rctx, rcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer rcancel()
	var mu sync.Mutex
	shipped := map[store.LogKind][]string{}
	for _, kind := range []store.LogKind{store.LogTranscript, store.LogStderr} {
		member := map[store.LogKind]string{store.LogTranscript: "coder", store.LogStderr: "x"}[kind]
		go func() {
			_ = reader.ReadLog(rctx, member, kind, true, func(line []byte) {
				mu.Lock()
				shipped[kind] = append(shipped[kind], string(line))
				mu.Unlock()
			})
		}()
	}
	m := protocol.NewMessage(protocol.TypeMessage, protocol.Lead, "x")
	m.Content = base64.StdEncoding.EncodeToString([]byte(environ)) + " x-marker"
	if err := reader.Append(rctx, "x", &m); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 20*time.Second, "both markers shipped", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Contains(strings.Join(shipped[store.LogTranscript], "\n"), "done-marker") &&
			strings.Contains(strings.Join(shipped[store.LogStderr], "\n"), "x-marker")
	})
	path, _ := teamdir.TranscriptPath(dir, "coder")
	local, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for what, text := range map[string]string{
		"the local transcript":   string(local),
		"the shipped transcript": strings.Join(shipped[store.LogTranscript], "\n"),
		"the shipped stderr":     strings.Join(shipped[store.LogStderr], "\n"),
	} {
		if secrets.Holds(decodeJSONStrings(text)) || secrets.Holds(text) {
			t.Errorf("a secret is in %s:\n%s", what, text)
		}
	}
	if ev.has(func(e Event) bool { return secrets.Holds(fmt.Sprint(e)) }) {
		t.Error("a secret is in an event")
	}
	if n := strings.Count(string(local), redact.Mark); n < 5 {
		t.Errorf("the local transcript holds %d %s, want one a secret at least:\n%s", n, redact.Mark, local)
	}
}

// decodeJSONStrings is text with each line that is JSON replaced by its
// strings, unescaped, so that a secret JSON escaping hid is seen.
func decodeJSONStrings(text string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		var v any
		if json.Unmarshal([]byte(line), &v) != nil {
			out = append(out, line)
			continue
		}
		out = append(out, strings.Join(jsonStrings(v), "\n"))
	}
	return strings.Join(out, "\n")
}

func jsonStrings(v any) []string {
	switch v := v.(type) {
	case string:
		var inner any
		if json.Unmarshal([]byte(v), &inner) == nil {
			return append([]string{v}, jsonStrings(inner)...)
		}
		return []string{v}
	case []any:
		var out []string
		for _, e := range v {
			out = append(out, jsonStrings(e)...)
		}
		return out
	case map[string]any:
		var out []string
		for _, e := range v {
			out = append(out, jsonStrings(e)...)
		}
		return out
	}
	return nil
}
