package otelexport

import (
	"errors"
	"strings"

	"github.com/go-logr/logr"
)

// sdkLog takes the place of the OpenTelemetry libraries' own logger
// (otel.SetLogger), which writes to stderr as things happen and quotes
// what it could not parse: a malformed endpoint with its credentials, say.
// Their errors become the export's one warning instead; their info lines
// are dropped.
type sdkLog struct{ e *Export }

var _ logr.LogSink = sdkLog{}

func (sdkLog) Init(logr.RuntimeInfo)            {}
func (sdkLog) Enabled(int) bool                 { return false }
func (sdkLog) Info(int, string, ...any)         {}
func (l sdkLog) WithValues(...any) logr.LogSink { return l }
func (l sdkLog) WithName(string) logr.LogSink   { return l }

// Error keeps what went wrong. An error about a URL is kept without its
// text, which quotes the URL as it was written.
func (l sdkLog) Error(err error, msg string, _ ...any) {
	if err == nil || strings.Contains(strings.ToLower(msg), "url") {
		l.e.exportFailed(errors.New(msg + ": not a valid URL"))
		return
	}
	l.e.exportFailed(errors.New(msg + ": " + err.Error()))
}
