package blueprint

import (
	"mime"
	"net"
	"net/http"
	"strings"
)

// refuseBrowsers guards a server without API keys, which believes the
// caller's id: a web page must not be able to make a browser call it. A
// browser marks its cross-site requests with Origin; the only POSTs it sends
// without asking first (CORS preflight, which this server never grants) are
// forms and text/plain; and a DNS-rebinding page reaches the loopback port
// under its own host name. So without keys every request with an Origin,
// every POST that is not application/json and every Host that is not a
// loopback name is refused. With keys, the key decides who calls.
func (s *Server) refuseBrowsers(h http.Handler) http.Handler {
	if s.cfg.Keys != nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f := BrowserRefusal(r); f != nil {
			writeError(w, f.Status, ErrorBody{Code: f.Code, Message: f.Message, Details: map[string]any{f.DetailKey: f.Detail}})
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Refusal is why a server without keys refuses a request a browser could
// have sent: its HTTP status, the Blueprint code, a message, and the
// detail that names the reason (reason host_not_loopback or cross_origin,
// or field Content-Type).
type Refusal struct {
	Status            int
	Code, Message     string
	DetailKey, Detail string
}

// BrowserRefusal says why a server without keys refuses r, or nil: every
// server huddle runs without keys (Blueprint, A2A, MCP over HTTP) asks it
// before anything else (decisions/0009).
func BrowserRefusal(r *http.Request) *Refusal {
	switch {
	case !loopbackHost(r.Host):
		return &Refusal{http.StatusForbidden, CodePermissionDenied,
			"without API keys this server answers only requests addressed to a loopback name (localhost, 127.0.0.1, [::1])",
			"reason", "host_not_loopback"}
	case len(r.Header.Values("Origin")) > 0:
		return &Refusal{http.StatusForbidden, CodePermissionDenied,
			"without API keys this server refuses requests a browser sends for a web page (they carry Origin)",
			"reason", "cross_origin"}
	case r.Method == http.MethodPost && !isJSON(r.Header.Get("Content-Type")):
		return &Refusal{http.StatusUnsupportedMediaType, CodeUnsupportedMedia,
			"a POST must be Content-Type: application/json", "field", "Content-Type"}
	}
	return nil
}

// isJSON reports whether a Content-Type is application/json, parameters
// such as charset aside.
func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}

// loopbackHost reports whether a Host header names this machine's loopback:
// localhost or a loopback address, with or without a port.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(host, "]"), "["), ".")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
