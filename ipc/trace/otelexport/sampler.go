package otelexport

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// The sampler variables of the OpenTelemetry specification. huddle reads
// them itself rather than leave them to the SDK: the SDK would decide span
// by span, and a parent-based sampler would follow the parent huddle gives
// every onward call, so a chain could lose its first call and keep the
// rest. Here every sampler decides a whole chain from its trace id (the
// chain's, derived from the correlation id), the same way in every process.
const (
	envSampler    = "OTEL_TRACES_SAMPLER"
	envSamplerArg = "OTEL_TRACES_SAMPLER_ARG"
)

// samplers are the values of OTEL_TRACES_SAMPLER huddle takes, all of the
// specification's but the jaeger and xray ones.
var samplers = []string{"always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio"}

// chainSamplerFromEnv is the decision for a chain that OTEL_TRACES_SAMPLER
// and OTEL_TRACES_SAMPLER_ARG ask for (unset: every chain). A parent-based
// sampler decides a chain by its root sampler, since a chain's first call
// has no parent outside huddle's own ids.
func chainSamplerFromEnv() (sdktrace.Sampler, error) {
	name := strings.ToLower(strings.TrimSpace(os.Getenv(envSampler)))
	arg := strings.TrimSpace(os.Getenv(envSamplerArg))
	switch name {
	case "", "always_on", "parentbased_always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off", "parentbased_always_off":
		return sdktrace.NeverSample(), nil
	case "traceidratio", "parentbased_traceidratio":
		if arg == "" {
			return sdktrace.AlwaysSample(), nil
		}
		ratio, err := strconv.ParseFloat(arg, 64)
		if err != nil || ratio < 0 || ratio > 1 {
			return nil, fmt.Errorf("%s=%q: want a ratio from 0 to 1", envSamplerArg, arg)
		}
		return sdktrace.TraceIDRatioBased(ratio), nil
	}
	return nil, fmt.Errorf("%s=%q is not a sampler huddle takes: want one of %s", envSampler, name, strings.Join(samplers, ", "))
}

// sampled reports whether the chain of trace id tid is exported.
func sampled(s sdktrace.Sampler, tid oteltrace.TraceID) bool {
	r := s.ShouldSample(sdktrace.SamplingParameters{ParentContext: context.Background(), TraceID: tid})
	return r.Decision == sdktrace.RecordAndSample
}
