package supervisor

import (
	"context"
	"huddle/internal/testkit"
	"huddle/internal/testkit/teamkit"
	"testing"
	"time"
)

// start runs k's team until the test ends; Tick is 20 ms unless opts says.
func start(t *testing.T, k *teamkit.Kept, opts Options) *events {
	t.Helper()
	if opts.Tick == 0 {
		opts.Tick = 20 * time.Millisecond
	}
	ev := &events{}
	opts.OnEvent = ev.add
	teamkit.Run(t, func(ctx context.Context) error { return Run(ctx, k.St, k.Dir, opts) })
	testkit.WaitFor(t, 10*time.Second, "team_started", func() bool { return ev.has(func(e Event) bool { return e["event"] == "team_started" }) })
	return ev
}
