package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"huddle/ipc/trace"
	"huddle/protocol"
	"huddle/replay"
)

// storeSession is the demo team in an embedded NATS server whose clients
// must present a token: a plan approved and one rejected with huddle
// approve/reject --store (their answers left unconsumed in the members'
// inboxes), a member's record, and a call's two spans. It returns the URL
// (with the token), the token and the ids.
func storeSession(t *testing.T) (url, token string, approved, rejected string, call protocol.InvocationRequest) {
	t.Helper()
	token = "s3cr3t-export-t0ken"
	url = natsTeamWithToken(t, token)
	mustHuddle(t, "init", "--store", url, "--dir", filepath.Join(t.TempDir(), "none"))
	st := openTestStore(t, url)
	ctx := context.Background()
	approved, rejected = "pl-0000000exp1", "pl-0000000exp2"
	storePlan(t, st, approved, "reservas")
	storePlan(t, st, rejected, "finanzas")
	mustHuddle(t, "approve", approved, "--store", url)
	mustHuddle(t, "reject", rejected, "--feedback", "smaller, please", "--store", url)
	if err := st.PutMember(ctx, &protocol.Member{Name: "reservas", Status: protocol.MemberWorking, Activity: "booking", Since: time.Now().Add(-time.Minute)}); err != nil {
		t.Fatal(err)
	}
	call = protocol.InvocationRequest{RequestID: protocol.NewInvocationID(), CorrelationID: protocol.NewCorrelationID(),
		Caller: "reservas", Target: "finanzas", Action: "pagar_factura", Prompt: "pay", Hop: 1, TimeoutSec: 60}
	t0 := time.Now().Add(-30 * time.Second)
	res := protocol.Fail(&call, 5, protocol.ErrIPC, "declined", nil)
	for _, sp := range []trace.Span{trace.Start(call, t0), trace.End(call, res, "", false, t0.Add(5*time.Millisecond))} {
		if err := st.AppendSpan(ctx, sp); err != nil {
			t.Fatal(err)
		}
	}
	return url, token, approved, rejected, call
}

// TestExportStoreReplays: huddle export --store -o FILE writes what
// replay.Open reads back: every transition of both plans, the chain's
// spans, the member's record, the answers still in the inboxes, and a
// header saying it comes from a store and what it leaves out. Written to
// stdout with $HUDDLE_STORE, it is the same. The token shows nowhere, and
// DIR or --dir with --store are refused.
func TestExportStoreReplays(t *testing.T) {
	url, token, approved, rejected, call := storeSession(t)
	out := filepath.Join(t.TempDir(), "session.jsonl")
	r := huddle(t, "export", "--store", url, "-o", out)
	if r.code != exitOK || !strings.Contains(r.stderr, "from the store nats://***@") || !strings.Contains(r.stderr, " to "+out) || r.stdout != "" {
		t.Fatalf("export --store -o: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	file, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(r.stderr, token) || strings.Contains(string(file), token) {
		t.Fatal("export --store shows the token")
	}
	tl, err := replay.ReadExportFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if tl.Store == nil || !slices.Contains(tl.Store.LeftOut, replay.LeftOutHistories) || !slices.Contains(tl.Store.LeftOut, replay.LeftOutMessages) {
		t.Fatalf("the export's header: store %+v, want what it leaves out", tl.Store)
	}
	transitions := map[string][]string{}
	var spans []string
	var answers, members []string
	for _, e := range tl.Events {
		switch e.Kind {
		case replay.KindRequest:
			transitions[e.Request.ID] = append(transitions[e.Request.ID], string(e.Request.Status)+" by "+cmpBy(e.Request))
		case replay.KindSpan:
			if e.Span.CorrelationID == call.CorrelationID {
				spans = append(spans, e.Span.Span)
			}
		case replay.KindMessage:
			if e.Message.Type == protocol.TypePlanApprovalResponse {
				answers = append(answers, e.Inbox)
			}
		case replay.KindStatus:
			members = append(members, e.Member.Name+" "+string(e.Member.Status))
		}
	}
	if got, want := transitions[approved], []string{"pending by reservas", "approved by lead"}; !slices.Equal(got, want) {
		t.Errorf("the approved plan's transitions %q, want %q", got, want)
	}
	if got, want := transitions[rejected], []string{"pending by finanzas", "rejected by lead"}; !slices.Equal(got, want) {
		t.Errorf("the rejected plan's transitions %q, want %q", got, want)
	}
	if want := []string{"start", "end"}; !slices.Equal(spans, want) {
		t.Errorf("the chain's spans %q, want %q", spans, want)
	}
	slices.Sort(answers)
	if want := []string{"finanzas", "reservas"}; !slices.Equal(answers, want) {
		t.Errorf("the answers in the inboxes %q, want %q", answers, want)
	}
	if want := []string{"reservas working"}; !slices.Equal(members, want) {
		t.Errorf("the members' statuses %q, want %q", members, want)
	}

	// To stdout, the URL in the environment: the same events.
	env := []string{"HUDDLE_STORE=" + url}
	stdout := huddleIn(t, t.TempDir(), env, "export").wantOK(t, "export with $HUDDLE_STORE")
	if strings.Contains(stdout.stdout+stdout.stderr, token) {
		t.Fatal("export with $HUDDLE_STORE shows the token")
	}
	again, err := replay.ReadExport(strings.NewReader(stdout.stdout), "stdout")
	if err != nil {
		t.Fatal(err)
	}
	sameTimeline(t, again, tl)

	for _, run := range []struct {
		args []string
		want string
	}{
		{[]string{"export", "--store", url, t.TempDir()}, "DIR and --store"},
		{[]string{"export", "--store", url, "--dir", t.TempDir()}, "--dir and --store"},
		{[]string{"replay", "--store", url, out}, "DIR or FILE and --store"},
		{[]string{"replay", "--store", url, "--dir", t.TempDir()}, "stdout is not a terminal"},
		{[]string{"replay", "--store", url}, "stdout is not a terminal"},
	} {
		r := huddle(t, run.args...)
		r.wantError(t, exitUsage, run.want, strings.Join(run.args[:1], " "))
		if strings.Contains(r.stdout+r.stderr, token) {
			t.Fatalf("huddle %v shows the token: %q", run.args[0], r.stderr)
		}
	}
}

// cmpBy is who made a request's last transition.
func cmpBy(r *protocol.Request) string { return r.History[len(r.History)-1].By }

// TestReplayStoreOnATerminal: huddle replay --store plays the team kept in
// the store on a terminal: the end (G) is the last of as many events as
// the export holds, the member view says the history holds no logs, and the
// token shows nowhere.
func TestReplayStoreOnATerminal(t *testing.T) {
	url, token, _, _, _ := storeSession(t)
	tl, err := replay.ReadExport(strings.NewReader(mustHuddle(t, "export", "--store", url).stdout), "stdout")
	if err != nil {
		t.Fatal(err)
	}
	n := len(tl.Events)
	p := startOnPTY(t, t.TempDir(), []string{"HUDDLE_STORE=" + url}, nil, "replay", "--speed", "1")
	p.waitFor(t, fmt.Sprintf("/%d · ", n))
	p.typeKeys(t, "G")
	p.waitFor(t, fmt.Sprintf("%d/%d · ", n, n)) // the renderer redraws what changed: "replay " stays
	p.waitFor(t, "smaller, please")             // the rejected plan's feedback, at the end
	p.typeKeys(t, "1\r")                        // the roster, then its first member's view
	p.waitFor(t, "a store's history holds no logs")
	p.typeKeys(t, "q")
	if code := p.exit(t); code != exitOK {
		t.Fatalf("replay --store: exit %d; the terminal shows %s", code, p.outputTail())
	}
	if strings.Contains(p.output(), token) {
		t.Fatal("replay --store showed the token")
	}

	// Its export, replayed as a file, says the same of the logs.
	out := filepath.Join(t.TempDir(), "session.jsonl")
	huddle(t, "export", "--store", url, "-o", out)
	f := startOnPTY(t, t.TempDir(), nil, nil, "replay", out)
	f.waitFor(t, "replay 1/")
	f.typeKeys(t, "1\r")
	f.waitFor(t, "a store's history holds no logs")
	f.typeKeys(t, "q")
	if code := f.exit(t); code != exitOK {
		t.Fatalf("replay FILE of a store: exit %d; the terminal shows %s", code, f.outputTail())
	}
}
