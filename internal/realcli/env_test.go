package realcli

import (
	"context"
	"strings"
	"testing"

	"huddle/internal/fakeapi"
)

// TestProxyCatchesWhatLeavesLoopback: both CLIs send what is not for
// loopback through the proxy their environment names, so a scenario whose
// fake refused nothing reached no other host. Each is given an API on a
// host that does not exist, and the fake, as the proxy, sees it asked for.
func TestProxyCatchesWhatLeavesLoopback(t *testing.T) {
	b := pinned(t)
	cases := []struct {
		name  string
		env   func(root, apiURL, proxy string) (Env, error)
		api   string
		start func(Env) (*Proc, error) // starts the CLI and has it call its API
	}{
		{"claude", claudeEnv, "https://api.anthropic.invalid",
			func(e Env) (*Proc, error) {
				c, err := StartClaude(b, e, "default")
				if err != nil {
					return nil, err
				}
				return c.Proc, c.SendUser("Say hello.")
			}},
		{"codex", codexEnv, "https://api.openai.invalid",
			func(e Env) (*Proc, error) {
				c, err := StartCodex(b, e)
				if err != nil {
					return nil, err
				}
				ctx, cancel := context.WithTimeout(context.Background(), scenarioTime)
				defer cancel()
				if err := c.Call(ctx, "initialize", map[string]any{"clientInfo": map[string]any{"name": "huddle", "version": "0.0.0"}}, nil); err != nil {
					return c.Proc, err
				}
				if err := c.Notify("initialized", nil); err != nil {
					return c.Proc, err
				}
				var th CodexThreadStarted
				if err := c.Call(ctx, "thread/start", map[string]any{"cwd": e.Work}, &th); err != nil {
					return c.Proc, err
				}
				return c.Proc, c.Call(ctx, "turn/start", map[string]any{"threadId": th.Thread.ID, "input": []any{map[string]any{"type": "text", "text": "Say hello."}}}, nil)
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			proxy := fakeapi.Anthropic()
			defer proxy.Close()
			e, err := c.env(t.TempDir(), c.api, proxy.URL())
			if err != nil {
				t.Fatal(err)
			}
			p, err := c.start(e)
			if p != nil {
				defer func() {
					if err := p.Stop(); err != nil {
						t.Error(err)
					}
				}()
			}
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), scenarioTime)
			defer cancel()
			reqs, err := proxy.Wait(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			host := strings.TrimPrefix(c.api, "https://") + ":443"
			if r := reqs[0]; r.Method != "CONNECT" || !strings.Contains(r.Refused, "CONNECT "+host) {
				t.Errorf("the proxy got %s %s (%s), want a CONNECT to %s", r.Method, r.Path, r.Refused, host)
			}
		})
	}
}
