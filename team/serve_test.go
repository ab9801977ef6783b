package team

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/ipc"
	"huddle/ipc/blueprint"
)

// TestCancelReachesACalleeTwoHopsAway: an HTTP caller invokes s1.act, whose
// action calls s2.act, which takes its time. Cancelling the execution
// cancels s1's answer, which cancels its onward call, which cancels s2's.
func TestCancelReachesACalleeTwoHopsAway(t *testing.T) {
	dir := t.TempDir()
	s1 := withPolicy(t, dir, scripted("s1", "", Step{Wait: Duration(time.Hour)}), `{"allowed_targets":["s2"]}`)
	s1.Actions = map[string]ActionSpec{"act": {Reply: "s1 done", Call: &CallSpec{Target: "s2", Action: "act"}}}
	s2 := scripted("s2", "", Step{Wait: Duration(time.Hour)})
	s2.Actions = map[string]ActionSpec{"act": {Reply: "s2 done", Delay: Duration(time.Minute)}}
	writeTeam(t, dir, Team{Name: "t", Members: []MemberSpec{s1, s2}})
	os.WriteFile(filepath.Join(dir, ".puruto-ipc.json"), []byte(`{"allowed_targets":["s1"]}`), 0o600)
	ev := startTeam(t, dir, Options{})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	policy, err := ipc.LoadPolicy(ServePolicyPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	backend, err := NewServeBackend(ctx, dirStore(t, dir), policy)
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
			return ev.has(func(e Event) bool { return e["event"] == "invocation_cancelled" && e["member"] == m })
		})
	}
	c := &blueprint.Client{BaseURL: hs.URL}
	st, err := c.Status(ctx, acc.ExecutionID)
	if err != nil || st.Status != blueprint.StateCancelled {
		t.Fatalf("execution after cancel: %+v %v", st, err)
	}
}
