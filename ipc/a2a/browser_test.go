package a2a

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestKeylessRefusesBrowsers: without keys the A2A door refuses, before
// any method or the card, what a browser could send for a web page: an
// Origin, a Host that is not loopback (DNS rebinding), a POST that is not
// JSON; each one error naming why, and no task is made.
func TestKeylessRefusesBrowsers(t *testing.T) {
	g := newGated()
	srv, url := serve(t, g, nil)
	body := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}]}}}`
	for _, tc := range []struct {
		name, method, path, ctype string
		header                    map[string]string
		host                      string
		status                    int
		reason                    string
	}{
		{"an Origin", "POST", "/a2a", "application/json", map[string]string{"Origin": "https://evil.example"}, "", 403, "cross_origin"},
		{"a rebinding host", "POST", "/a2a", "application/json", nil, "evil.example:7420", 403, "host_not_loopback"},
		{"a form", "POST", "/a2a", "application/x-www-form-urlencoded", nil, "", 415, "Content-Type"},
		{"text/plain", "POST", "/a2a", "text/plain", nil, "", 415, "Content-Type"},
		{"the card from a page", "GET", CardPath, "", map[string]string{"Origin": "https://evil.example"}, "", 403, "cross_origin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, url+tc.path, strings.NewReader(body))
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			req.Header.Set(VersionHeader, Version)
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			var out struct {
				Error *Error `json:"error"`
			}
			json.Unmarshal(b, &out)
			if resp.StatusCode != tc.status || out.Error == nil || !strings.Contains(string(b), tc.reason) {
				t.Errorf("HTTP %d %s", resp.StatusCode, b)
			}
		})
	}
	srv.mu.Lock()
	n := len(srv.tasks)
	srv.mu.Unlock()
	if n != 0 {
		t.Errorf("refused requests made %d tasks", n)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.got) != 0 {
		t.Errorf("refused requests reached the backend: %v", g.got)
	}
}
