package team

import (
	"os"
	"testing"
	"time"

	"huddle/internal/testkit/files"
	"huddle/protocol"
	"huddle/teamdir"
)

// The records this package's tests start from, written through the team
// directory's files store (internal/testkit/dirrecords for the other
// packages' tests, which this package's cannot import).

func planRequest(id, from string, created time.Time) *protocol.Request {
	r := protocol.NewRequest(protocol.KindPlan, id, from, protocol.Lead, created, 10*time.Minute)
	r.Plan = "plan of " + from
	return &r
}

func shutdownRequest(id, to string, created time.Time) *protocol.Request {
	r := protocol.NewRequest(protocol.KindShutdown, id, protocol.Lead, to, created, 2*time.Minute)
	r.Reason = "done for today"
	return &r
}

func mustCreate(t *testing.T, dir string, r *protocol.Request) {
	t.Helper()
	if err := files.Open(t, dir).CreateRequest(t.Context(), r); err != nil {
		t.Fatalf("CreateRequest %s: %v", r.ID, err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func recordPath(t *testing.T, dir, id string) string {
	t.Helper()
	p, err := teamdir.RequestPath(dir, id)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// decisionPath is requests/<id>.decision of a valid id.
func decisionPath(dir, id string) string {
	p, err := teamdir.DecisionPath(dir, id)
	if err != nil {
		panic(err)
	}
	return p
}
