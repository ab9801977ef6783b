package team

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/protocol"
	"huddle/store"
	"huddle/teamdir"
)

// The test binary re-executes itself in a role named by roleEnv. Other test
// files of this package may add roles to testRoles from an init func.
const roleEnv = "HUDDLE_TEAM_TEST_ROLE"

var testRoles = map[string]func() int{
	"resolver": runResolver,
}

func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		run, ok := testRoles[role]
		if !ok {
			fmt.Fprintf(os.Stderr, "unknown test role %q\n", role)
			os.Exit(2)
		}
		os.Exit(run())
	}
	os.Exit(m.Run())
}

// runResolver reads request ids from stdin, one a line, and races to resolve
// each as $ME with $EVENT. For each it prints one line: "won <status>", or
// "lost <status> <by> <error text>", or "err <error text>".
func runResolver() int {
	dir, me := os.Getenv("DIR"), os.Getenv("ME")
	ev := protocol.RequestEvent(os.Getenv("EVENT"))
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		id := in.Text()
		r, err := Resolve(dir, id, Resolution{Event: ev, By: me, Text: "from " + me})
		var already *store.AlreadyError
		switch {
		case err == nil:
			fmt.Printf("won %s\n", r.Status)
		case errors.As(err, &already):
			fmt.Printf("lost %s %s %s\n", already.Status, already.By, err)
		default:
			fmt.Printf("err %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		}
	}
	return 0
}

// testTime is a fixed creation time, in whole microseconds and UTC.
var testTime = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func planRequest(id, from string, created time.Time) *protocol.Request {
	r := protocol.NewRequest(protocol.KindPlan, id, from, protocol.Lead, created, 10*time.Minute)
	r.Plan = "plan of " + from
	return &r
}

func shutdownRequest(id, to string, created time.Time) *protocol.Request {
	r := protocol.NewRequest(protocol.KindShutdown, id, protocol.Lead, to, created, 2*time.Minute)
	r.Reason = "done for today"
	return &r
}

func mustCreate(t *testing.T, dir string, r *protocol.Request) {
	t.Helper()
	if err := CreateRequest(dir, r); err != nil {
		t.Fatalf("CreateRequest %s: %v", r.ID, err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func recordPath(t *testing.T, dir, id string) string {
	t.Helper()
	p, err := teamdir.RequestPath(dir, id)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRequestCreateLoadList(t *testing.T) {
	dir := t.TempDir()
	if got, err := ListRequests(dir); err != nil || len(got) != 0 {
		t.Fatalf("ListRequests of an empty team = %v, %v; want nothing", got, err)
	}
	// Created out of order: the list is oldest first, whatever the ids.
	newer := planRequest("pl-000000000002", "reservas", testTime.Add(time.Minute))
	older := shutdownRequest("sd-ffffffffffff", "finanzas", testTime)
	mustCreate(t, dir, newer)
	mustCreate(t, dir, older)

	got, err := LoadRequest(dir, newer.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, newer) {
		t.Fatalf("LoadRequest = %+v\nwant %+v", got, newer)
	}
	info, err := os.Stat(recordPath(t, dir, newer.ID))
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("record mode %v, want 0600", perm)
	}
	if info, err := os.Stat(filepath.Join(dir, teamdir.RequestsDir)); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("requests dir: %v, %v; want mode 0700", info, err)
	}

	// Files that are not whole records are not listed: a record being
	// created (empty), a decision, a temp file.
	if err := os.WriteFile(filepath.Join(dir, teamdir.RequestsDir, "pl-00000000000e.json"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, teamdir.RequestsDir, ".tmp-123"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadRequest(dir, "pl-00000000000e"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LoadRequest of an empty record: %v, want ErrNotExist", err)
	}
	list, err := ListRequests(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range list {
		ids = append(ids, r.ID)
	}
	if want := []string{older.ID, newer.ID}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("ListRequests ids = %v, want %v (oldest first)", ids, want)
	}
}

func TestCreateRequestNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	first := planRequest("pl-aaaaaaaaaaaa", "reservas", testTime)
	mustCreate(t, dir, first)
	before := readFile(t, recordPath(t, dir, first.ID))

	second := planRequest("pl-aaaaaaaaaaaa", "finanzas", testTime.Add(time.Hour))
	if err := CreateRequest(dir, second); !errors.Is(err, store.ErrExists) {
		t.Fatalf("second CreateRequest: %v, want store.ErrExists", err)
	}
	if after := readFile(t, recordPath(t, dir, first.ID)); !bytes.Equal(before, after) {
		t.Fatalf("record changed:\n%s\nto\n%s", before, after)
	}

	bad := planRequest("pl-bbbbbbbbbbbb", "reservas", testTime)
	bad.Plan = ""
	if err := CreateRequest(dir, bad); err == nil || !strings.Contains(err.Error(), "plan is required") {
		t.Fatalf("CreateRequest of a plan request without a plan: %v", err)
	}
	if _, err := os.Stat(recordPath(t, dir, bad.ID)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an invalid request left a file: %v", err)
	}
}

func TestResolveSecondResolverGetsAlreadyError(t *testing.T) {
	dir := t.TempDir()
	r := planRequest("pl-0123456789ab", "reservas", testTime)
	mustCreate(t, dir, r)

	won, err := Resolve(dir, r.ID, Resolution{Event: protocol.EventApprove, By: protocol.Lead, Text: "go ahead"})
	if err != nil {
		t.Fatal(err)
	}
	if won.Status != protocol.RequestApproved || won.ResolvedBy != protocol.Lead || won.Feedback != "go ahead" ||
		won.Approve == nil || !*won.Approve || len(won.History) != 2 {
		t.Fatalf("resolved record = %+v", won)
	}
	onDisk, err := LoadRequest(dir, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(onDisk, won) {
		t.Fatalf("record on disk %+v\ndiffers from the one returned %+v", onDisk, won)
	}
	before := readFile(t, recordPath(t, dir, r.ID))

	for _, ev := range protocol.RequestEvents {
		_, err := Resolve(dir, r.ID, Resolution{Event: ev, By: "ui-2", Text: "late"})
		var already *store.AlreadyError
		if !errors.As(err, &already) {
			t.Fatalf("second %s: %v, want *store.AlreadyError", ev, err)
		}
		if already.Status != protocol.RequestApproved || already.By != protocol.Lead {
			t.Errorf("second %s: %+v, want approved by lead", ev, already)
		}
		if want := "request pl-0123456789ab already approved by lead"; err.Error() != want {
			t.Errorf("second %s: %q, want %q", ev, err, want)
		}
	}
	if after := readFile(t, recordPath(t, dir, r.ID)); !bytes.Equal(before, after) {
		t.Fatalf("a refused resolution changed the record:\n%s\nto\n%s", before, after)
	}

	if _, err := Resolve(dir, "pl-000000000000", Resolution{Event: protocol.EventApprove, By: protocol.Lead}); err == nil ||
		!strings.Contains(err.Error(), "no request pl-000000000000") {
		t.Fatalf("Resolve of an unknown id: %v", err)
	}
}

// TestResolveRaceAcrossProcesses runs two processes that resolve the same
// pending request at the same moment, round after round: exactly one wins,
// the other is told who did, and the record says what the winner decided.
func TestResolveRaceAcrossProcesses(t *testing.T) {
	const rounds = 50
	dir := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	type proc struct {
		name  string
		ev    protocol.RequestEvent
		stdin io.WriteCloser
		lines chan string
		wins  int
	}
	procs := []*proc{{name: "p0", ev: protocol.EventApprove}, {name: "p1", ev: protocol.EventReject}}
	for _, p := range procs {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), roleEnv+"=resolver", "DIR="+dir, "ME="+p.name, "EVENT="+string(p.ev))
		cmd.Stderr = os.Stderr
		if p.stdin, err = cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		p.lines = make(chan string)
		go func() {
			defer close(p.lines)
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				p.lines <- sc.Text()
			}
		}()
		t.Cleanup(func() {
			p.stdin.Close() // the resolver exits at EOF
			for range p.lines {
			}
			if err := cmd.Wait(); err != nil {
				t.Errorf("%s: %v", p.name, err)
			}
		})
	}
	next := func(p *proc) string {
		t.Helper()
		select {
		case l, ok := <-p.lines:
			if !ok {
				t.Fatalf("%s exited early", p.name)
			}
			return l
		case <-time.After(10 * time.Second):
			t.Fatalf("%s did not answer within 10s", p.name)
		}
		return ""
	}

	for i := range rounds {
		r := planRequest(protocol.NewRequestID(protocol.KindPlan), "reservas", testTime.Add(time.Duration(i)*time.Second))
		mustCreate(t, dir, r)
		for _, p := range procs {
			if _, err := fmt.Fprintln(p.stdin, r.ID); err != nil {
				t.Fatal(err)
			}
		}
		var winner *proc
		lost := map[*proc]string{}
		for _, p := range procs {
			l := next(p)
			switch {
			case strings.HasPrefix(l, "won "):
				if winner != nil {
					t.Fatalf("round %d: both %s and %s won", i, winner.name, p.name)
				}
				winner = p
			case strings.HasPrefix(l, "lost "):
				lost[p] = l
			default:
				t.Fatalf("round %d: %s: %s", i, p.name, l)
			}
		}
		if winner == nil {
			t.Fatalf("round %d: nobody won: %v", i, lost)
		}
		winner.wins++
		want, _ := protocol.RequestPending.Next(winner.ev)
		for p, l := range lost {
			wantLine := fmt.Sprintf("lost %s %s request %s already %s by %s", want, winner.name, r.ID, want, winner.name)
			if l != wantLine {
				t.Fatalf("round %d: %s said %q, want %q", i, p.name, l, wantLine)
			}
		}
		got, err := LoadRequest(dir, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != want || got.ResolvedBy != winner.name || got.Feedback != "from "+winner.name || len(got.History) != 2 {
			t.Fatalf("round %d: record %+v, want %s by %s", i, got, want, winner.name)
		}
	}
	t.Logf("wins: %s %d, %s %d", procs[0].name, procs[0].wins, procs[1].name, procs[1].wins)
}

func TestApplyDecisionCompletesAnInterruptedResolution(t *testing.T) {
	dir := t.TempDir()
	r := planRequest("pl-c0ffee000001", "finanzas", testTime)
	mustCreate(t, dir, r)

	// Without a decision, ApplyDecision changes nothing.
	before := readFile(t, recordPath(t, dir, r.ID))
	got, err := ApplyDecision(dir, r.ID)
	if err != nil || got.Status != protocol.RequestPending {
		t.Fatalf("ApplyDecision without a decision = %+v, %v", got, err)
	}
	if after := readFile(t, recordPath(t, dir, r.ID)); !bytes.Equal(before, after) {
		t.Fatal("ApplyDecision without a decision rewrote the record")
	}

	// A resolver that crashed after its decision and before the rewrite.
	at := testTime.Add(90 * time.Second)
	d := fmt.Sprintf(`{"event":"reject","by":"lead","text":"split the transfer","at":%q}`, at.Format(time.RFC3339Nano))
	if err := os.WriteFile(decisionPath(dir, r.ID), []byte(d), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, _ := LoadRequest(dir, r.ID); got.Status != protocol.RequestPending {
		t.Fatalf("record is %s before ApplyDecision", got.Status)
	}

	// Another resolver now loses to the decision, even though the record
	// still says pending.
	_, err = Resolve(dir, r.ID, Resolution{Event: protocol.EventApprove, By: "ui-2"})
	var already *store.AlreadyError
	if !errors.As(err, &already) || already.Status != protocol.RequestRejected || already.By != protocol.Lead {
		t.Fatalf("Resolve against an unapplied decision: %v, want already rejected by lead", err)
	}

	got, err = ApplyDecision(dir, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != protocol.RequestRejected || got.ResolvedBy != protocol.Lead || got.Feedback != "split the transfer" ||
		got.Approve == nil || *got.Approve || got.ResolvedAt == nil || !got.ResolvedAt.Equal(at) {
		t.Fatalf("applied record = %+v", got)
	}
	last := got.History[len(got.History)-1]
	if last.From != protocol.RequestPending || last.To != protocol.RequestRejected || last.By != protocol.Lead || !last.At.Equal(at) {
		t.Fatalf("last transition = %+v", last)
	}
	onDisk, err := LoadRequest(dir, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(onDisk, got) {
		t.Fatalf("on disk %+v\nreturned %+v", onDisk, got)
	}

	// Idempotent: applying again rewrites nothing.
	applied := readFile(t, recordPath(t, dir, r.ID))
	if _, err := ApplyDecision(dir, r.ID); err != nil {
		t.Fatal(err)
	}
	if again := readFile(t, recordPath(t, dir, r.ID)); !bytes.Equal(applied, again) {
		t.Fatal("a second ApplyDecision changed the record")
	}

	// A shutdown answer's text is the teammate's reason, not the lead's
	// request reason.
	sd := shutdownRequest("sd-c0ffee000002", "finanzas", testTime)
	mustCreate(t, dir, sd)
	d = fmt.Sprintf(`{"event":"reject","by":"finanzas","text":"mid transfer","at":%q}`, at.Format(time.RFC3339Nano))
	if err := os.WriteFile(decisionPath(dir, sd.ID), []byte(d), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err = ApplyDecision(dir, sd.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != protocol.RequestRejected || got.ResponseReason != "mid transfer" || got.Reason != "done for today" || got.Feedback != "" {
		t.Fatalf("applied shutdown record = %+v", got)
	}
}

func TestTerminalRecordsNeverChange(t *testing.T) {
	dir := t.TempDir()
	for i, st := range protocol.RequestStatuses {
		if !st.IsTerminal() {
			continue
		}
		// A record that reached its final state, plus a stray decision that
		// says otherwise: neither Resolve nor ApplyDecision may move it.
		r := planRequest(fmt.Sprintf("pl-7e57%08d", i), "data", testTime)
		r.Status, r.ResolvedBy = st, "finanzas"
		r.History = append(r.History, protocol.Transition{At: testTime, From: protocol.RequestPending, To: st, By: "finanzas"})
		b, _ := json.Marshal(r)
		path := filepath.Join(dir, teamdir.RequestsDir, r.ID+".json")
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, ev := range protocol.RequestEvents {
			_, err := Resolve(dir, r.ID, Resolution{Event: ev, By: protocol.Lead, Text: "x"})
			var already *store.AlreadyError
			if !errors.As(err, &already) || already.Status != st || already.By != "finanzas" {
				t.Errorf("%s record, %s: %v, want already %s by finanzas", st, ev, err, st)
			}
		}
		if _, err := os.Stat(decisionPath(dir, r.ID)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s record: a refused resolution wrote a decision (%v)", st, err)
		}
		d := fmt.Sprintf(`{"event":"approve","by":"lead","at":%q}`, testTime.Format(time.RFC3339))
		if err := os.WriteFile(decisionPath(dir, r.ID), []byte(d), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := ApplyDecision(dir, r.ID)
		if err != nil || got.Status != st {
			t.Errorf("%s record: ApplyDecision = %+v, %v", st, got, err)
		}
		if after := readFile(t, path); !bytes.Equal(b, after) {
			t.Errorf("%s record changed:\n%s\nto\n%s", st, b, after)
		}
	}
}

func TestInvalidIDsNeverBecomePaths(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "team")
	mustCreate(t, dir, planRequest("pl-000000000001", "reservas", testTime))
	// A file an escaping id would reach.
	if err := os.WriteFile(filepath.Join(dir, "x.json"), []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	before := testkit.Tree(t, root)

	bad := []string{"", "../x", "../../x", "a/b", "/etc/passwd", ".hidden", "-rf", "x y", "pl-\x00", strings.Repeat("a", 65)}
	for _, id := range bad {
		if _, err := teamdir.RequestPath(dir, id); err == nil {
			t.Errorf("teamdir.RequestPath(%q) accepted", id)
		}
		if _, err := LoadRequest(dir, id); err == nil || errors.Is(err, os.ErrNotExist) {
			t.Errorf("LoadRequest(%q) = %v, want a validation error", id, err)
		}
		if _, err := Resolve(dir, id, Resolution{Event: protocol.EventApprove, By: protocol.Lead}); err == nil {
			t.Errorf("Resolve(%q) accepted", id)
		}
		if _, err := ApplyDecision(dir, id); err == nil {
			t.Errorf("ApplyDecision(%q) accepted", id)
		}
		r := planRequest("pl-000000000009", "reservas", testTime)
		r.ID = id
		if err := CreateRequest(dir, r); err == nil {
			t.Errorf("CreateRequest with id %q accepted", id)
		}
	}
	if after := testkit.Tree(t, root); !reflect.DeepEqual(before, after) {
		t.Fatalf("invalid ids touched files:\nbefore %v\nafter  %v", before, after)
	}
}

func TestMemberRecords(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "team")
	if got, err := ListMembers(dir); err != nil || len(got) != 0 {
		t.Fatalf("ListMembers of an empty team = %v, %v", got, err)
	}
	since := testTime.Add(time.Minute)
	recs := []protocol.Member{
		{Name: "reservas", Role: "bookings", Runtime: RuntimeScript, Status: protocol.MemberWorking, Activity: "checking", Since: since},
		{Name: "data", Role: "records", Runtime: RuntimeExec, Status: protocol.MemberCrashed, Error: "exit status 1", PID: 4242, Since: since},
	}
	for i := range recs {
		if err := WriteMember(dir, &recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	got, err := LoadMember(dir, "reservas")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*got, recs[0]) {
		t.Fatalf("LoadMember = %+v, want %+v", *got, recs[0])
	}
	p, _ := teamdir.MemberPath(dir, "reservas")
	if info, err := os.Stat(p); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("member record: %v, %v; want mode 0600", info, err)
	}
	// Rewriting replaces the record whole.
	recs[0].Status, recs[0].Activity = protocol.MemberIdle, ""
	if err := WriteMember(dir, &recs[0]); err != nil {
		t.Fatal(err)
	}
	list, err := ListMembers(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []protocol.Member{recs[1], recs[0]}; !reflect.DeepEqual(list, want) {
		t.Fatalf("ListMembers = %+v\nwant %+v (sorted by name)", list, want)
	}

	before := testkit.Tree(t, root)
	for _, m := range []protocol.Member{
		{Name: "../x", Status: protocol.MemberIdle},
		{Name: "LEAD", Status: protocol.MemberIdle},
		{Name: "a/b", Status: protocol.MemberIdle},
		{Name: "ok", Status: "sleeping"},
	} {
		if err := WriteMember(dir, &m); err == nil {
			t.Errorf("WriteMember(%q, %q) accepted", m.Name, m.Status)
		}
		if _, err := LoadMember(dir, m.Name); err == nil {
			t.Errorf("LoadMember(%q) accepted", m.Name)
		}
	}
	if after := testkit.Tree(t, root); !reflect.DeepEqual(before, after) {
		t.Fatalf("invalid member records touched files:\nbefore %v\nafter  %v", before, after)
	}
}

// decisionPath is requests/<id>.decision of a valid id.
func decisionPath(dir, id string) string {
	p, err := teamdir.DecisionPath(dir, id)
	if err != nil {
		panic(err)
	}
	return p
}
