package supervisor

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/internal/testkit/teamkit"
	"huddle/protocol"
	"huddle/team"
)

func init() {
	testRoles["coder"] = runCoder
}

// runCoder is a coding agent: it tells the lead where it runs, puts a
// plan forward, and once the plan is approved writes its name into
// a.txt where it runs and goes idle (its turn ends). A message is a
// next turn: its content is appended to a.txt, then idle again.
func runCoder() int {
	out := json.NewEncoder(os.Stdout)
	act := func(l protocol.ExecLine) { _ = out.Encode(l) }
	name := os.Getenv("HUDDLE_MEMBER")
	cwd, _ := os.Getwd()
	act(protocol.ExecLine{Kind: "send", To: protocol.Lead, Content: "cwd=" + cwd})
	act(protocol.ExecLine{Kind: "plan", Plan: "write my name into a.txt"})
	edit := func(line string) {
		// Once: an approval the last run's process was handed before a
		// crash is handed to this one again (at least once).
		if b, _ := os.ReadFile("a.txt"); !strings.Contains(string(b), line+"\n") {
			_ = os.WriteFile("a.txt", append(b, line+"\n"...), 0o600)
		}
		act(protocol.ExecLine{Kind: "status", Status: string(protocol.MemberIdle), Activity: "done: " + line})
	}
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
				act(protocol.ExecLine{Kind: "status", Status: string(protocol.MemberWorking), Activity: "editing"})
				edit(name)
			}
		case protocol.TypeMessage:
			if !strings.HasPrefix(m.Content, "Changes requested") {
				continue // a merge, a discard or an expiry told: nothing to do
			}
			act(protocol.ExecLine{Kind: "status", Status: string(protocol.MemberWorking), Activity: "revising"})
			edit(strings.ReplaceAll(m.Content, "\n", " "))
		case protocol.TypeShutdownRequest:
			act(protocol.ExecLine{Kind: "shutdown_response", RequestID: m.RequestID, Approve: protocol.Bool(true)})
			return 0
		}
	}
	return 0
}

// gitRepo makes a real repository on main with a.txt committed, and
// .env ignored but present.
func gitRepo(t testing.TB) string {
	return testkit.GitRepo(t, map[string]string{"a.txt": "base\n", ".gitignore": ".env\n", ".env": "TOKEN=local\n"})
}

func readFile(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// coders is a team of coder agents working in worktrees of repo.
func coders(t testing.TB, repo string, ws team.WorkspaceSpec, names ...string) team.Team {
	t.Helper()
	exe, _ := os.Executable()
	on := true
	ws.Repo, ws.Worktree = repo, &on
	tm := team.Team{Name: "crew", WorkspaceDefaults: &ws}
	for _, n := range names {
		tm.Members = append(tm.Members, team.MemberSpec{Name: n, Role: "codes",
			Runtime: team.RuntimeSpec{Kind: team.RuntimeExec, Command: []string{"/usr/bin/env", teamkit.RoleEnv + "=coder", exe}}})
	}
	return tm
}

// approvePlan approves member's plan once it is pending.
func approvePlan(t *testing.T, k *teamkit.Kept, member string) {
	t.Helper()
	var plan *protocol.Request
	defer func() {
		if t.Failed() {
			t.Logf("member: %+v\nlead: %s\nlog: %s", k.Member(member), k.LeadMessages(t), readFile(filepath.Join(k.Dir, "members", member+".log")))
		}
	}()
	testkit.WaitFor(t, 20*time.Second, member+"'s plan pending", func() bool {
		plan = k.PendingPlan(member)
		return plan != nil
	})
	if _, err := team.Decide(context.Background(), k.St, plan.ID, protocol.EventApprove, "", protocol.Lead); err != nil {
		t.Fatal(err)
	}
}

// TestCodersWorkInTheirOwnWorktrees: two coders of one repository edit
// the same file, each in its own worktree on its own branch made from
// main, with the ignored .env copied in; main's file is untouched. A
// restart of the team lands each in the worktree it left, its edit there.
func TestCodersWorkInTheirOwnWorktrees(t *testing.T) {
	repo := gitRepo(t)
	dir := t.TempDir()
	teamkit.WriteTeam(t, dir, coders(t, repo, team.WorkspaceSpec{Include: []string{".env"}}, "alice", "bob"))
	k := teamkit.FilesKept(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	rt, err := Start(ctx, k.St, dir, Options{Tick: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "worktrees", "crew")
	for _, m := range []string{"alice", "bob"} {
		approvePlan(t, k, m)
	}
	for _, m := range []string{"alice", "bob"} {
		wt := filepath.Join(root, m)
		testkit.WaitFor(t, 20*time.Second, m+" edits a.txt in its worktree", func() bool { return readFile(filepath.Join(wt, "a.txt")) == "base\n"+m+"\n" })
		if !strings.Contains(k.LeadMessages(t), "cwd="+wt) {
			t.Errorf("%s does not run in %s:\n%s", m, wt, k.LeadMessages(t))
		}
		if got := testkit.Git(t, wt, "rev-parse", "--abbrev-ref", "HEAD"); got != "huddle/crew/"+m {
			t.Errorf("%s's worktree is on %s", m, got)
		}
		if got := testkit.Git(t, wt, "rev-parse", "--abbrev-ref", "@{upstream}"); got != "main" {
			t.Errorf("%s's branch tracks %q, want main", m, got)
		}
		if got := readFile(filepath.Join(wt, ".env")); got != "TOKEN=local\n" {
			t.Errorf("%s's .env: %q", m, got)
		}
	}
	if got := readFile(filepath.Join(repo, "a.txt")); got != "base\n" {
		t.Fatalf("main's a.txt changed: %q", got)
	}
	if st := testkit.Git(t, repo, "status", "--porcelain"); st != "" {
		t.Errorf("main's worktree is not clean: %q", st)
	}
	for _, m := range []string{"alice", "bob"} {
		pendingReview(t, k, m, "")
	}
	cancel()
	if err := rt.Wait(); err != nil {
		t.Fatal(err)
	}
	// Their changes wait for the lead across the stop: the reviews stay
	// pending while the plans and everything else of theirs is cancelled.
	for _, r := range k.Requests() {
		if r.Kind == protocol.KindReview && r.Status != protocol.RequestPending {
			t.Errorf("review %s of %s is %s by %s after the team stopped", r.ID, r.From, r.Status, r.ResolvedBy)
		}
	}

	// The team again: each coder lands in the worktree it left.
	startTeam(t, dir, Options{Tick: 20 * time.Millisecond})
	testkit.WaitFor(t, 20*time.Second, "both coders started again", func() bool {
		return strings.Count(k.LeadMessages(t), "cwd="+filepath.Join(root, "alice")) == 2 && strings.Count(k.LeadMessages(t), "cwd="+filepath.Join(root, "bob")) == 2
	})
	for _, m := range []string{"alice", "bob"} {
		if got := readFile(filepath.Join(root, m, "a.txt")); got != "base\n"+m+"\n" {
			t.Errorf("%s's edit after the restart: %q", m, got)
		}
	}
}

// TestWorktreeSurvivesACrash: the runtime is killed -9 after the coder's
// edit; the next runtime starts the coder in the same worktree, its edit
// still there, and makes no new one.
func TestWorktreeSurvivesACrash(t *testing.T) {
	repo := gitRepo(t)
	dir := t.TempDir()
	teamkit.WriteTeam(t, dir, coders(t, repo, team.WorkspaceSpec{}, "alice"))
	k := teamkit.FilesKept(t, dir)
	wt := filepath.Join(dir, "worktrees", "crew", "alice")
	first := startRuntimeProcess(t, dir)
	approvePlan(t, k, "alice")
	testkit.WaitFor(t, 20*time.Second, "alice's edit", func() bool { return readFile(filepath.Join(wt, "a.txt")) == "base\nalice\n" })
	kill9(t, first)
	startRuntimeProcess(t, dir)
	testkit.WaitFor(t, 20*time.Second, "alice started again in her worktree", func() bool {
		return strings.Count(k.LeadMessages(t), "cwd="+wt) == 2
	})
	if got := readFile(filepath.Join(wt, "a.txt")); got != "base\nalice\n" {
		t.Fatalf("alice's edit after the crash: %q", got)
	}
	if list := testkit.Git(t, repo, "worktree", "list"); strings.Count(list, "\n") != 1 {
		t.Fatalf("worktrees after the crash:\n%s", list)
	}
}

// TestSetupRunsOnlyOnceApproved: a worktree's setup waits for the lead,
// and the coder with it (nothing runs, no plan); approved, it runs once in
// the worktree and the coder starts there. A restart with the same script
// asks nothing and runs nothing; a changed script is asked again, and
// refused, the coder does not start.
func TestSetupRunsOnlyOnceApproved(t *testing.T) {
	repo := gitRepo(t)
	dir := t.TempDir()
	ws := team.WorkspaceSpec{Setup: []string{"echo ran >> setup.log"}}
	teamkit.WriteTeam(t, dir, coders(t, repo, ws, "alice"))
	k := teamkit.FilesKept(t, dir)
	wt := filepath.Join(dir, "worktrees", "crew", "alice")
	pendingSetup := func() *protocol.Request {
		var found *protocol.Request
		testkit.WaitFor(t, 20*time.Second, "a setup request", func() bool {
			for _, r := range k.Requests() {
				if r.Kind == protocol.KindSetup && r.Status == protocol.RequestPending {
					found = &r
					return true
				}
			}
			return false
		})
		return found
	}
	ctx, cancel := context.WithCancel(context.Background())
	rt, err := Start(ctx, k.St, dir, Options{Tick: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	su := pendingSetup()
	if su.From != "alice" || su.Setup == nil || !strings.Contains(su.Setup.Script, "echo ran >> setup.log") || su.Setup.Worktree != wt {
		t.Fatalf("setup request: %+v %+v", su, su.Setup)
	}
	testkit.WaitFor(t, 20*time.Second, "alice waiting for her setup's approval", func() bool {
		m := k.Member("alice")
		return m != nil && m.Status == protocol.MemberStarting && strings.Contains(m.Activity, su.ID)
	})
	if _, err := os.Stat(filepath.Join(wt, "setup.log")); !os.IsNotExist(err) || k.PendingPlan("alice") != nil {
		t.Fatalf("something ran before the setup's approval: %v, plan %v", err, k.PendingPlan("alice"))
	}
	if _, err := team.Decide(ctx, k.St, su.ID, protocol.EventApprove, "", protocol.Lead); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 20*time.Second, "alice's plan after her setup", func() bool { return k.PendingPlan("alice") != nil })
	if got := readFile(filepath.Join(wt, "setup.log")); got != "ran\n" {
		t.Fatalf("setup.log: %q", got)
	}
	if !team.ScriptApproved(dir, su.Setup.SHA256) {
		t.Fatal("the approval is not remembered")
	}
	cancel()
	if err := rt.Wait(); err != nil {
		t.Fatal(err)
	}

	// The same script: nothing asked, nothing run again.
	ctx, cancel = context.WithCancel(context.Background())
	rt, err = Start(ctx, k.St, dir, Options{Tick: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 20*time.Second, "alice started again", func() bool {
		return strings.Count(k.LeadMessages(t), "cwd="+wt) == 2
	})
	for _, r := range k.Requests() {
		if r.Kind == protocol.KindSetup && r.ID != su.ID {
			t.Fatalf("an unchanged script asked again: %s", r.ID)
		}
	}
	if got := readFile(filepath.Join(wt, "setup.log")); got != "ran\n" {
		t.Fatalf("setup ran again: %q", got)
	}
	cancel()
	if err := rt.Wait(); err != nil {
		t.Fatal(err)
	}

	// A changed script is asked again; refused, alice does not start.
	ws.Setup = []string{"echo changed >> setup.log"}
	if err := os.Remove(filepath.Join(dir, "team.json")); err != nil {
		t.Fatal(err)
	}
	teamkit.WriteTeam(t, dir, coders(t, repo, ws, "alice"))
	startTeam(t, dir, Options{Tick: 20 * time.Millisecond})
	again := pendingSetup()
	if again.ID == su.ID || !strings.Contains(again.Setup.Script, "echo changed") {
		t.Fatalf("the changed script's request: %+v", again)
	}
	if _, err := team.Decide(context.Background(), k.St, again.ID, protocol.EventReject, "no network in setup", protocol.Lead); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 20*time.Second, "alice crashed, saying why", func() bool {
		m := k.Member("alice")
		return m != nil && m.Status == protocol.MemberCrashed && strings.Contains(m.Error, "no network in setup")
	})
	if got := readFile(filepath.Join(wt, "setup.log")); got != "ran\n" {
		t.Fatalf("a refused script ran: %q", got)
	}
	if n := strings.Count(k.LeadMessages(t), "cwd="+wt); n != 2 {
		t.Fatalf("alice started %d times; the refused setup must keep her from starting", n)
	}
}

// pendingReview waits for member's pending review other than not.
func pendingReview(t *testing.T, k *teamkit.Kept, member, not string) *protocol.Request {
	t.Helper()
	var found *protocol.Request
	testkit.WaitFor(t, 20*time.Second, member+"'s review", func() bool {
		for _, r := range k.Requests() {
			if r.Kind == protocol.KindReview && r.From == member && r.Status == protocol.RequestPending && r.ID != not {
				found = &r
				return true
			}
		}
		return false
	})
	return found
}

// TestReviewChangesMergeAndConflict: two coders edit a.txt's same line in
// their worktrees; each turn's end opens a review of its branch, linked to
// its plan. Alice's is sent back with a line comment, which reaches her as
// her next turn; her revision is a new review, merged into main by
// fast-forward. Bob's then conflicts: it ends changes_requested naming
// a.txt, main is untouched by it, and bob is asked to resolve it on his
// branch.
func TestReviewChangesMergeAndConflict(t *testing.T) {
	repo := gitRepo(t)
	dir := t.TempDir()
	teamkit.WriteTeam(t, dir, coders(t, repo, team.WorkspaceSpec{}, "alice", "bob"))
	k := teamkit.FilesKept(t, dir)
	startTeam(t, dir, Options{Tick: 20 * time.Millisecond})
	ctx := context.Background()
	approvePlan(t, k, "alice")
	approvePlan(t, k, "bob")
	first := pendingReview(t, k, "alice", "")
	rv := first.Review
	if rv.Branch != "huddle/crew/alice" || rv.Base != "main" || rv.Files != 1 || rv.Added != 1 || rv.Deleted != 0 || rv.Plan == "" {
		t.Fatalf("alice's review: %+v", rv)
	}
	if p := k.Request(rv.Plan); p == nil || p.Kind != protocol.KindPlan || p.Status != protocol.RequestApproved {
		t.Fatalf("the review's plan %s: %+v", rv.Plan, p)
	}
	if got := testkit.Git(t, repo, "log", "-1", "--format=%an %s", rv.Head); got != "alice alice: alice" {
		t.Errorf("the reviewed commit: %q", got)
	}
	diff, err := team.ReviewDiff(ctx, first)
	if err != nil || !strings.Contains(string(diff), "+alice") {
		t.Fatalf("review diff: %v\n%s", err, diff)
	}

	if _, err := team.RequestChanges(ctx, k.St, first.ID, "say hello too", []team.Comment{{Path: "a.txt", Line: 2, Text: "lowercase is fine"}}, protocol.Lead); err != nil {
		t.Fatal(err)
	}
	second := pendingReview(t, k, "alice", first.ID)
	if got := readFile(filepath.Join(dir, "worktrees", "crew", "alice", "a.txt")); !strings.Contains(got, "a.txt:2: lowercase is fine") || !strings.Contains(got, "say hello too") {
		t.Fatalf("alice's revision does not carry the feedback and the comment: %q", got)
	}
	if r := k.Request(first.ID); r.Status != protocol.RequestChangesRequested || !strings.Contains(r.Feedback, "a.txt:2: lowercase is fine") {
		t.Fatalf("the first review: %s %q", r.Status, r.Feedback)
	}
	m, err := team.Merge(ctx, k.St, second.ID, protocol.Lead)
	if err != nil {
		t.Fatal(err)
	}
	if m.How != "fast-forward" || m.Request.Status != protocol.RequestMerged || testkit.Git(t, repo, "rev-parse", "main") != second.Review.Head {
		t.Fatalf("merge: %+v %s; main at %s", m.Merged, m.Request.Status, testkit.Git(t, repo, "rev-parse", "main"))
	}
	if got := readFile(filepath.Join(repo, "a.txt")); !strings.HasPrefix(got, "base\nalice\n") {
		t.Fatalf("main's a.txt after the merge: %q", got)
	}

	bobs := pendingReview(t, k, "bob", "")
	before := testkit.Git(t, repo, "rev-parse", "main")
	_, err = team.Merge(ctx, k.St, bobs.ID, protocol.Lead)
	if err == nil || !strings.Contains(err.Error(), "conflicts in a.txt") {
		t.Fatalf("bob's merge: %v", err)
	}
	if r := k.Request(bobs.ID); r.Status != protocol.RequestChangesRequested || !strings.Contains(r.Feedback, "a.txt") || !strings.Contains(r.Feedback, "git merge main") {
		t.Fatalf("bob's review after the conflict: %s %q", r.Status, r.Feedback)
	}
	if testkit.Git(t, repo, "rev-parse", "main") != before || testkit.Git(t, repo, "status", "--porcelain") != "" {
		t.Fatal("a conflicting merge moved or dirtied main")
	}
	testkit.WaitFor(t, 20*time.Second, "bob asked to resolve the conflict", func() bool {
		for _, msg := range k.MessagesTo(t, "bob") {
			if msg.From == protocol.Lead && strings.Contains(msg.Content, "conflicts with main in a.txt") {
				return true
			}
		}
		return false
	})
}

// TestOneApprovalCoversTheSameScript: two coders whose worktrees need the
// same setup ask for it each; the lead approves one, and the other is
// approved as the same script, both setups run and both coders start.
func TestOneApprovalCoversTheSameScript(t *testing.T) {
	repo := gitRepo(t)
	dir := t.TempDir()
	teamkit.WriteTeam(t, dir, coders(t, repo, team.WorkspaceSpec{Setup: []string{"echo ran >> setup.log"}}, "alice", "bob"))
	k := teamkit.FilesKept(t, dir)
	startTeam(t, dir, Options{Tick: 20 * time.Millisecond})
	var asked []protocol.Request
	testkit.WaitFor(t, 20*time.Second, "two setup requests", func() bool {
		asked = asked[:0]
		for _, r := range k.Requests() {
			if r.Kind == protocol.KindSetup {
				asked = append(asked, r)
			}
		}
		return len(asked) == 2
	})
	if _, err := team.Decide(context.Background(), k.St, asked[0].ID, protocol.EventApprove, "", protocol.Lead); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"alice", "bob"} {
		testkit.WaitFor(t, 20*time.Second, m+"'s plan after its setup", func() bool { return k.PendingPlan(m) != nil })
		if got := readFile(filepath.Join(dir, "worktrees", "crew", m, "setup.log")); got != "ran\n" {
			t.Errorf("%s's setup.log: %q", m, got)
		}
	}
	if other := k.Request(asked[1].ID); other.Status != protocol.RequestApproved || other.ResolvedBy != "huddle (the same script approved in "+asked[0].ID+")" {
		t.Fatalf("the other request: %s by %s", other.Status, other.ResolvedBy)
	}
}

// TestLLMCoderBesideAnExecCoder: an llm member (the real loop, against a
// loopback fake of the OpenAI API) and an exec coder edit a.txt of one
// repository, each in its own worktree: the llm member's write is
// confined to its worktree, its turn's end opens a review of its branch
// linked to its plan, the exec coder's edit stays in its own, main is
// untouched.
func TestLLMCoderBesideAnExecCoder(t *testing.T) {
	cs := newChatServer(t,
		toolTurn("c1", "submit_plan", map[string]any{"plan": "write llm into a.txt"}),
		toolTurn("c2", "write_file", map[string]any{"path": "a.txt", "content": "base\nllm\n"}),
		map[string]any{"role": "assistant", "content": "a.txt written"},
	)
	repo := gitRepo(t)
	dir := t.TempDir()
	tm := coders(t, repo, team.WorkspaceSpec{}, "bob")
	tm.Members = append(tm.Members, team.MemberSpec{Name: "writer", Role: "writes",
		Runtime: team.RuntimeSpec{Kind: team.RuntimeLLM, Provider: team.ProviderOpenAI, BaseURL: cs.srv.URL + "/v1", Model: "fake",
			Prompt: "write llm into a.txt", Tools: []string{"write_file", "read_file"}}})
	teamkit.WriteTeam(t, dir, tm)
	k := teamkit.FilesKept(t, dir)
	startTeam(t, dir, Options{Tick: 20 * time.Millisecond})
	approvePlan(t, k, "writer")
	approvePlan(t, k, "bob")
	rv := pendingReview(t, k, "writer", "")
	wt := filepath.Join(dir, "worktrees", "crew", "writer")
	if rv.Review.Branch != "huddle/crew/writer" || rv.Review.Worktree != wt || rv.Review.Added != 1 {
		t.Fatalf("writer's review: %+v", rv.Review)
	}
	if p := k.Request(rv.Review.Plan); p == nil || p.Plan != "write llm into a.txt" {
		t.Fatalf("the review's plan: %+v", p)
	}
	if got := testkit.Git(t, repo, "show", rv.Review.Head+":a.txt"); got != "base\nllm" {
		t.Fatalf("the reviewed a.txt: %q", got)
	}
	testkit.WaitFor(t, 20*time.Second, "bob's edit", func() bool {
		return readFile(filepath.Join(dir, "worktrees", "crew", "bob", "a.txt")) == "base\nbob\n"
	})
	if got := readFile(filepath.Join(repo, "a.txt")); got != "base\n" {
		t.Fatalf("main's a.txt: %q", got)
	}
}

// TestAutoMergeAndReviewExpiry: with auto_merge a coder's change reaches
// main at its turn's end, merged by huddle; without it, a review nobody
// decides expires at review_deadline, nothing merged, the coder told.
func TestAutoMergeAndReviewExpiry(t *testing.T) {
	on := true
	repo := gitRepo(t)
	dir := t.TempDir()
	tm := coders(t, repo, team.WorkspaceSpec{}, "alice", "bob")
	tm.Members[0].Workspace = &team.WorkspaceSpec{AutoMerge: &on}
	tm.Settings.ReviewDeadline = team.Duration(time.Second)
	teamkit.WriteTeam(t, dir, tm)
	k := teamkit.FilesKept(t, dir)
	startTeam(t, dir, Options{Tick: 20 * time.Millisecond})
	approvePlan(t, k, "alice")
	approvePlan(t, k, "bob")
	testkit.WaitFor(t, 20*time.Second, "alice's change merged by itself", func() bool {
		for _, r := range k.Requests() {
			if r.Kind == protocol.KindReview && r.From == "alice" && r.Status == protocol.RequestMerged && r.ResolvedBy == "huddle (auto_merge)" {
				return true
			}
		}
		return false
	})
	if got := testkit.Git(t, repo, "show", "main:a.txt"); got != "base\nalice" {
		t.Fatalf("main's a.txt after the auto_merge: %q", got)
	}
	before := testkit.Git(t, repo, "rev-parse", "main")
	testkit.WaitFor(t, 20*time.Second, "bob's review expired", func() bool {
		for _, r := range k.Requests() {
			if r.Kind == protocol.KindReview && r.From == "bob" && r.Status == protocol.RequestExpired {
				return true
			}
		}
		return false
	})
	if testkit.Git(t, repo, "rev-parse", "main") != before {
		t.Fatal("an expired review moved main")
	}
	testkit.WaitFor(t, 20*time.Second, "bob told", func() bool {
		for _, m := range k.MessagesTo(t, "bob") {
			if strings.Contains(m.Content, "no review before the deadline") {
				return true
			}
		}
		return false
	})
}

func init() { testRoles["announcer"] = runAnnouncer }

// runAnnouncer plans, and once approved writes b.txt and says its change
// is ready with a review line, staying at work.
func runAnnouncer() int {
	out := json.NewEncoder(os.Stdout)
	_ = out.Encode(protocol.ExecLine{Kind: "review", Content: "too early"})
	_ = out.Encode(protocol.ExecLine{Kind: "plan", Plan: "write b.txt"})
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		m, err := protocol.Decode(sc.Bytes(), protocol.Fallback{})
		if err == nil && m.Type == protocol.TypePlanApprovalResponse && m.Approved() {
			_ = os.WriteFile("b.txt", []byte("b\n"), 0o600)
			_ = out.Encode(protocol.ExecLine{Kind: "review", Content: "b.txt is ready"})
		}
	}
	return 0
}

// TestReviewLineOpensAReview: an agent's review line opens a review of
// its branch with what it said; one before its plan is approved is
// refused and dead-lettered, saying why.
func TestReviewLineOpensAReview(t *testing.T) {
	repo := gitRepo(t)
	dir := t.TempDir()
	exe, _ := os.Executable()
	tm := coders(t, repo, team.WorkspaceSpec{}, "alice")
	tm.Members[0].Runtime.Command = []string{"/usr/bin/env", teamkit.RoleEnv + "=announcer", exe}
	teamkit.WriteTeam(t, dir, tm)
	k := teamkit.FilesKept(t, dir)
	startTeam(t, dir, Options{Tick: 20 * time.Millisecond})
	approvePlan(t, k, "alice")
	rv := pendingReview(t, k, "alice", "")
	if rv.Review.Summary != "done: b.txt is ready" || testkit.Git(t, repo, "show", rv.Review.Head+":b.txt") != "b" {
		t.Fatalf("the review: %+v", rv.Review)
	}
	if m := k.Member("alice"); m.Status != protocol.MemberWorking {
		t.Errorf("alice is %s after her review line; she said nothing of stopping work", m.Status)
	}
	testkit.WaitFor(t, 20*time.Second, "the early review line dead-lettered", func() bool {
		return strings.Contains(k.DeadLetters(), "has no approved plan")
	})
}
