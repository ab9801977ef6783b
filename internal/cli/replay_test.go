package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"huddle/inbox"
	"huddle/internal/testkit/dirlead"
	"huddle/internal/testkit/dirrecords"
	"huddle/internal/testkit/files"
	"huddle/internal/testkit/natsteam"
	"huddle/ipc/trace"
	"huddle/protocol"
	"huddle/replay"
	"huddle/team"
	"huddle/teamdir"
)

// sessionDir is a team directory with a history written by hand, relative
// to now: a member's moves, a plan made and approved, a message, a call.
func sessionDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := team.Init(dir); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().Add(-10 * time.Minute).UTC()
	for i, st := range []protocol.MemberStatus{protocol.MemberStarting, protocol.MemberAwaitingApproval, protocol.MemberWorking} {
		b, _ := json.Marshal(team.StatusChange{TS: t0.Add(time.Duration(i) * time.Second), Status: st})
		path, _ := teamdir.StatusHistoryPath(dir, "reservas")
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := teamdir.AppendLine(path, append(b, '\n')); err != nil {
			t.Fatal(err)
		}
	}
	r := protocol.NewRequest(protocol.KindPlan, "pl-0000000cli1", "reservas", protocol.Lead, t0.Add(time.Second), time.Hour)
	r.Plan = "book room 4"
	if err := dirrecords.CreateRequest(dir, &r); err != nil {
		t.Fatal(err)
	}
	if _, err := dirlead.Decide(dir, r.ID, protocol.EventApprove, "", protocol.Lead); err != nil {
		t.Fatal(err)
	}
	msg := protocol.Message{ID: "m-cli-1", Type: protocol.TypeMessage, From: "reservas", To: "finanzas", TS: t0.Add(3 * time.Second), Content: "invoice coming"}
	if err := inbox.Append(dir, "finanzas", &msg); err != nil {
		t.Fatal(err)
	}
	req := protocol.InvocationRequest{RequestID: "req-cli-1", CorrelationID: "corr-cli-1", Caller: "reservas", Target: "finanzas", Action: "pagar_factura", Prompt: "pay"}
	if err := trace.AppendSpan(dir, trace.Start(req, t0.Add(4*time.Second))); err != nil {
		t.Fatal(err)
	}
	return dir
}

// session puts a history in on's store as a team's would, through the
// commands and the store: a plan approved and one rejected with huddle
// approve and reject (their answers left unconsumed in the members'
// inboxes), reservas's record, and a call's two spans: nine events. It returns the plans' ids and the call.
func session(t *testing.T, on *teamOn) (approved, rejected string, call protocol.InvocationRequest) {
	t.Helper()
	ctx := context.Background()
	approved, rejected = "pl-0000000exp1", "pl-0000000exp2"
	natsteam.Plan(t, on.st, approved, "reservas")
	natsteam.Plan(t, on.st, rejected, "finanzas")
	on.must(t, "approve", approved)
	on.must(t, "reject", rejected, "--feedback", "smaller, please")
	on.putMember(t, protocol.Member{Name: "reservas", Status: protocol.MemberWorking, Activity: "booking", Since: time.Now().Add(-time.Minute)})
	call = protocol.InvocationRequest{RequestID: protocol.NewInvocationID(), CorrelationID: protocol.NewCorrelationID(),
		Caller: "reservas", Target: "finanzas", Action: "pagar_factura", Prompt: "pay", Hop: 1, TimeoutSec: 60}
	t0 := time.Now().Add(-30 * time.Second)
	res := protocol.Fail(&call, 5, protocol.ErrIPC, "declined", nil)
	for _, sp := range []trace.Span{trace.Start(call, t0), trace.End(call, res, "", false, t0.Add(5*time.Millisecond))} {
		if err := on.st.AppendSpan(ctx, sp); err != nil {
			t.Fatal(err)
		}
	}
	return approved, rejected, call
}

// TestExportWritesWhatReplayReads: on both kinds of store, huddle export
// -o FILE writes what replay reads of the team (replay.Read, as replay
// itself reads it): every transition of both plans, the chain's spans,
// the member's record, the messages in the inboxes, under a header that
// names the team. Written to stdout, the team named by the environment,
// it is the same. A store's export says in its header what it leaves out
// that a directory's holds (TestExportOfADirectoryHoldsItsHistories).
func TestExportWritesWhatReplayReads(t *testing.T) {
	onEachDemoStore(t, func(t *testing.T, on *teamOn) {
		approved, rejected, call := session(t, on)
		want, err := replay.Read(t.Context(), on.st, on.dir)
		if err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(t.TempDir(), "session.jsonl")
		r := on.huddle(t, "export", "-o", out)
		from := ""
		if on.kind == "nats" {
			from = " from " + on.place()
		}
		if said := fmt.Sprintf("exported %d events of team puruto-demo%s to %s", len(want.Events), from, out); r.code != ExitOK || r.stdout != "" || !strings.HasPrefix(r.stderr, said) {
			t.Fatalf("export -o: exit %d, stdout %q, stderr %q, want %q", r.code, r.stdout, r.stderr, said)
		}
		file, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(file), natsToken) {
			t.Fatal("the export holds the store's token")
		}
		tl, err := replay.ReadExportFile(out)
		if err != nil {
			t.Fatal(err)
		}
		sameTimeline(t, tl, want)
		if on.kind == "files" && tl.Store != nil {
			t.Fatalf("a directory's export says it leaves out %q", tl.Store.LeftOut)
		}
		if on.kind == "nats" && (tl.Store == nil || !slices.Contains(tl.Store.LeftOut, replay.LeftOutHistories) || !slices.Contains(tl.Store.LeftOut, replay.LeftOutMessages)) {
			t.Fatalf("a store's export's header: store %+v, want what it leaves out", tl.Store)
		}
		transitions := map[string][]string{}
		var spans, answers, members []string
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

		// To stdout, the team named by $HUDDLE_DIR or $HUDDLE_STORE: the same events.
		stdout := on.huddleEnv(t, "export").wantOK(t, "export with "+on.env)
		again, err := replay.ReadExport(strings.NewReader(stdout.stdout), "stdout")
		if err != nil {
			t.Fatal(err)
		}
		sameTimeline(t, again, want)
		if first, _, _ := strings.Cut(stdout.stdout, "\n"); !strings.Contains(first, `"format":"huddle-session"`) || !strings.Contains(first, `"exported_at"`) || !strings.Contains(first, `"name":"puruto-demo"`) {
			t.Fatalf("the header line: %s", first)
		}
	})
}

// TestExportOfADirectoryHoldsItsHistories: huddle export DIR -o FILE of a
// team directory holds each member's moves from its status history, and
// its header leaves nothing out. Only a directory has them: a store's
// timeline is each member's current record (the histories stay in the
// local directory of the machine that ran the member).
func TestExportOfADirectoryHoldsItsHistories(t *testing.T) {
	dir := sessionDir(t)
	want, err := readTimeline(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Events) < 6 {
		t.Fatalf("the fixture made %d events", len(want.Events))
	}
	out := filepath.Join(t.TempDir(), "session.jsonl")
	r := huddle(t, "export", dir, "-o", out)
	if r.code != ExitOK || r.stdout != "" || !strings.Contains(r.stderr, "exported") {
		t.Fatalf("export: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	got, err := replay.ReadExportFile(out)
	if err != nil {
		t.Fatal(err)
	}
	sameTimeline(t, got, want)
	var moves []string
	for _, e := range got.Events {
		if e.Kind == replay.KindStatus && e.Member.Name == "reservas" {
			moves = append(moves, string(e.Member.Status))
		}
	}
	if want := []string{"starting", "awaiting_approval", "working"}; !slices.Equal(moves, want) || got.Store != nil {
		t.Fatalf("reservas's moves %q, want %q, and nothing left out (%+v)", moves, want, got.Store)
	}
}

func sameTimeline(t *testing.T, got, want *replay.Timeline) {
	t.Helper()
	if len(got.Events) != len(want.Events) || got.Team.Name != want.Team.Name {
		t.Fatalf("%d events of %s, want %d of %s", len(got.Events), got.Team.Name, len(want.Events), want.Team.Name)
	}
	for i := range want.Events {
		g, _ := got.Events[i].MarshalJSON()
		w, _ := want.Events[i].MarshalJSON()
		if !bytes.Equal(g, w) {
			t.Fatalf("event %d:\n got %s\nwant %s", i, g, w)
		}
	}
}

func TestExportAndReplayRefuseWhatIsNotATeam(t *testing.T) {
	empty := t.TempDir()
	notExport := filepath.Join(empty, "notes.txt")
	if err := os.WriteFile(notExport, []byte("hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	team := sessionDir(t)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"export", empty}, ExitFail, "is not a team directory"},
		{[]string{"export", filepath.Join(empty, "missing")}, ExitFail, "is not a team directory"},
		{[]string{"export", notExport}, ExitFail, "is not a team directory"},
		{[]string{"export", team, "-o", filepath.Join(empty, "no", "such", "dir.jsonl")}, ExitFail, "export:"},
		{[]string{"export", team, "extra"}, ExitUsage, `unexpected argument "extra"`},
		{[]string{"replay", empty}, ExitFail, "is not a team directory"},
		{[]string{"replay", filepath.Join(empty, "missing")}, ExitFail, "no such team directory or export"},
		{[]string{"replay", notExport}, ExitFail, "is not a huddle export"},
		{[]string{"replay", filepath.Join(team, "team.json")}, ExitFail, "is not a huddle export"},
		{[]string{"replay", team, "--speed", "0"}, ExitUsage, "--speed must be more than 0"},
		{[]string{"replay", team, "--speed", "fast"}, ExitUsage, "invalid value"},
		{[]string{"replay", team}, ExitUsage, "not a terminal"}, // a valid team, but no terminal to play it on
	} {
		huddle(t, c.args...).wantError(t, c.code, c.want, c.args...)
	}
	if ents, _ := os.ReadDir(empty); len(ents) != 1 {
		t.Fatalf("the failed commands left files behind: %v", ents)
	}
}

// TestExportAndReplayOnAStoreTakeNoPath: with --store the team is in the
// store, so a DIR, a FILE or --dir is refused in one line (replay takes
// --dir as this machine's own directory, and stops at the terminal it
// needs), none showing the token. A team directory is a path
// (TestExportAndReplayRefuseWhatIsNotATeam).
func TestExportAndReplayOnAStoreTakeNoPath(t *testing.T) {
	on := demoOn(t, "nats")
	out := filepath.Join(t.TempDir(), "session.jsonl")
	if r := on.huddle(t, "export", "-o", out); r.code != ExitOK {
		t.Fatalf("export -o: exit %d, stderr %q", r.code, r.stderr)
	}
	for _, run := range []struct {
		args []string
		want string
	}{
		{[]string{"export", t.TempDir()}, "DIR and --store"},
		{[]string{"export", "--dir", t.TempDir()}, "--dir and --store"},
		{[]string{"replay", out}, "DIR or FILE and --store"},
		{[]string{"replay", "--dir", t.TempDir()}, "stdout is not a terminal"},
		{[]string{"replay"}, "stdout is not a terminal"},
	} {
		on.huddle(t, run.args...).wantError(t, ExitUsage, run.want, strings.Join(run.args[:1], " "))
	}
}

// TestReplayOnATerminal: on both kinds of store, huddle replay, the team
// named by the environment, plays its history on a terminal: the end (G)
// is the last of as many events as its export holds, and the member view
// says where its logs are not (a store's history holds none; the
// directory's reservas, a script member, writes none). Its export, replayed as a
// file, says it holds no logs. No screen shows the store's token.
func TestReplayOnATerminal(t *testing.T) {
	onEachDemoStore(t, func(t *testing.T, on *teamOn) {
		session(t, on)
		noLog, exportNoLog := "a script member writes no log", "an exported session holds no logs or transcripts"
		if on.kind == "nats" {
			noLog, exportNoLog = "a store's history holds no logs", "a store's history holds no logs"
		}
		tl, err := replay.ReadExport(strings.NewReader(on.must(t, "export").stdout), "stdout")
		if err != nil {
			t.Fatal(err)
		}
		n := len(tl.Events)
		p := startOnPTY(t, t.TempDir(), []string{on.env}, nil, "replay", "--speed", "1")
		p.waitFor(t, fmt.Sprintf("/%d · ", n))
		p.typeKeys(t, "G")
		p.waitFor(t, fmt.Sprintf("%d/%d · ", n, n)) // the renderer redraws what changed: "replay " stays
		p.waitFor(t, "smaller, please")             // the rejected plan's feedback, at the end
		p.typeKeys(t, "1\r")                        // the roster, then its first member's view
		p.waitFor(t, noLog)
		p.typeKeys(t, "q")
		if code := p.exit(t); code != ExitOK {
			t.Fatalf("replay: exit %d; the terminal shows %s", code, p.outputTail())
		}
		if strings.Contains(p.output(), natsToken) {
			t.Fatal("replay showed the store's token")
		}

		out := filepath.Join(t.TempDir(), "session.jsonl")
		if r := on.huddle(t, "export", "-o", out); r.code != ExitOK {
			t.Fatalf("export -o: exit %d, stderr %q", r.code, r.stderr)
		}
		f := startOnPTY(t, t.TempDir(), nil, nil, "replay", out)
		// Not "replay 1/": the replay plays, and a busy machine draws its
		// first frame steps later. The count says the file's n events.
		f.waitFor(t, fmt.Sprintf("/%d · ", n))
		f.typeKeys(t, "1\r")
		f.waitFor(t, exportNoLog)
		f.typeKeys(t, "q")
		if code := f.exit(t); code != ExitOK {
			t.Fatalf("replay FILE: exit %d; the terminal shows %s", code, f.outputTail())
		}
	})
}

func TestExportAndReplayHelp(t *testing.T) {
	for _, name := range []string{"export", "replay"} {
		r := mustHuddle(t, name, "--help")
		if !strings.Contains(r.stdout, "huddle "+name) {
			t.Errorf("huddle %s --help: %q", name, r.stdout)
		}
	}
	r := mustHuddle(t, "replay", "-h")
	for _, want := range []string{"--speed", "space", "read-only"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("huddle replay -h does not say %q:\n%s", want, r.stdout)
		}
	}
	if r := mustHuddle(t, "export", "-h"); !strings.Contains(r.stdout, "-o") {
		t.Errorf("huddle export -h does not name -o:\n%s", r.stdout)
	}
}

// readTimeline is the timeline of the team directory dir, read as huddle
// export reads it: through its files store.
func readTimeline(t *testing.T, dir string) (*replay.Timeline, error) {
	t.Helper()
	return replay.Read(t.Context(), files.Open(t, dir), dir)
}

// cmpBy is who made a request's last transition.
func cmpBy(r *protocol.Request) string { return r.History[len(r.History)-1].By }
