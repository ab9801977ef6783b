package otelexport

import (
	"net/url"
	"os"
	"strings"

	"huddle/ipc/trace"
)

// The variables huddle reads itself; the OTLP exporter and the SDK read the
// rest of the standard ones (OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT,
// _COMPRESSION, _PROTOCOL, _CERTIFICATE…, OTEL_BSP_*, OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES).
const (
	envEndpoint       = trace.EnvOTLPEndpoint
	envTracesEndpoint = trace.EnvOTLPTracesEndpoint
	envHeaders        = "OTEL_EXPORTER_OTLP_HEADERS"
	envTracesHeaders  = "OTEL_EXPORTER_OTLP_TRACES_HEADERS"
	// EnvContent, set to 1, adds prompts, results and error messages to
	// the spans. Off, no span carries what a call asked or answered.
	EnvContent = "HUDDLE_OTEL_CONTENT"
)

// contentOn reports whether HUDDLE_OTEL_CONTENT asks for content.
func contentOn() bool { return strings.TrimSpace(os.Getenv(EnvContent)) == "1" }

// endpointShown is where traces go, as a message may show it: the traces
// URL without user info, query or fragment.
func endpointShown() string {
	if e := os.Getenv(envTracesEndpoint); e != "" {
		return safeURL(e)
	}
	e := safeURL(os.Getenv(envEndpoint))
	if strings.HasPrefix(e, "(") {
		return e
	}
	return strings.TrimRight(e, "/") + "/v1/traces"
}

// safeURL is raw without user info, query or fragment: what may be printed
// of an endpoint or a remote.
func safeURL(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" {
		return "(an endpoint that is not a URL)"
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return u.String()
}

// secrets are the strings no message may show: the values of the OTLP
// headers (an Authorization, an API key) and the user info of the
// endpoints, as written and URL-decoded.
func secrets() []string {
	var out []string
	add := func(s string) {
		if s = strings.TrimSpace(s); len(s) >= 3 {
			out = append(out, s)
		}
		if d, err := url.QueryUnescape(s); err == nil && d != s && len(d) >= 3 {
			out = append(out, d)
		}
	}
	for _, name := range []string{envHeaders, envTracesHeaders} {
		for _, kv := range strings.Split(os.Getenv(name), ",") {
			if _, v, ok := strings.Cut(kv, "="); ok {
				add(v)
			}
		}
	}
	for _, name := range []string{envEndpoint, envTracesEndpoint} {
		if u, err := url.Parse(strings.TrimSpace(os.Getenv(name))); err == nil && u.User != nil {
			add(u.User.String())
			add(u.User.Username())
			if p, ok := u.User.Password(); ok {
				add(p)
			}
		}
	}
	return out
}

// scrub removes every secret from s.
func scrub(s string) string {
	for _, sec := range secrets() {
		s = strings.ReplaceAll(s, sec, "[redacted]")
	}
	return s
}
