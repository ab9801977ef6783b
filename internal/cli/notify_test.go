package cli

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/internal/testkit/dirlead"
	"huddle/internal/testkit/dirrecords"
	"huddle/protocol"
	"huddle/team"
)

// hookPosts is a loopback webhook receiver: the JSON bodies it was posted.
type hookPosts struct {
	mu    sync.Mutex
	posts []map[string]any
}

func (h *hookPosts) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		m = map[string]any{"unreadable": string(b)}
	}
	h.mu.Lock()
	h.posts = append(h.posts, m)
	h.mu.Unlock()
}

func (h *hookPosts) about(key, value string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, p := range h.posts {
		if p[key] == value {
			n++
		}
	}
	return n
}

// TestHeadlessUpNotifiesAWebhookOncePerRequest: huddle up --headless
// --notify-url posts one JSON object for a plan that waits for the lead
// and one for a crash, never again for them and never for a request
// decided before the team started.
func TestHeadlessUpNotifiesAWebhookOncePerRequest(t *testing.T) {
	hook := &hookPosts{}
	srv := httptest.NewServer(hook)
	defer srv.Close()
	dir := writeTeam(t, team.Team{Name: "notified", Members: []team.MemberSpec{
		{Name: "alice", Role: "test", Runtime: team.RuntimeSpec{Kind: team.RuntimeScript, Steps: []team.Step{
			{Plan: "Migrate the ledger\nthen index it"}, {Say: "lead", Text: "migrated"}, {Wait: team.Duration(time.Hour)},
		}}},
		{Name: "bob", Role: "test", Runtime: team.RuntimeSpec{Kind: team.RuntimeExec, Command: []string{"sh", "-c", "echo broken >&2; exit 3"}}},
	}})
	old := protocol.NewRequest(protocol.KindPlan, "pl-0000000old01", "alice", protocol.Lead, time.Now().Add(-time.Hour), time.Hour)
	old.Plan = "decided already"
	if err := dirrecords.CreateRequest(dir, &old); err != nil {
		t.Fatal(err)
	}
	if _, err := dirlead.Decide(dir, old.ID, protocol.EventApprove, "", ""); err != nil {
		t.Fatal(err)
	}
	up := startUpWith(t, "up", "--headless", "--dir", dir, "--notify-url", srv.URL+"/hook?auth=tk_s3cret", "--notify-json")
	testkit.WaitFor(t, 20*time.Second, "a post for alice's plan and one for bob's crash", func() bool {
		return hook.about("kind", "plan") == 1 && hook.about("kind", "crash") == 1
	})
	var id string
	for _, p := range hook.posts {
		if p["kind"] == "plan" {
			id, _ = p["id"].(string)
			if p["member"] != "alice" || p["line"] != "Migrate the ledger" || p["show"] != "huddle show "+id || p["team"] != "notified" {
				t.Fatalf("the plan's post: %v", p)
			}
		}
	}
	if _, err := dirlead.Decide(dir, id, protocol.EventApprove, "", ""); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "alice's message after the approval", func() bool {
		return up.saw(func(e map[string]any) bool { return e["event"] == "message_delivered" && e["from"] == "alice" })
	})
	mustHuddle(t, "send", "alice", "one more turn", "--dir", dir) // more snapshots with the same facts
	testkit.WaitFor(t, 10*time.Second, "the message delivered", func() bool {
		return up.saw(func(e map[string]any) bool { return e["event"] == "message_delivered" && e["to"] == "alice" })
	})
	if n := hook.about("id", id); n != 1 {
		t.Fatalf("%d posts for %s, want 1", n, id)
	}
	if n := hook.about("id", old.ID); n != 0 {
		t.Fatalf("%d posts for a request decided before the start", n)
	}
	if n := hook.about("kind", "crash"); n != 1 {
		t.Fatalf("%d posts for bob's crash, want 1", n)
	}
}

// TestNotifyFlagsRefuseBadInput: a bad kind, a URL that is not http(s),
// or --notify-json without a URL is a usage error, the URL's token not
// printed.
func TestNotifyFlagsRefuseBadInput(t *testing.T) {
	dir := demoTeam(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--notify", "plan,coffee"}, `--notify: "coffee" is no kind of notification`},
		{[]string{"--notify-url", "ftp://u:hunter2@host/x"}, "--notify-url ftp://***@host/x: want an http:// or https:// URL"},
		{[]string{"--notify-json"}, "--notify-json goes with --notify-url"},
	} {
		args := append([]string{"up", "--headless", "--dir", dir}, c.args...)
		r := huddle(t, args...)
		r.wantError(t, ExitUsage, c.want, args...)
		if strings.Contains(r.stderr, "hunter2") {
			t.Fatalf("%v printed the password: %s", args, r.stderr)
		}
	}
}
