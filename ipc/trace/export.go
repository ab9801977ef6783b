package trace

import (
	"os"
	"strings"
)

// The OpenTelemetry variables that decide whether spans are exported
// (ipc/trace/otelexport reads the rest).
const (
	EnvOTLPEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvOTLPTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvSDKDisabled        = "OTEL_SDK_DISABLED"
	EnvTracesExporter     = "OTEL_TRACES_EXPORTER"
)

// ExportWanted reports whether the environment asks for spans to be
// exported: an OTLP endpoint is set, the SDK is not disabled
// (OTEL_SDK_DISABLED=true) and OTEL_TRACES_EXPORTER is not "none". It is
// here, without the exporter, so that huddle can tell without linking it
// (only huddle-full does).
func ExportWanted() bool {
	if strings.EqualFold(strings.TrimSpace(os.Getenv(EnvSDKDisabled)), "true") ||
		strings.EqualFold(strings.TrimSpace(os.Getenv(EnvTracesExporter)), "none") {
		return false
	}
	return os.Getenv(EnvOTLPEndpoint) != "" || os.Getenv(EnvOTLPTracesEndpoint) != ""
}
