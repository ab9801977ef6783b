package cli

import (
	"strings"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/internal/testkit/dirrecords"
	"huddle/protocol"
)

// TestDemoTeamEndToEnd runs the demo team that `huddle init` writes with
// the real binary and drives it from other processes, as a person would.
func TestDemoTeamEndToEnd(t *testing.T) {
	dir := demoTeam(t)
	up := startUp(t, dir)
	var started, opened time.Time
	var firstPlan string
	testkit.WaitFor(t, 10*time.Second, "a plan from reservas", func() bool {
		up.mu.Lock()
		defer up.mu.Unlock()
		for _, e := range up.events {
			if started.IsZero() {
				started, _ = time.Parse(time.RFC3339Nano, e["ts"].(string))
			}
			if e["event"] == "request_opened" && e["from"] == "reservas" && e["kind"] == "plan" {
				opened, _ = time.Parse(time.RFC3339Nano, e["ts"].(string))
				firstPlan = e["id"].(string)
				return true
			}
		}
		return false
	})
	if d := opened.Sub(started); d > 2*time.Second {
		t.Errorf("the first plan waited for the human %v after start, want within 2s", d)
	}

	// Reject: a revised plan with the feedback arrives under a new id.
	mustHuddle(t, "reject", firstPlan, "--feedback", "room 2, not room 4", "--dir", dir)
	var revised string
	testkit.WaitFor(t, 10*time.Second, "the revised plan", func() bool {
		for _, r := range mustRequests(t, dir) {
			if r.From == "reservas" && r.Status == protocol.RequestPending && r.ID != firstPlan && strings.Contains(r.Plan, "room 2, not room 4") {
				revised = r.ID
				return true
			}
		}
		return false
	})

	// The exec teammate (the built-in echo agent) answers a message.
	mustHuddle(t, "send", "auditor", "check invoice 123", "--dir", dir)
	testkit.WaitFor(t, 10*time.Second, "the auditor's echo", func() bool {
		for _, m := range inboxLines(t, dir, protocol.Lead) {
			if m.From == "auditor" && m.Content == "echo: check invoice 123" {
				return true
			}
		}
		return false
	})

	// Approve, then ask reservas to stop while it works: it refuses.
	mustHuddle(t, "approve", revised, "--dir", dir)
	testkit.WaitFor(t, 10*time.Second, "reservas at work", func() bool {
		m, err := dirrecords.LoadMember(dir, "reservas")
		return err == nil && m.Status == protocol.MemberWorking && m.Activity == "checking availability for Friday"
	})
	id := strings.TrimSpace(mustHuddle(t, "shutdown", "reservas", "--reason", "end of day", "--dir", dir).stdout)
	testkit.WaitFor(t, 10*time.Second, "the answer to the shutdown", func() bool { return loadRequest(t, dir, id).Status.IsTerminal() })
	if r := loadRequest(t, dir, id); r.Status != protocol.RequestRejected || r.ResolvedBy != "reservas" || r.ResponseReason == "" {
		t.Fatalf("shutdown mid-work: %+v", r)
	}
	testkit.WaitFor(t, 10*time.Second, "the rejection in the event stream", func() bool {
		return up.saw(func(e map[string]any) bool {
			return e["event"] == "request_resolved" && e["id"] == id && e["status"] == "rejected"
		})
	})
}

func mustRequests(t *testing.T, dir string) []protocol.Request {
	t.Helper()
	rs, err := dirrecords.ListRequests(dir)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}
