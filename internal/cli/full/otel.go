package full

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"

	"huddle/ipc/trace"
	"huddle/ipc/trace/otelexport"
)

// startTraceExport starts exporting this process's invocation spans when
// the OpenTelemetry variables ask for it (trace.ExportWanted), and returns
// what stops it: a flush bounded by otelexport.ShutdownTimeout. A
// collector that cannot be reached never fails nor holds up the command:
// at most one warning line on stderr, when the command ends (a screen may
// be showing until then), naming the endpoint without its credentials.
func startTraceExport(stderr io.Writer) (stop func()) {
	if !trace.ExportWanted() {
		return func() {} // nothing is built
	}
	version := ""
	if info, ok := debug.ReadBuildInfo(); ok {
		version = info.Main.Version
	}
	exp, err := otelexport.Start(context.Background(), otelexport.Options{Version: version})
	if err != nil {
		fmt.Fprintf(stderr, "huddle: warning: %v\n", err)
		return func() {}
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), otelexport.ShutdownTimeout)
		defer cancel()
		if err := exp.Shutdown(ctx); err != nil {
			fmt.Fprintf(stderr, "huddle: warning: %v\n", err)
		}
	}
}
