package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/internal/testkit/files"
	"huddle/internal/testkit/teamkit"
	"huddle/ipc"
	"huddle/ipc/blueprint"
	"huddle/team"
	"huddle/team/supervisor"
)

// TestCancelReachesACalleeTwoHopsAway: an HTTP caller invokes s1.act, whose
// action calls s2.act, which takes its time. Cancelling the execution
// cancels s1's answer, which cancels its onward call, which cancels s2's.
func TestCancelReachesACalleeTwoHopsAway(t *testing.T) {
	dir := t.TempDir()
	s1 := teamkit.Scripted("s1", "", team.Step{Wait: team.Duration(time.Hour)})
	s1.IPC = "s1.puruto-ipc.json"
	os.WriteFile(filepath.Join(dir, s1.IPC), []byte(`{"allowed_targets":["s2"]}`), 0o600)
	s1.Actions = map[string]team.ActionSpec{"act": {Reply: "s1 done", Call: &team.CallSpec{Target: "s2", Action: "act"}}}
	s2 := teamkit.Scripted("s2", "", team.Step{Wait: team.Duration(time.Hour)})
	s2.Actions = map[string]team.ActionSpec{"act": {Reply: "s2 done", Delay: team.Duration(time.Minute)}}
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: []team.MemberSpec{s1, s2}})
	os.WriteFile(filepath.Join(dir, ".puruto-ipc.json"), []byte(`{"allowed_targets":["s1"]}`), 0o600)
	cancelled := runTeam(t, dir)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	policy, err := ipc.LoadPolicy(ServePolicyPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	backend, err := NewServeBackend(ctx, files.Open(t, dir), policy)
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Close()
	srv, err := blueprint.NewServer(blueprint.ServerConfig{Backend: backend})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()

	resp, err := http.Post(hs.URL+"/invoke", "application/json",
		strings.NewReader(`{"caller":{"id":"remote","type":"test"},"skill_id":"s1.act","inputs":{"prompt":"go"}}`))
	if err != nil {
		t.Fatal(err)
	}
	var acc blueprint.Accepted
	json.NewDecoder(resp.Body).Decode(&acc)
	resp.Body.Close()
	testkit.WaitFor(t, 10*time.Second, "s2 to be working on it", func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "inbox", "s2.jsonl"))
		return strings.Contains(string(b), `"invocation_request"`)
	})
	resp, err = http.Post(hs.URL+"/cancel/"+acc.ExecutionID, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, m := range []string{"s1", "s2"} {
		testkit.WaitFor(t, 10*time.Second, m+"'s answer cancelled", func() bool {
			return cancelled(m)
		})
	}
	c := &blueprint.Client{BaseURL: hs.URL}
	st, err := c.Status(ctx, acc.ExecutionID)
	if err != nil || st.Status != blueprint.StateCancelled {
		t.Fatalf("execution after cancel: %+v %v", st, err)
	}
}

// runTeam runs the team in dir until the test ends, and says whether a
// member's answer to an invocation was cancelled.
func runTeam(t *testing.T, dir string) (cancelled func(member string) bool) {
	var mu sync.Mutex
	seen := map[string]bool{}
	opts := supervisor.Options{Tick: 20 * time.Millisecond, OnEvent: func(e supervisor.Event) {
		if e["event"] == "invocation_cancelled" {
			mu.Lock()
			seen[fmt.Sprint(e["member"])] = true
			mu.Unlock()
		}
	}}
	st := files.Open(t, dir)
	teamkit.Run(t, func(ctx context.Context) error { return supervisor.Run(ctx, st, dir, opts) })
	return func(member string) bool { mu.Lock(); defer mu.Unlock(); return seen[member] }
}
