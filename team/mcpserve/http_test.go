package mcpserve

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"huddle/internal/testkit/teamkit"
	"huddle/ipc/blueprint"
)

// keyed adds a key to every request, as an HTTP client configured with one.
type keyed struct{ key string }

func (k keyed) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+k.key)
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPOverHTTP: with keys, the Go SDK's client over streamable HTTP
// with a Bearer key is its owner (approve only for the owner --decide
// allows); no key is 401, a wrong one 403, and another key cannot use a
// session it did not open. Without keys the door refuses an Origin, a
// rebinding Host and a POST that is not JSON.
func TestMCPOverHTTP(t *testing.T) {
	teamkit.OnEachStore(t, doorTeam(), func(t *testing.T, k *teamkit.Kept) {
		d := door(t, k, "boss")
		keys, err := blueprint.ParseKeys([]byte("key-boss boss\nkey-intern intern\n"))
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(d.Handler(HTTPConfig{Keys: keys}))
		defer hs.Close()
		ctx := context.Background()
		tools := func(key string) (string, string, error) {
			c := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-http", Version: "1"}, nil)
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: &http.Client{Transport: keyed{key}}}, nil)
			if err != nil {
				return "", "", err
			}
			defer cs.Close()
			lt, err := cs.ListTools(ctx, nil)
			if err != nil {
				return "", "", err
			}
			var names []string
			for _, tl := range lt.Tools {
				names = append(names, tl.Name)
			}
			return strings.Join(names, " "), cs.ID(), nil
		}
		bossTools, _, err := tools("key-boss")
		if err != nil || !strings.Contains(bossTools, "approve") {
			t.Errorf("boss's tools: %q %v", bossTools, err)
		}
		internTools, _, err := tools("key-intern")
		if err != nil || strings.Contains(internTools, "approve") || !strings.Contains(internTools, "call_action") {
			t.Errorf("intern's tools: %q %v", internTools, err)
		}
		post := func(h map[string]string, body string) (int, string) {
			req, _ := http.NewRequest("POST", hs.URL, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range h {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		initBody := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
		if code, b := post(nil, initBody); code != 401 || strings.Contains(b, "key-") {
			t.Errorf("no key: %d %s", code, b)
		}
		if code, b := post(map[string]string{"X-API-Key": "key-eve"}, initBody); code != 403 || strings.Contains(b, "key-eve") {
			t.Errorf("a wrong key: %d %s", code, b)
		}
		// A session opened by boss, used with intern's key.
		req, _ := http.NewRequest("POST", hs.URL, strings.NewReader(initBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("X-API-Key", "key-boss")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		sid := resp.Header.Get("Mcp-Session-Id")
		if sid == "" {
			t.Fatal("no session id")
		}
		code, _ := post(map[string]string{"X-API-Key": "key-intern", "Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-06-18"},
			`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		if code != 404 {
			t.Errorf("intern in boss's session: %d", code)
		}

		open := httptest.NewServer(d.Handler(HTTPConfig{Caller: "local"}))
		defer open.Close()
		for _, tc := range []struct {
			name   string
			h      map[string]string
			host   string
			ctype  string
			status int
		}{
			{"an Origin", map[string]string{"Origin": "https://evil.example"}, "", "application/json", 403},
			{"a rebinding host", nil, "evil.example", "application/json", 403},
			{"text/plain", nil, "", "text/plain", 415},
		} {
			req, _ := http.NewRequest("POST", open.URL, strings.NewReader(initBody))
			req.Header.Set("Content-Type", tc.ctype)
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range tc.h {
				req.Header.Set(k, v)
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Errorf("%s: HTTP %d, want %d", tc.name, resp.StatusCode, tc.status)
			}
		}
	})
}
