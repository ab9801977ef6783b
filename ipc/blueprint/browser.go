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
		switch {
		case !loopbackHost(r.Host):
			writeError(w, http.StatusForbidden, ErrorBody{Code: CodePermissionDenied,
				Message: "without API keys this server answers only requests addressed to a loopback name (localhost, 127.0.0.1, [::1])",
				Details: map[string]any{"reason": "host_not_loopback"}})
		case len(r.Header.Values("Origin")) > 0:
			writeError(w, http.StatusForbidden, ErrorBody{Code: CodePermissionDenied,
				Message: "without API keys this server refuses requests a browser sends for a web page (they carry Origin)",
				Details: map[string]any{"reason": "cross_origin"}})
		case r.Method == http.MethodPost && !isJSON(r.Header.Get("Content-Type")):
			writeError(w, http.StatusUnsupportedMediaType, ErrorBody{Code: CodeUnsupportedMedia,
				Message: "a POST must be Content-Type: application/json",
				Details: map[string]any{"field": "Content-Type"}})
		default:
			h.ServeHTTP(w, r)
		}
	})
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
