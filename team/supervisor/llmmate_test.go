package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/internal/testkit/dirlead"
	"huddle/internal/testkit/dirrecords"
	"huddle/internal/testkit/teamkit"
	"huddle/ipc/trace"
	"huddle/llm"
	"huddle/protocol"
	"huddle/team"
	"huddle/teamdir"
)

// fakeThinker stands for llm.Agent: Run waits until its context ends or
// the test ends it (end); Deliver records; Answer runs answer.
type fakeThinker struct {
	cfg llm.Config
	pc  llm.ProviderConfig
	end chan error

	mu        sync.Mutex
	delivered []string
	answer    func(ctx context.Context, env llm.Env, id, prompt string) (string, error)
}

func (f *fakeThinker) Run(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case err := <-f.end:
		return err
	}
}

func (f *fakeThinker) Deliver(text string) {
	f.mu.Lock()
	f.delivered = append(f.delivered, text)
	f.mu.Unlock()
}

func (f *fakeThinker) Answer(ctx context.Context, id, prompt string) (string, error) {
	if f.answer == nil {
		return "answered: " + prompt, nil
	}
	return f.answer(ctx, f.cfg.Env, id, prompt)
}

// got reports whether a delivered text contains s.
func (f *fakeThinker) got(s string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, d := range f.delivered {
		if strings.Contains(d, s) {
			return true
		}
	}
	return false
}

// fakes builds one fakeThinker per llm member; prepare, if set, adjusts
// each before the runtime uses it.
type fakes struct {
	mu      sync.Mutex
	by      map[string]*fakeThinker
	prepare func(f *fakeThinker)
}

func (fs *fakes) build(cfg llm.Config, pc llm.ProviderConfig) (Thinker, error) {
	f := &fakeThinker{cfg: cfg, pc: pc, end: make(chan error, 1)}
	if fs.prepare != nil {
		fs.prepare(f)
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.by == nil {
		fs.by = map[string]*fakeThinker{}
	}
	fs.by[cfg.Name] = f
	return f, nil
}

func (fs *fakes) of(t *testing.T, name string) *fakeThinker {
	t.Helper()
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f, ok := fs.by[name]
	if !ok {
		t.Fatalf("no loop was built for %s", name)
	}
	return f
}

func llmMember(name string) team.MemberSpec {
	return team.MemberSpec{Name: name, Role: "thinks", Runtime: team.RuntimeSpec{Kind: team.RuntimeLLM, Provider: team.ProviderOpenAI, Model: "fake"}}
}

// startLLMTeam runs members with fake loops until the test ends.
func startLLMTeam(t *testing.T, dir string, fk *fakes, members ...team.MemberSpec) *events {
	t.Helper()
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Members: members})
	return startTeam(t, dir, Options{newThinker: fk.build})
}

func memberRecord(t *testing.T, dir, name string) *protocol.Member {
	t.Helper()
	m, err := dirrecords.LoadMember(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// submitAsync runs SubmitPlan in a goroutine the test waits for.
type planAnswer struct {
	ok       bool
	feedback string
	err      error
}

func submitAsync(t *testing.T, env llm.Env, plan string) <-chan planAnswer {
	t.Helper()
	out := make(chan planAnswer, 1)
	go func() {
		ok, fb, err := env.SubmitPlan(context.Background(), plan)
		out <- planAnswer{ok, fb, err}
	}()
	return out
}

func waitAnswer(t *testing.T, ch <-chan planAnswer) planAnswer {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(10 * time.Second):
		t.Fatal("SubmitPlan did not return")
		return planAnswer{}
	}
}

func TestLLMEnvSubmitPlanApproveAndReject(t *testing.T) {
	teamkit.OnEachStore(t, team.Team{Name: "t", Members: []team.MemberSpec{llmMember("coder")}}, func(t *testing.T, k *teamkit.Kept) {
		fk := &fakes{}
		start(t, k, Options{newThinker: fk.build})
		env := fk.of(t, "coder").cfg.Env

		ch := submitAsync(t, env, "add a test")
		testkit.WaitFor(t, 5*time.Second, "a pending plan", func() bool { return k.PendingPlan("coder") != nil })
		testkit.WaitFor(t, 5*time.Second, "coder awaiting approval", func() bool { return k.Status("coder") == protocol.MemberAwaitingApproval })
		first := k.PendingPlan("coder")
		if first.Plan != "add a test" {
			t.Fatalf("plan = %q", first.Plan)
		}
		if _, err := k.Decide(first.ID, protocol.EventReject, "smaller steps"); err != nil {
			t.Fatal(err)
		}
		if a := waitAnswer(t, ch); a.ok || a.feedback != "smaller steps" || a.err != nil {
			t.Fatalf("rejected plan: %+v", a)
		}
		if st := k.Status("coder"); st != protocol.MemberRevising {
			t.Fatalf("status after a rejection = %s", st)
		}

		ch = submitAsync(t, env, "add a test, in two steps")
		testkit.WaitFor(t, 5*time.Second, "the revised plan", func() bool {
			p := k.PendingPlan("coder")
			return p != nil && p.ID != first.ID
		})
		if r := k.PendingPlan("coder"); r.Revises != first.ID {
			t.Fatalf("the revised plan revises %q, want %s", r.Revises, first.ID)
		}
		if _, err := k.Decide(k.PendingPlan("coder").ID, protocol.EventApprove, "go ahead"); err != nil {
			t.Fatal(err)
		}
		if a := waitAnswer(t, ch); !a.ok || a.feedback != "go ahead" || a.err != nil {
			t.Fatalf("approved plan: %+v", a)
		}
		if rec := k.Member("coder"); rec == nil || rec.Status != protocol.MemberWorking || rec.Counters.Plans != 2 || rec.RequestID != "" {
			t.Fatalf("record after approval: %+v", rec)
		}
	})
}

func TestLLMEnvSendChecksAddresses(t *testing.T) {
	teamkit.OnEachStore(t, team.Team{Name: "t", Members: []team.MemberSpec{llmMember("coder"), llmMember("reviewer")}}, func(t *testing.T, k *teamkit.Kept) {
		fk := &fakes{}
		start(t, k, Options{newThinker: fk.build})
		env := fk.of(t, "coder").cfg.Env
		for _, bad := range []string{"nobody", "../lead", ""} {
			if err := env.Send(bad, "hi"); err == nil {
				t.Errorf("Send to %q was accepted", bad)
			}
		}
		if err := env.Send("reviewer", ""); err == nil {
			t.Error("an empty message was accepted")
		}
		if err := env.Send("reviewer", "please review"); err != nil {
			t.Fatal(err)
		}
		if err := env.Broadcast("done for today"); err != nil {
			t.Fatal(err)
		}
		rv := fk.of(t, "reviewer")
		testkit.WaitFor(t, 5*time.Second, "the message and the broadcast at reviewer's loop", func() bool {
			return rv.got("message from coder: please review") && rv.got("broadcast from coder: done for today")
		})
		testkit.WaitFor(t, 5*time.Second, "coder's sent counter", func() bool {
			m := k.Member("coder")
			return m != nil && m.Counters.Sent == 2
		})
	})
}

func TestLLMEnvCallReachesAScriptedTeammate(t *testing.T) {
	tester := teamkit.Scripted("tester", "", team.Step{Wait: team.Duration(time.Hour)})
	tester.Actions = map[string]team.ActionSpec{"run_tests": {Reply: "all green"}}
	tm := team.Team{Name: "t", Members: []team.MemberSpec{llmMember("coder"), tester}}
	teamkit.OnEachStoreWith(t, tm, map[string]string{"coder": `{"allowed_targets":["tester"]}`}, func(t *testing.T, k *teamkit.Kept) {
		fk := &fakes{}
		start(t, k, Options{newThinker: fk.build})
		env := fk.of(t, "coder").cfg.Env

		out, err := env.Call(context.Background(), "tester", "run_tests", "./...", 10)
		if err != nil {
			t.Fatal(err)
		}
		var res protocol.InvocationResult
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("result %q: %v", out, err)
		}
		if res.Status != "ok" || !strings.Contains(string(res.Result), "all green") {
			t.Fatalf("result = %s", out)
		}
		// Outside the policy: the error result, with its code, is the text.
		out, err = env.Call(context.Background(), "coder", "x", "", 10)
		if err != nil || !strings.Contains(out, string(protocol.ErrDenied)) {
			t.Fatalf("a denied call gave %q, %v", out, err)
		}
	})
}

func TestLLMEnvShutdownResponseApproves(t *testing.T) {
	teamkit.OnEachStore(t, team.Team{Name: "t", Members: []team.MemberSpec{llmMember("coder")}}, func(t *testing.T, k *teamkit.Kept) {
		fk := &fakes{}
		start(t, k, Options{newThinker: fk.build})
		f := fk.of(t, "coder")
		testkit.WaitFor(t, 5*time.Second, "coder working", func() bool { return k.Status("coder") == protocol.MemberWorking })
		r, err := k.RequestShutdown("coder", "end of day")
		if err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, 5*time.Second, "the shutdown request at the loop", func() bool { return f.got(r.ID) && f.got("shutdown_response") })
		if err := f.cfg.Env.ShutdownResponse("sd-nope", true, ""); err == nil {
			t.Error("an answer to an unknown request was accepted")
		}
		if err := f.cfg.Env.ShutdownResponse(r.ID, true, "all done"); err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, 5*time.Second, "coder stopped", func() bool { return k.Status("coder") == protocol.MemberStopped })
		if got := k.Request(r.ID); got == nil || got.Status != protocol.RequestApproved || got.ResolvedBy != "coder" {
			t.Fatalf("request = %+v", got)
		}
	})
}

// TestLLMInvocationIsAnsweredByTheLoop: a scripted caller invokes an llm
// member; the loop's answer is the caller's ok result, and the call the
// loop makes while answering is the onward call (hop 1, same correlation).
func TestLLMInvocationIsAnsweredByTheLoop(t *testing.T) {
	dir := t.TempDir()
	fk := &fakes{prepare: func(f *fakeThinker) {
		f.answer = func(ctx context.Context, env llm.Env, id, prompt string) (string, error) {
			out, err := env.Call(ctx, "tester", "run_tests", "from the answer", 10)
			if err != nil {
				return "", err
			}
			return "reviewed (" + prompt + "), tests: " + out, nil
		}
	}}
	caller := withPolicy(t, dir, teamkit.Scripted("lead2", "", team.Step{Call: "coder", Action: "review", Prompt: "diff 42", TimeoutSec: 10}, team.Step{Wait: team.Duration(time.Hour)}), `{"allowed_targets":["coder"],"max_hops":3}`)
	coder := withPolicy(t, dir, llmMember("coder"), `{"allowed_targets":["tester"],"max_hops":3}`)
	tester := teamkit.Scripted("tester", "", team.Step{Wait: team.Duration(time.Hour)})
	tester.Actions = map[string]team.ActionSpec{"run_tests": {Reply: "all green"}}
	ev := startLLMTeam(t, dir, fk, caller, coder, tester)
	testkit.WaitFor(t, 10*time.Second, "lead2's call to end", func() bool {
		return ev.has(func(e Event) bool { return e["event"] == "call" && e["member"] == "lead2" })
	})
	cs := chains(t, dir)
	if len(cs) != 1 || len(cs[0].Rows) != 2 {
		t.Fatalf("want one chain of two calls, got %+v", cs)
	}
	top, onward := cs[0].Rows[0].Call, cs[0].Rows[1].Call
	if top.Status != trace.CallOK || !strings.Contains(top.Result, "diff 42") || !strings.Contains(top.Result, "all green") {
		t.Fatalf("the caller's result: %+v", top)
	}
	if onward.Caller != "coder" || onward.Hop != 1 || onward.ParentRequestID != top.RequestID || onward.CorrelationID != top.CorrelationID {
		t.Fatalf("onward call: %+v", onward)
	}
}

func TestLLMInvocationErrorIsAnErrorResult(t *testing.T) {
	dir := t.TempDir()
	fk := &fakes{prepare: func(f *fakeThinker) {
		f.answer = func(context.Context, llm.Env, string, string) (string, error) {
			return "", errors.New("model: 404 no such model")
		}
	}}
	caller := withPolicy(t, dir, teamkit.Scripted("asker", "", team.Step{Call: "coder", Action: "review", TimeoutSec: 10}, team.Step{Wait: team.Duration(time.Hour)}), `{"allowed_targets":["coder"]}`)
	ev := startLLMTeam(t, dir, fk, caller, llmMember("coder"))
	testkit.WaitFor(t, 10*time.Second, "the call to end", func() bool {
		return ev.has(func(e Event) bool { return e["event"] == "call" && e["member"] == "asker" })
	})
	c := chains(t, dir)[0].Rows[0].Call
	if c.Status != trace.CallError || c.ErrorCode != string(protocol.ErrIPC) || !strings.Contains(c.ErrorMessage, "404 no such model") {
		t.Fatalf("got %+v", c)
	}
}

func TestLLMLimitLeavesTheMemberIdleThenItStopsWhenAsked(t *testing.T) {
	dir := t.TempDir()
	fk := &fakes{}
	startLLMTeam(t, dir, fk, llmMember("coder"))
	testkit.WaitFor(t, 5*time.Second, "coder working", func() bool { return memberStatus(dir, "coder") == protocol.MemberWorking })
	fk.of(t, "coder").end <- &llm.LimitError{Limit: "max_turns"}
	testkit.WaitFor(t, 5*time.Second, "coder idle", func() bool { return memberStatus(dir, "coder") == protocol.MemberIdle })
	if rec := memberRecord(t, dir, "coder"); !strings.Contains(rec.Activity, "max_turns") {
		t.Fatalf("activity = %q, want the limit named", rec.Activity)
	}
	r, err := dirlead.RequestShutdown(dir, "coder", "bye")
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "coder stopped", func() bool { return memberStatus(dir, "coder") == protocol.MemberStopped })
	if got, _ := dirrecords.LoadRequest(dir, r.ID); got.Status != protocol.RequestApproved {
		t.Fatalf("request = %+v", got)
	}
}

func TestLLMRunEnds(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		status protocol.MemberStatus
		errTxt string
	}{
		{"model error crashes", errors.New("401 invalid key"), protocol.MemberCrashed, "401 invalid key"},
		{"stopped", llm.ErrStopped, protocol.MemberStopped, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			fk := &fakes{}
			startLLMTeam(t, dir, fk, llmMember("coder"))
			testkit.WaitFor(t, 5*time.Second, "coder working", func() bool { return memberStatus(dir, "coder") == protocol.MemberWorking })
			fk.of(t, "coder").end <- tc.err
			testkit.WaitFor(t, 5*time.Second, "coder "+string(tc.status), func() bool { return memberStatus(dir, "coder") == tc.status })
			if rec := memberRecord(t, dir, "coder"); !strings.Contains(rec.Error, tc.errTxt) {
				t.Fatalf("error = %q", rec.Error)
			}
		})
	}
}

func TestLLMMissingKeyCrashesTheMemberOnly(t *testing.T) {
	dir := t.TempDir()
	fk := &fakes{}
	coder := llmMember("coder")
	coder.Runtime.APIKeyEnv = "HUDDLE_TEST_SURELY_UNSET_KEY"
	startLLMTeam(t, dir, fk, coder, llmMember("other"))
	testkit.WaitFor(t, 5*time.Second, "coder crashed", func() bool { return memberStatus(dir, "coder") == protocol.MemberCrashed })
	if rec := memberRecord(t, dir, "coder"); !strings.Contains(rec.Error, "HUDDLE_TEST_SURELY_UNSET_KEY is not set") {
		t.Fatalf("error = %q", rec.Error)
	}
	testkit.WaitFor(t, 5*time.Second, "other working", func() bool { return memberStatus(dir, "other") == protocol.MemberWorking })
}

func TestLLMEnvActivityAndUsage(t *testing.T) {
	dir := t.TempDir()
	fk := &fakes{}
	coder := llmMember("coder")
	coder.Runtime.Price = &team.LLMPrice{InputPerMTok: 3, OutputPerMTok: 15}
	startLLMTeam(t, dir, fk, coder)
	env := fk.of(t, "coder").cfg.Env
	testkit.WaitFor(t, 5*time.Second, "coder working", func() bool { return memberStatus(dir, "coder") == protocol.MemberWorking })
	env.Activity("read_file src/main.go")
	if rec := memberRecord(t, dir, "coder"); rec.Status != protocol.MemberWorking || rec.Activity != "read_file src/main.go" {
		t.Fatalf("record = %+v", rec)
	}
	env.Activity("waiting for messages")
	if st := memberStatus(dir, "coder"); st != protocol.MemberIdle {
		t.Fatalf("status = %s, want idle", st)
	}
	env.Activity("thinking")
	if st := memberStatus(dir, "coder"); st != protocol.MemberWorking {
		t.Fatalf("status = %s, want working", st)
	}
	env.Usage(llm.Usage{In: 1_000_000, Out: 0})
	env.Usage(llm.Usage{In: 0, Out: 1_000_000})
	c := memberRecord(t, dir, "coder").Counters
	if c.TokensIn != 1_000_000 || c.TokensOut != 1_000_000 || c.CostUSD != 18 {
		t.Fatalf("counters = %+v", c)
	}
}

func TestLLMTranscriptIsAppended(t *testing.T) {
	dir := t.TempDir()
	fk := &fakes{}
	startLLMTeam(t, dir, fk, llmMember("coder"))
	tr := fk.of(t, "coder").cfg.Transcript
	tr(llm.Entry{Kind: "model", Text: "I will read the file", Turn: 1, Usage: &llm.Usage{In: 10, Out: 5}})
	tr(llm.Entry{Kind: "tool_call", Tool: "read_file", CallID: "c1", Args: json.RawMessage(`{"path":"a.go"}`)})
	path, _ := teamdir.TranscriptPath(dir, "coder")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 {
		t.Fatalf("transcript = %q", b)
	}
	var e llm.Entry
	if err := json.Unmarshal([]byte(lines[1]), &e); err != nil || e.Tool != "read_file" || e.TS.IsZero() {
		t.Fatalf("second entry = %s (%v)", lines[1], err)
	}
}

// TestLLMKeyIsInNoFileAndNoEvent: the key, set in the environment, reaches
// the provider's config and nothing else, even when a provider echoes it
// into an error or a transcript entry.
func TestLLMKeyIsInNoFileAndNoEvent(t *testing.T) {
	const key = "sk-test-HUDDLE-RECOGNISABLE-7f3a9c"
	t.Setenv("HUDDLE_TEST_LLM_KEY", key)
	dir := t.TempDir()
	fk := &fakes{}
	coder := llmMember("coder")
	coder.Runtime.APIKeyEnv = "HUDDLE_TEST_LLM_KEY"
	coder.Runtime.Price = &team.LLMPrice{InputPerMTok: 1, OutputPerMTok: 1}
	ev := startLLMTeam(t, dir, fk, coder, llmMember("reviewer"))
	f := fk.of(t, "coder")
	if f.pc.APIKey != key {
		t.Fatalf("the provider config did not get the key")
	}
	env := f.cfg.Env
	env.Activity("thinking")
	env.Usage(llm.Usage{In: 5, Out: 7})
	if err := env.Send("reviewer", "hello"); err != nil {
		t.Fatal(err)
	}
	ch := submitAsync(t, env, "a plan")
	testkit.WaitFor(t, 5*time.Second, "a pending plan", func() bool { return pendingPlan(dir, "coder") != nil })
	if _, err := dirlead.Decide(dir, pendingPlan(dir, "coder").ID, protocol.EventApprove, "", ""); err != nil {
		t.Fatal(err)
	}
	waitAnswer(t, ch)
	f.cfg.Transcript(llm.Entry{Kind: "error", Text: "401: incorrect API key provided: " + key})
	f.end <- fmt.Errorf("401: incorrect API key provided: %s", key)
	testkit.WaitFor(t, 5*time.Second, "coder crashed", func() bool { return memberStatus(dir, "coder") == protocol.MemberCrashed })

	// The runtime still runs: it archives the plan and rewrites records
	// (temp + rename) while the walk reads, so a file can go between the
	// listing and the read. A walk in which none went has read every file.
	holding := map[string]bool{} // the files a walk found the key in
	testkit.WaitFor(t, 5*time.Second, "a walk of the team directory that read every file", func() bool {
		vanished := false
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) {
				vanished = true
				return nil
			}
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if errors.Is(err, fs.ErrNotExist) {
				vanished = true
				return nil
			}
			if err != nil {
				return err
			}
			if strings.Contains(string(b), key) {
				holding[p] = true
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return !vanished
	})
	for p := range holding {
		t.Errorf("the key is in %s", p)
	}
	if ev.has(func(e Event) bool { return strings.Contains(fmt.Sprint(e), key) }) {
		t.Error("the key is in an event")
	}
	if rec := memberRecord(t, dir, "coder"); !strings.Contains(rec.Error, "[redacted]") {
		t.Errorf("error = %q: want the echoed key redacted", rec.Error)
	}
}

// TestLLMInvocationCancelCancelsTheAnswer: a caller that gives up sends
// invocation_cancel, which cancels the context of the loop's answer.
func TestLLMInvocationCancelCancelsTheAnswer(t *testing.T) {
	dir := t.TempDir()
	answering, cancelled := make(chan struct{}, 1), make(chan struct{}, 1)
	fk := &fakes{prepare: func(f *fakeThinker) {
		f.answer = func(ctx context.Context, _ llm.Env, _, _ string) (string, error) {
			answering <- struct{}{}
			<-ctx.Done()
			cancelled <- struct{}{}
			return "", ctx.Err()
		}
	}}
	asker := withPolicy(t, dir, llmMember("asker"), `{"allowed_targets":["coder"]}`)
	ev := startLLMTeam(t, dir, fk, asker, llmMember("coder"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := fk.of(t, "asker").cfg.Env
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = env.Call(ctx, "coder", "review", "the diff", 30)
	}()
	select {
	case <-answering:
	case <-time.After(10 * time.Second):
		t.Fatal("coder's loop was not asked")
	}
	cancel()
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the answer's context was not cancelled")
	}
	<-done
	testkit.WaitFor(t, 5*time.Second, "invocation_cancelled", func() bool {
		return ev.has(func(e Event) bool { return e["event"] == "invocation_cancelled" && e["member"] == "coder" })
	})
}

// TestLLMEnvSubmitPlanExpired: a plan nobody decides before the deadline
// comes back not approved, with the reason; the member is revising.
func TestLLMEnvSubmitPlanExpired(t *testing.T) {
	dir := t.TempDir()
	fk := &fakes{}
	teamkit.WriteTeam(t, dir, team.Team{Name: "t", Settings: team.Settings{ApprovalDeadline: team.Duration(200 * time.Millisecond)}, Members: []team.MemberSpec{llmMember("coder")}})
	startTeam(t, dir, Options{newThinker: fk.build})
	a := waitAnswer(t, submitAsync(t, fk.of(t, "coder").cfg.Env, "a plan nobody reads"))
	if a.ok || a.err != nil || !strings.Contains(a.feedback, "expired") {
		t.Fatalf("expired plan: ok=%v feedback=%q err=%v", a.ok, a.feedback, a.err)
	}
	if st := memberStatus(dir, "coder"); st != protocol.MemberRevising {
		t.Fatalf("status = %s, want revising", st)
	}
}
