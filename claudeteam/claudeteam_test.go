package claudeteam

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/protocol"
)

func TestRosterAndStatus(t *testing.T) {
	root := t.TempDir()
	writeConfig(t, root, "alpha", "alice", "bob", "carol")
	t0 := time.Now().Add(-time.Minute)
	lead := inbox(root, "alpha", LeadName)
	claudeAppend(t, lead, entry("alice", textOf(map[string]any{"type": "idle_notification", "from": "alice", "timestamp": Stamp(t0), "idleReason": "available"}), t0))
	claudeAppend(t, lead, entry("bob", textOf(map[string]any{"type": "idle_notification", "from": "bob", "timestamp": Stamp(t0), "idleReason": "available"}), t0))
	claudeAppend(t, inbox(root, "alpha", "bob"), entry(LeadName, "please also write the tests", t0.Add(10*time.Second)))
	if err := os.MkdirAll(tasksDir(root, "alpha"), 0o700); err != nil {
		t.Fatal(err)
	}
	task := `{"id":"1","subject":"Write tests","activeForm":"Writing tests","status":"in_progress","owner":"bob","blocks":[],"blockedBy":[]}`
	if err := os.WriteFile(filepath.Join(tasksDir(root, "alpha"), "1.json"), []byte(task), 0o600); err != nil {
		t.Fatal(err)
	}

	s, err := Read(root, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	if s.Snapshot.TeamErr != "" || s.Snapshot.Team == nil || s.Snapshot.Team.Name != "alpha" {
		t.Fatalf("team: %+v err %q", s.Snapshot.Team, s.Snapshot.TeamErr)
	}
	var names []string
	for _, mv := range s.Snapshot.Members {
		names = append(names, mv.Record.Name)
	}
	if want := []string{LeadName, "alice", "bob", "carol"}; !slices.Equal(names, want) {
		t.Fatalf("roster %v, want %v", names, want)
	}
	if m := memberOf(s, "alice"); m.Status != protocol.MemberIdle || !strings.Contains(m.Activity, "available") {
		t.Errorf("alice: %+v, want idle (available)", m)
	}
	bob := memberOf(s, "bob")
	if bob.Status != protocol.MemberWorking || !strings.Contains(bob.Activity, "task #1: Writing tests") {
		t.Errorf("bob: %+v, want working on task #1", bob)
	}
	if m := memberOf(s, "carol"); m.Status != StatusUnknown {
		t.Errorf("carol: %+v, want unknown", m)
	}
	for _, mv := range s.Snapshot.Members {
		want := map[string]int{LeadName: 2, "bob": 1}[mv.Record.Name]
		if mv.Unread != want {
			t.Errorf("%s unread %d, want %d", mv.Record.Name, mv.Unread, want)
		}
		// A card counts the messages it lists: those in the member's
		// inbox, those it wrote.
		got, want2 := mv.Record.Counters, map[string]protocol.Counters{LeadName: {Received: 2, Sent: 1}, "alice": {Sent: 1}, "bob": {Received: 1, Sent: 1}}[mv.Record.Name]
		if got.Received != want2.Received || got.Sent != want2.Sent {
			t.Errorf("%s counts received %d sent %d, want %d and %d", mv.Record.Name, got.Received, got.Sent, want2.Received, want2.Sent)
		}
	}
	if len(s.Tasks) != 1 || s.Tasks[0].Owner != "bob" {
		t.Errorf("tasks %+v", s.Tasks)
	}
	if len(s.Snapshot.Messages) != 3 {
		t.Fatalf("%d messages, want 3", len(s.Snapshot.Messages))
	}
	if m := s.Snapshot.Messages[0].Msg; m.Type != protocol.TypeStatus || m.Status != protocol.MemberIdle || m.Content != "(available)" || m.From != "alice" || m.To != LeadName {
		t.Errorf("an idle notification shown as %+v", m)
	}
}

func TestPlanApprovalPendingThenResolved(t *testing.T) {
	root := t.TempDir()
	writeConfig(t, root, "alpha", "alice")
	o := observe(t, root, "alpha")
	now := time.Now()
	plan := textOf(map[string]any{"type": "plan_approval_request", "requestId": "plan-1@alice", "from": "alice", "timestamp": Stamp(now), "planFilePath": "/tmp/plan.md", "planContent": "1. read\n2. write"})
	claudeAppend(t, inbox(root, "alpha", LeadName), entry("alice", plan, now))
	testkit.WaitFor(t, 20*time.Second, "the plan pending", func() bool {
		r := request(o.Last(), "plan-1@alice")
		return r != nil && r.Status == protocol.RequestPending
	})
	s := o.Last()
	r := request(s, "plan-1@alice")
	if r.Kind != protocol.KindPlan || r.From != "alice" || r.To != LeadName || r.Plan != "1. read\n2. write" || s.Snapshot.Pending != 1 {
		t.Fatalf("plan request %+v pending %d", r, s.Snapshot.Pending)
	}
	resp := textOf(map[string]any{"type": "plan_approval_response", "requestId": "plan-1@alice", "approved": false, "feedback": "add tests", "timestamp": Stamp(now)})
	claudeAppend(t, inbox(root, "alpha", "alice"), entry(LeadName, resp, now.Add(time.Second)))
	testkit.WaitFor(t, 20*time.Second, "the plan rejected", func() bool {
		r := request(o.Last(), "plan-1@alice")
		return r != nil && r.Status == protocol.RequestRejected
	})
	r = request(o.Last(), "plan-1@alice")
	if r.ResolvedBy != LeadName || r.Feedback != "add tests" || len(r.History) != 2 || r.History[1].Note != "add tests" {
		t.Fatalf("resolved plan %+v", r)
	}
	if a := memberOf(o.Last(), "alice"); a.Status != protocol.MemberWorking || a.Activity != "got a plan answer from team-lead" {
		t.Errorf("alice after the answer: %+v", a)
	}
	if o.Last().Snapshot.Pending != 0 {
		t.Errorf("pending %d after the answer", o.Last().Snapshot.Pending)
	}
}

func TestPermissionRequestAndAnswer(t *testing.T) {
	root := t.TempDir()
	writeConfig(t, root, "alpha", "alice", "bob")
	o := observe(t, root, "alpha")
	now := time.Now()
	for _, id := range []string{"perm-1", "perm-2"} {
		req := textOf(map[string]any{"type": "permission_request", "request_id": id, "agent_id": "alice", "tool_name": "Bash", "tool_use_id": "toolu_" + id, "description": "list files", "input": map[string]any{"command": "ls"}, "permission_suggestions": []any{}})
		claudeAppend(t, inbox(root, "alpha", LeadName), entry("alice", req, now))
	}
	testkit.WaitFor(t, 20*time.Second, "two permission requests", func() bool { return o.Last().Snapshot.Pending == 2 })
	r := request(o.Last(), "perm-1")
	if r.Kind != KindPermission || r.From != "alice" || !strings.Contains(r.Reason, "tool Bash: list files") || !strings.Contains(r.Reason, `"command":"ls"`) {
		t.Fatalf("permission request %+v", r)
	}

	if _, err := AnswerPermission(t.Context(), root, "alpha", "perm-1", false, "huddle:tester", "not now"); err != nil {
		t.Fatal(err)
	}
	if _, err := AnswerPermission(t.Context(), root, "alpha", "perm-2", true, "huddle:tester", ""); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 20*time.Second, "both answered", func() bool { return o.Last().Snapshot.Pending == 0 })
	s := o.Last()
	if r := request(s, "perm-1"); r.Status != protocol.RequestDenied || r.ResolvedBy != "huddle:tester" || r.ResponseReason != "not now" {
		t.Errorf("perm-1 %+v", r)
	}
	if r := request(s, "perm-2"); r.Status != protocol.RequestAllowed || r.ResolvedBy != "huddle:tester" {
		t.Errorf("perm-2 %+v", r)
	}
	// The answers are in alice's inbox, from team-lead, in the shape of
	// Claude Code's permission_response.
	elems, err := readInbox(inbox(root, "alpha", "alice"))
	if err != nil || len(elems) != 2 {
		t.Fatalf("alice's inbox: %d elements, %v", len(elems), err)
	}
	var e Entry
	_ = json.Unmarshal(elems[0], &e)
	p, ok := parsePayload(e.Text)
	if !ok || e.From != LeadName || e.Read || p.Type != "permission_response" || p.ReqIDSnk != "perm-1" || p.Subtype != "error" || p.Error != "not now" || p.AnsweredBy != "huddle:tester" {
		t.Errorf("answer %+v %+v", e, p)
	}
	var already *AlreadyError
	if _, err := AnswerPermission(t.Context(), root, "alpha", "perm-1", true, "huddle:tester", ""); !errors.As(err, &already) {
		t.Errorf("a second answer: %v, want AlreadyError", err)
	}
	if _, err := AnswerPermission(t.Context(), root, "alpha", "nope", true, "huddle:tester", ""); err == nil {
		t.Error("an unknown id was answered")
	}
}

func TestUnknownTypesShownRaw(t *testing.T) {
	root := t.TempDir()
	writeConfig(t, root, "alpha", "alice")
	now := time.Now()
	lead := inbox(root, "alpha", LeadName)
	unknown := `{"type":"brand_new_thing","x":1}`
	claudeAppend(t, lead, entry("alice", unknown, now))
	claudeAppend(t, lead, entry("alice", "{not json at all", now.Add(time.Millisecond)))
	claudeAppend(t, lead, entry("alice", textOf(map[string]any{"type": "task_assignment", "taskId": "3", "subject": "Fix it", "assignedBy": "team-lead"}), now.Add(2*time.Millisecond)))
	claudeAppend(t, lead, entry("alice", textOf(map[string]any{"type": "shutdown_approved", "requestId": "no-such", "from": "alice"}), now.Add(3*time.Millisecond)))
	s, err := Read(root, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	if s.Snapshot.TeamErr != "" || len(s.Snapshot.Messages) != 4 {
		t.Fatalf("err %q, %d messages", s.Snapshot.TeamErr, len(s.Snapshot.Messages))
	}
	m := s.Snapshot.Messages[0].Msg
	if m.Type != protocol.TypeMessage || m.Content != unknown || m.Extra["claude_type"] != "brand_new_thing" {
		t.Errorf("unknown type shown as %+v", m)
	}
	if m := s.Snapshot.Messages[1].Msg; m.Content != "{not json at all" {
		t.Errorf("plain text %+v", m)
	}
	if m := s.Snapshot.Messages[2].Msg; m.Content != "task #3 assigned by team-lead: Fix it" {
		t.Errorf("task assignment %q", m.Content)
	}
	if len(s.Snapshot.Requests) != 0 {
		t.Errorf("an answer to no request made one: %+v", s.Snapshot.Requests)
	}
	if _, err := s.Snapshot.Messages[0].Msg.MarshalJSON(); err != nil {
		t.Error(err)
	}
}

func TestNewIndexes(t *testing.T) {
	cases := []struct {
		name      string
		prev, cur []string
		want      []int
	}{
		{"append", []string{"a", "b"}, []string{"a", "b", "c"}, []int{2}},
		{"same", []string{"a", "b"}, []string{"a", "b"}, nil},
		{"first read", nil, []string{"a", "a"}, []int{0, 1}},
		{"cleared", []string{"a", "b"}, nil, nil},
		{"cleared then new", []string{"a", "b"}, []string{"c"}, []int{0}},
		{"duplicate content appended", []string{"a"}, []string{"a", "a"}, []int{1}},
		{"reordered", []string{"a", "b"}, []string{"b", "a", "c"}, []int{2}},
		{"one dropped one added", []string{"a", "b"}, []string{"b", "c"}, []int{1}},
	}
	for _, c := range cases {
		if got := newIndexes(c.prev, c.cur); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestPickTeam(t *testing.T) {
	root := t.TempDir()
	if _, err := PickTeam(root, "", ""); err == nil || !strings.Contains(err.Error(), "no Claude Code team") {
		t.Errorf("no team: %v", err)
	}
	writeConfig(t, root, "alpha")
	if got, err := PickTeam(root, "", ""); err != nil || got != "alpha" {
		t.Errorf("one team: %q %v", got, err)
	}
	writeConfig(t, root, "beta")
	if _, err := PickTeam(root, "", ""); err == nil || !strings.Contains(err.Error(), "alpha, beta") {
		t.Errorf("two teams: %v", err)
	}
	for _, bad := range []string{"../x", ".hidden", "a/b"} {
		if _, err := PickTeam(root, bad, ""); err == nil {
			t.Errorf("team %q accepted", bad)
		}
	}
	if _, err := PickTeam(root, "gamma", ""); err == nil || !strings.Contains(err.Error(), "alpha, beta") {
		t.Errorf("unknown team: %v", err)
	}
}

// TestWhatClaudeCode2Writes: the shapes Claude Code 2.1.328 writes
// (../shared/notes/agent-formats.md, measured on the real CLI): an
// idle_notification says what the member did in result, not summary, and
// a team being removed is renamed <team>.deleted-<uuid> first, which is
// no team.
func TestWhatClaudeCode2Writes(t *testing.T) {
	root := t.TempDir()
	writeConfig(t, root, "alpha", "alice")
	writeConfig(t, root, "beta.deleted-6f1c2a9e-0b7d-4c1e-9a55-3e2f8d7c6b5a", "bob")
	t0 := time.Now().Add(-time.Minute)
	claudeAppend(t, inbox(root, "alpha", LeadName), entry("alice", textOf(map[string]any{"type": "idle_notification", "from": "alice", "timestamp": Stamp(t0), "idleReason": "available", "result": "wrote the parser"}), t0))
	s, err := Read(root, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	if m := memberOf(s, "alice"); m.Status != protocol.MemberIdle || !strings.Contains(m.Activity, "wrote the parser") {
		t.Errorf("alice: %+v, want idle with what she did", m)
	}
	if teams, err := Teams(root); err != nil || !slices.Equal(teams, []string{"alpha"}) {
		t.Errorf("teams %v, %v: want alpha alone", teams, err)
	}
}
