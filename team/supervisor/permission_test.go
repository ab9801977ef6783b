package supervisor

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/internal/testkit/teamkit"
	"huddle/permit"
	"huddle/protocol"
	"huddle/team"
)

func init() {
	testRoles["asker"] = runAsker
	testRoles["patient"] = runPatient
}

// permLine is a permission line of id asking for tool with input.
func permLine(id, tool, input string) string {
	return fmt.Sprintf(`{"action":"permission","request_id":%q,"tool":%q,"input":%s,"tool_use_id":"toolu_%s"}`, id, tool, input, id[3:])
}

// runAsker puts a plan forward and asks to edit before it is approved;
// once the plan is approved it asks for a command its rules allow, one
// they deny, an edit the lead allows for the session, then another edit
// there (which the session allows), and a fetch. Every permission_response
// it reads it sends to the lead as "ID allowed|denied FEEDBACK".
func runAsker() int {
	out := json.NewEncoder(os.Stdout)
	say := func(l string) { fmt.Println(l) }
	say(`{"action":"plan","plan":"edit src/a.go and src/b.go"}`)
	say(permLine("pm-000000000007", "Edit", `{"file_path":"src/a.go","old_string":"a","new_string":"b"}`))
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 64<<10), protocol.MaxLine)
	for sc.Scan() {
		m, err := protocol.Decode(sc.Bytes(), protocol.Fallback{})
		if err != nil {
			continue
		}
		switch m.Type {
		case protocol.TypePlanApprovalResponse:
			if m.Approved() {
				say(permLine("pm-000000000001", "Bash", `{"command":"go test ./..."}`))
				say(permLine("pm-000000000002", "Bash", `{"command":"rm -rf build"}`))
				say(permLine("pm-000000000003", "Edit", `{"file_path":"src/a.go","old_string":"a","new_string":"b"}`))
			}
		case protocol.TypePermissionResponse:
			word := "denied"
			if m.Approved() {
				word = "allowed"
			}
			_ = out.Encode(protocol.ExecLine{Kind: "send", To: protocol.Lead, Content: fmt.Sprintf("%s %s %s", m.RequestID, word, m.Feedback)})
			if m.RequestID == "pm-000000000003" {
				say(permLine("pm-000000000004", "Write", `{"file_path":"src/b.go","content":"package b\n"}`))
				say(permLine("pm-000000000005", "WebFetch", `{"url":"https://example.com/doc","prompt":"read it"}`))
			}
		}
	}
	return 0
}

// runPatient asks once and reports the answer, as runAsker does.
func runPatient() int {
	fmt.Println(permLine("pm-0000000000aa", "Bash", `{"command":"make deploy"}`))
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 64<<10), protocol.MaxLine)
	for sc.Scan() {
		m, err := protocol.Decode(sc.Bytes(), protocol.Fallback{})
		if err == nil && m.Type == protocol.TypePermissionResponse {
			fmt.Printf(`{"action":"send","to":"lead","content":%q}`+"\n", fmt.Sprintf("%s %v %s", m.RequestID, m.Approved(), m.Feedback))
		}
	}
	return 0
}

// TestPermissionsDecidedByGateRulesSessionAndLead: an exec agent's
// permission lines become permission requests, each decided once and told
// to the agent: an edit before the plan is approved is denied by the plan
// gate; team.json's rules allow and deny without asking; what the lead
// allows for the session (A) allows the same again; what no rule covers
// waits for the lead, who denies it with a reason the agent reads.
func TestPermissionsDecidedByGateRulesSessionAndLead(t *testing.T) {
	dir := t.TempDir()
	exe, _ := os.Executable()
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: []team.MemberSpec{{
		Name:        "coder",
		Runtime:     team.RuntimeSpec{Kind: team.RuntimeExec, Command: []string{"/usr/bin/env", teamkit.RoleEnv + "=asker", exe}},
		Permissions: &permit.Rules{Allow: []string{"Bash(go test:*)"}, Deny: []string{"Bash(rm:*)"}},
	}}})
	startTeam(t, dir, Options{})
	k := teamkit.FilesKept(t, dir)
	st := k.St
	ctx := context.Background()
	request := func(id string) *protocol.Request {
		r, err := st.Request(ctx, id)
		if err != nil {
			return nil
		}
		return r
	}
	final := func(id string) *protocol.Request {
		var r *protocol.Request
		testkit.WaitFor(t, 20*time.Second, id+" final", func() bool {
			r = request(id)
			return r != nil && r.Status.IsTerminal()
		})
		return r
	}
	told := func(line string) {
		testkit.WaitFor(t, 20*time.Second, "the agent told "+line, func() bool {
			return strings.Contains(k.LeadMessages(t), line)
		})
	}

	gated := final("pm-000000000007")
	if gated.Status != protocol.RequestDenied || gated.ResolvedBy != "huddle (plan gate)" || !strings.Contains(gated.Feedback, "is not approved") {
		t.Fatalf("edit before the plan's approval: %s by %s (%q); want denied by the plan gate", gated.Status, gated.ResolvedBy, gated.Feedback)
	}
	told("pm-000000000007 denied plan ")
	var plan *protocol.Request
	testkit.WaitFor(t, 20*time.Second, "the plan pending", func() bool {
		plan = k.PendingPlan("coder")
		return plan != nil
	})
	if _, err := team.Decide(ctx, st, plan.ID, protocol.EventApprove, "", protocol.Lead); err != nil {
		t.Fatal(err)
	}

	if r := final("pm-000000000001"); r.Status != protocol.RequestAllowed || r.ResolvedBy != "rule Bash(go test:*)" || r.Scope != protocol.ScopeOnce {
		t.Errorf("go test: %s by %s scope %q; want allowed once by the allow rule", r.Status, r.ResolvedBy, r.Scope)
	}
	if r := final("pm-000000000002"); r.Status != protocol.RequestDenied || r.ResolvedBy != "rule Bash(rm:*)" || !strings.Contains(r.Feedback, "Bash(rm:*)") {
		t.Errorf("rm: %s by %s (%q); want denied by the deny rule, saying which", r.Status, r.ResolvedBy, r.Feedback)
	}
	told("pm-000000000001 allowed")
	told("pm-000000000002 denied denied by the rule Bash(rm:*) of team.json")

	var edit *protocol.Request
	testkit.WaitFor(t, 20*time.Second, "the edit waiting for the lead", func() bool {
		edit = request("pm-000000000003")
		return edit != nil
	})
	if edit.Status != protocol.RequestPending || edit.Permission == nil || edit.Permission.Tool != "Edit" || edit.Rule == "" || edit.Permission.Drawn != "edit src/a.go\n- a\n+ b" {
		t.Fatalf("edit src/a.go: %+v; want pending, the Edit drawn, a session rule offered", edit)
	}
	asked := false
	for _, m := range k.MessagesTo(t, protocol.Lead) {
		asked = asked || (m.Type == protocol.TypePermissionRequest && m.RequestID == edit.ID && m.Content == edit.Permission.Summary)
	}
	if !asked {
		t.Errorf("the lead's inbox has no permission_request for %s:\n%s", edit.ID, k.LeadMessages(t))
	}
	if _, err := team.AllowForSession(ctx, st, edit.ID, protocol.Lead); err != nil {
		t.Fatal(err)
	}
	told("pm-000000000003 allowed")
	if r := final("pm-000000000004"); r.Status != protocol.RequestAllowed || r.ResolvedBy != "lead (for the session: "+edit.Rule+")" {
		t.Errorf("write src/b.go after %s was allowed for the session: %s by %s", edit.Rule, r.Status, r.ResolvedBy)
	}
	told("pm-000000000004 allowed")

	var fetch *protocol.Request
	testkit.WaitFor(t, 20*time.Second, "the fetch waiting for the lead", func() bool {
		fetch = request("pm-000000000005")
		return fetch != nil
	})
	if fetch.Status != protocol.RequestPending {
		t.Fatalf("the fetch is %s by %s; no rule covers it, the lead decides", fetch.Status, fetch.ResolvedBy)
	}
	if _, err := team.Decide(ctx, st, fetch.ID, protocol.EventReject, "no network today", protocol.Lead); err != nil {
		t.Fatal(err)
	}
	told("pm-000000000005 denied no network today")
	testkit.WaitFor(t, 20*time.Second, "six permissions counted", func() bool {
		return memberRecord(t, dir, "coder").Counters.Permissions == 6
	})
}

// TestPermissionDeniedAtItsDeadline: a permission nobody answers is denied
// at the team's permission deadline, and the agent is told why.
func TestPermissionDeniedAtItsDeadline(t *testing.T) {
	dir := t.TempDir()
	exe, _ := os.Executable()
	teamkit.WriteTeam(t, dir, team.Team{Name: "t",
		Settings: team.Settings{PermissionDeadline: team.Duration(200 * time.Millisecond)},
		Members: []team.MemberSpec{{
			Name:    "deployer",
			Runtime: team.RuntimeSpec{Kind: team.RuntimeExec, Command: []string{"/usr/bin/env", teamkit.RoleEnv + "=patient", exe}},
		}}})
	startTeam(t, dir, Options{})
	k := teamkit.FilesKept(t, dir)
	testkit.WaitFor(t, 20*time.Second, "the agent told of the deadline", func() bool {
		return strings.Contains(k.LeadMessages(t), "pm-0000000000aa false nobody answered within 200ms")
	})
	r, err := k.St.Request(context.Background(), "pm-0000000000aa")
	if err != nil || r.Status != protocol.RequestDenied || r.ResolvedBy != "huddle" {
		t.Fatalf("the unanswered permission: %+v, %v; want denied by huddle", r, err)
	}
}
