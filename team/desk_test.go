package team_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/internal/testkit/teamkit"
	"huddle/protocol"
	"huddle/team"
)

// TestDeskAsksTheLeadRemembersTheSessionAndGivesUp, on both stores: a
// session's question is a permission request of its member, with the use
// drawn and the session's rule; what the lead allows for the session is
// allowed again at once, a record naming the allowance; one nobody
// answers within the wait is cancelled, never allowed; a denial keeps the
// lead's words.
func TestDeskAsksTheLeadRemembersTheSessionAndGivesUp(t *testing.T) {
	desk := team.Team{Name: "desk", Desk: true}
	teamkit.OnEachStore(t, desk, func(t *testing.T, k *teamkit.Kept) {
		ctx := context.Background()
		q := team.DeskAsk{Agent: "claude", Session: "4C8A7D24-5324-450f", Cwd: "/work/repo", Tool: "Write",
			Input: json.RawMessage(`{"file_path":"/work/repo/src/a.go","content":"package a\n"}`)}
		ask := func(q team.DeskAsk, wait time.Duration) chan *protocol.Request {
			got := make(chan *protocol.Request, 1)
			go func() {
				r, err := team.AskDesk(ctx, k.St, q, wait)
				if err != nil || r == nil {
					t.Errorf("AskDesk: %v", err)
					r = &protocol.Request{}
				}
				got <- r
			}()
			return got
		}
		pending := func() protocol.Request {
			var p protocol.Request
			testkit.WaitFor(t, 10*time.Second, "a pending question", func() bool {
				for _, r := range k.Requests() {
					if r.Status == protocol.RequestPending {
						p = r
						return true
					}
				}
				return false
			})
			return p
		}

		first := ask(q, time.Minute)
		p := pending()
		if p.From != "claude-5324450f" || p.Kind != protocol.KindPermission || p.Permission.Tool != "Write" || p.Rule != "Edit(src/**)" || !strings.Contains(p.Permission.Drawn, "src/a.go") {
			t.Errorf("the question: %+v %+v", p, p.Permission)
		}
		if _, err := team.AllowForSession(ctx, k.St, p.ID, protocol.Lead); err != nil {
			t.Fatal(err)
		}
		if r := <-first; r.Status != protocol.RequestAllowed || r.Scope != protocol.ScopeSession {
			t.Errorf("the first answer: %+v", r)
		}
		q2 := q
		q2.Input = json.RawMessage(`{"file_path":"/work/repo/src/b.go","content":"package a\n"}`)
		if r := <-ask(q2, time.Minute); r.Status != protocol.RequestAllowed || r.ResolvedBy != "lead (for the session: Edit(src/**))" {
			t.Errorf("the same rule again: %+v", r)
		}
		other := q2
		other.Session = "99990000-aaaa"
		if r := <-ask(other, 50*time.Millisecond); r.Status != protocol.RequestCancelled || !strings.Contains(r.ResponseReason, "nobody answered within 50ms") {
			t.Errorf("another session, unanswered: %+v", r)
		}
		bash := q
		bash.Tool, bash.Input = "Bash", json.RawMessage(`{"command":"rm -rf build"}`)
		denied := ask(bash, time.Minute)
		p = pending()
		if _, err := team.Decide(ctx, k.St, p.ID, protocol.EventReject, "keep build/", protocol.Lead); err != nil {
			t.Fatal(err)
		}
		if r := <-denied; r.Status != protocol.RequestDenied || r.Feedback != "keep build/" {
			t.Errorf("the denial: %+v", r)
		}
		m := k.Member("claude-5324450f")
		if m == nil || m.Counters.Permissions != 3 || m.Status != protocol.MemberIdle || !strings.Contains(m.Role, "/work/repo") || !strings.HasPrefix(m.Activity, "denied: ") {
			t.Errorf("the session's member: %+v", m)
		}
	})
}

// TestDeskMemberNamesEachSession: two Codex threads started in the same
// minute (UUIDv7 ids, their first 8 digits a clock) are two members; a
// Claude Code session (UUIDv4) is named by its tail too.
func TestDeskMemberNamesEachSession(t *testing.T) {
	for _, c := range []struct{ agent, session, want string }{
		{"codex", "01a237ee-a5a7-71b3-954b-665ab2d258ff", "codex-b2d258ff"},
		{"codex", "01a237ee-38c1-78d3-abf9-f14763b66a3e", "codex-63b66a3e"},
		{"claude", "ffa5b40b-58e5-4afa-b056-93259a7fcc26", "claude-9a7fcc26"},
		{"claude", "AB-c", "claude-abc"},
	} {
		if got, err := team.DeskMember(c.agent, c.session); err != nil || got != c.want {
			t.Errorf("DeskMember(%q, %q) = %q, %v; want %q", c.agent, c.session, got, err, c.want)
		}
	}
}

// TestDeskRefusesBadQuestions: a question without a tool, with an input
// that is not JSON, or from a session id with nothing to name it by opens
// nothing.
func TestDeskRefusesBadQuestions(t *testing.T) {
	teamkit.OnEachStore(t, team.Team{Name: "desk", Desk: true}, func(t *testing.T, k *teamkit.Kept) {
		for _, q := range []team.DeskAsk{
			{Agent: "claude", Session: "abc", Tool: ""},
			{Agent: "claude", Session: "abc", Tool: "Bash", Input: json.RawMessage(`{"command":`)},
			{Agent: "claude", Session: "---", Tool: "Bash"},
		} {
			if _, err := team.AskDesk(context.Background(), k.St, q, time.Minute); err == nil {
				t.Errorf("%+v: accepted", q)
			}
		}
		if rs := k.Requests(); len(rs) != 0 {
			t.Errorf("bad questions opened %d requests", len(rs))
		}
	})
	if err := (&team.Team{Name: "t"}).Validate(); err == nil || !strings.Contains(err.Error(), "at least one") {
		t.Errorf("a team with no member: %v", err)
	}
	if err := (&team.Team{Name: "desk", Desk: true}).Validate(); err != nil {
		t.Errorf("a desk with no member: %v", err)
	}
	desk := filepath.Join(t.TempDir(), "desk")
	for range 2 { // made, then found
		if err := team.MakeDesk(desk); err != nil {
			t.Fatalf("MakeDesk: %v", err)
		}
	}
	notDesk := t.TempDir()
	if err := team.Init(notDesk); err != nil {
		t.Fatal(err)
	}
	if err := team.MakeDesk(notDesk); err == nil || !strings.Contains(err.Error(), "not a desk") {
		t.Errorf("MakeDesk on a team: %v", err)
	}
}
