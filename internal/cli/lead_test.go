package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"huddle/inbox"
	"huddle/internal/testkit"
	"huddle/internal/testkit/dirrecords"
	"huddle/internal/testkit/natsteam"
	"huddle/protocol"
	"huddle/store"
	"huddle/team"
)

// demoTeam makes a team directory with `huddle init` and returns it.
func demoTeam(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), ".huddle")
	mustHuddle(t, "init", "--dir", dir)
	return dir
}

// inboxLines reads the messages in member's inbox (nil if it has none)
// without consuming them.
func inboxLines(t *testing.T, dir, member string) []protocol.Message {
	t.Helper()
	var got []protocol.Message
	o, err := inbox.NewObserver(dir, member, true, func(d inbox.Delivery) { got = append(got, d.Msg) })
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Drain(); err != nil {
		t.Fatal(err)
	}
	return got
}

func createPlan(t *testing.T, dir, id, from string) {
	t.Helper()
	r := protocol.NewRequest(protocol.KindPlan, id, from, protocol.Lead, time.Now(), 10*time.Minute)
	r.Plan = "a plan of " + from
	if err := dirrecords.CreateRequest(dir, &r); err != nil {
		t.Fatal(err)
	}
}

func loadRequest(t *testing.T, dir, id string) *protocol.Request {
	t.Helper()
	r, err := dirrecords.LoadRequest(dir, id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestCLIInitWritesTheTeamOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".huddle")
	r := mustHuddle(t, "init", "--dir", dir)
	path := team.ConfigPath(dir)
	if !strings.Contains(r.stdout, path) || strings.Count(r.stdout, "\n") != 2 || !strings.HasSuffix(r.stdout, "\nnext: huddle up --dir "+dir+"\n") {
		t.Errorf("init said %q, want a line naming %s, then the next step", r.stdout, path)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("team.json mode %v, want 0600", info.Mode().Perm())
	}
	written, _ := os.ReadFile(path)
	if !bytes.Equal(written, team.DemoTeam()) {
		t.Errorf("team.json is not the demo team")
	}

	// A second init refuses and leaves the (edited) file alone.
	edited := []byte(`{"name":"mine","members":[{"name":"solo","runtime":{"kind":"external"}}]}`)
	if err := os.WriteFile(path, edited, 0o600); err != nil {
		t.Fatal(err)
	}
	huddle(t, "init", "--dir", dir).wantError(t, ExitFail, "already exists", "init again")
	if got, _ := os.ReadFile(path); !bytes.Equal(got, edited) {
		t.Fatalf("a second init changed team.json to %s", got)
	}
}

// TestStoreInitThenStatus: init --store puts the demo team and its
// policies in the store, a second run says they are there and changes
// nothing, and status lists the members from the store. Init is not the
// same on a team directory (TestCLIInitWritesTheTeamOnce): it writes the
// files there, and a second run refuses.
func TestStoreInitThenStatus(t *testing.T) {
	url := natsteam.New(t, "")
	none := filepath.Join(t.TempDir(), "none")
	r := mustHuddle(t, "init", "--store", url, "--dir", none)
	for _, want := range []string{"put team.json from the demo template", "put ipc/reservas.puruto-ipc.json", "put .puruto-ipc.json"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("init --store: no %q in\n%s", want, r.stdout)
		}
	}
	if _, err := os.Stat(none); !os.IsNotExist(err) {
		t.Fatalf("init --store wrote the directory %s: %v", none, err)
	}
	again := mustHuddle(t, "init", "--store", url, "--dir", none)
	if !strings.Contains(again.stdout, "team.json is in the store already: left as it is") || strings.Contains(again.stdout, "put ") {
		t.Fatalf("init --store again:\n%s", again.stdout)
	}
	st := natsteam.Open(t, url)
	pol, err := st.Config(context.Background(), store.MemberPolicyConfig("reservas"))
	if err != nil || !json.Valid(pol) {
		t.Fatalf("reservas's policy in the store: %q, %v", pol, err)
	}

	rows := statusRows(t, "--store", url)
	var names []string
	for _, row := range rows {
		names = append(names, row.Name)
		if row.Status != notStarted || row.Lost {
			t.Errorf("row %+v: want not started", row)
		}
	}
	if got := strings.Join(names, ","); got != "reservas,finanzas,data,auditor" {
		t.Fatalf("status --store lists %s", got)
	}
	table := huddleIn(t, t.TempDir(), []string{"HUDDLE_STORE=" + url}, "status").wantOK(t, "status with $HUDDLE_STORE")
	if !strings.Contains(table.stdout, "team puruto-demo") || !strings.Contains(table.stdout, "reservas") {
		t.Fatalf("status with $HUDDLE_STORE:\n%s", table.stdout)
	}
}

// TestStoreInitFromADirectory: a team directory's own team.json and
// policies go in the store, and --template does not go with one.
func TestStoreInitFromADirectory(t *testing.T) {
	dir := demoTeam(t)
	cfg := `{"name":"mine","members":[{"name":"solo","runtime":{"kind":"external"},"ipc":"ipc/solo.puruto-ipc.json"}]}`
	if err := os.WriteFile(filepath.Join(dir, "team.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ipc", "solo.puruto-ipc.json"), []byte(`{"owner":"solo"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	url := natsteam.New(t, "")
	huddle(t, "init", "--store", url, "--dir", dir, "--template", "llm").
		wantError(t, ExitUsage, "--template and the team.json in", "init --store --template with a team")
	r := mustHuddle(t, "init", "--store", url, "--dir", dir)
	if !strings.Contains(r.stdout, "put team.json from "+dir) || !strings.Contains(r.stdout, "put ipc/solo.puruto-ipc.json") {
		t.Fatalf("init --store --dir:\n%s", r.stdout)
	}
	st := natsteam.Open(t, url)
	b, err := st.Config(context.Background(), store.ConfigTeam)
	if err != nil || string(b) != cfg {
		t.Fatalf("team.json in the store = %q, %v", b, err)
	}
	if pol, err := st.Config(context.Background(), store.MemberPolicyConfig("solo")); err != nil || string(pol) != `{"owner":"solo"}` {
		t.Fatalf("solo's policy = %q, %v", pol, err)
	}
	if rows := statusRows(t, "--store", url); len(rows) != 1 || rows[0].Name != "solo" {
		t.Fatalf("status --store = %+v", rows)
	}
}

func TestCLIFindsTheTeamByDirFlagEnvOrDefault(t *testing.T) {
	// No --dir, no $HUDDLE_DIR: ./.huddle.
	cwd := t.TempDir()
	huddleIn(t, cwd, nil, "init").wantOK(t, "init")
	if _, err := os.Stat(filepath.Join(cwd, ".huddle", "team.json")); err != nil {
		t.Fatalf("init without --dir: %v", err)
	}
	// $HUDDLE_DIR, relative to the working directory.
	huddleIn(t, cwd, []string{"HUDDLE_DIR=elsewhere"}, "init").wantOK(t, "init")
	if _, err := os.Stat(filepath.Join(cwd, "elsewhere", "team.json")); err != nil {
		t.Fatalf("init with $HUDDLE_DIR: %v", err)
	}
	// --dir wins over $HUDDLE_DIR.
	r := huddleIn(t, cwd, []string{"HUDDLE_DIR=nowhere"}, "status", "--json", "--dir", "elsewhere").wantOK(t, "status")
	if !strings.Contains(r.stdout, `"reservas"`) {
		t.Fatalf("status --dir elsewhere: %q", r.stdout)
	}
	// Every command on a directory without a team says how to make one.
	for _, args := range [][]string{
		{"status"}, {"requests"}, {"approve", "pl-000000000001"}, {"reject", "pl-000000000001", "--feedback", "x"},
		{"shutdown", "reservas"}, {"send", "reservas", "hi"}, {"broadcast", "hi"},
	} {
		args = append(args, "--dir", filepath.Join(cwd, "none"))
		huddleIn(t, cwd, nil, args...).wantError(t, ExitFail, "huddle init", args...)
	}
	if _, err := os.Stat(filepath.Join(cwd, "none")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("commands on a missing team created it (%v)", err)
	}
}

// TestCLIStatus: on both kinds of store, status lists team.json's
// members in its order, each joined with its record, as JSON and as a
// table; the environment names the team as the flag does.
func TestCLIStatus(t *testing.T) {
	onEachDemoStore(t, func(t *testing.T, on *teamOn) {
		since := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
		on.putMember(t, protocol.Member{Name: "reservas", Status: protocol.MemberWorking, Activity: "checking availability", Since: since, PID: 77})
		on.putMember(t, protocol.Member{Name: "data", Status: protocol.MemberCrashed, Error: "exit status 3", Since: since})
		r := on.must(t, "status", "--json")
		var rows []struct {
			Name, Role, Runtime, Status, Activity, Error string
			Since                                        *time.Time
			PID                                          int
		}
		if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
			t.Fatalf("status --json is not a JSON array: %v\n%s", err, r.stdout)
		}
		var names []string
		for _, row := range rows {
			names = append(names, row.Name)
		}
		if want := []string{"reservas", "finanzas", "data", "auditor"}; !reflect.DeepEqual(names, want) {
			t.Fatalf("members %v, want %v (team.json order)", names, want)
		}
		res, fin, data, aud := rows[0], rows[1], rows[2], rows[3]
		if res.Role != "bookings" || res.Runtime != "script" || res.Status != "working" ||
			res.Activity != "checking availability" || res.Since == nil || !res.Since.Equal(since) || res.PID != 77 {
			t.Errorf("reservas = %+v", res)
		}
		if fin.Status != "not started" || fin.Since != nil || fin.Activity != "" {
			t.Errorf("finanzas = %+v, want not started", fin)
		}
		if data.Status != "crashed" || data.Error != "exit status 3" {
			t.Errorf("data = %+v, want crashed with its error", data)
		}
		if aud.Runtime != "exec" || aud.Status != "not started" {
			t.Errorf("auditor = %+v", aud)
		}

		table := on.must(t, "status").stdout
		for _, want := range []string{"NAME", "reservas", "working", "checking availability", "not started", "error: exit status 3", "team puruto-demo"} {
			if !strings.Contains(table, want) {
				t.Errorf("status table lacks %q:\n%s", want, table)
			}
		}
		env := on.huddleEnv(t, "status").wantOK(t, "status with "+on.env)
		if !strings.Contains(env.stdout, "team puruto-demo") || !strings.Contains(env.stdout, "checking availability") {
			t.Fatalf("status with the team in the environment:\n%s", env.stdout)
		}
	})
}

var shutdownID = regexp.MustCompile(`^sd-[0-9a-f]{12}$`)

// TestCLIShutdown: on both kinds of store, shutdown makes a request and
// asks the member, flags before or after MEMBER; a stopped member's is
// cancelled at once and nothing is sent; --wait prints the member's
// answer.
func TestCLIShutdown(t *testing.T) {
	onEachDemoStore(t, func(t *testing.T, on *teamOn) {
		on.putMember(t, protocol.Member{Name: "finanzas", Status: protocol.MemberWorking, Since: time.Now()})
		// Flags may come before or after MEMBER.
		for i, shutdown := range []func() cliResult{
			func() cliResult { return on.huddle(t, "shutdown", "finanzas", "--reason", "end of day") },
			func() cliResult { return on.huddleFlagsFirst(t, "shutdown", "--reason", "end of day", "finanzas") },
		} {
			args := []string{"shutdown", "finanzas", fmt.Sprintf("(flags %s)", []string{"after MEMBER", "before it"}[i])}
			r := shutdown().wantOK(t, args...)
			id := strings.TrimSuffix(r.stdout, "\n")
			if !shutdownID.MatchString(id) {
				t.Fatalf("huddle %v printed %q, want one sd- id", args, r.stdout)
			}
			rec := on.request(t, id)
			if rec.Status != protocol.RequestPending || rec.Kind != protocol.KindShutdown || rec.From != protocol.Lead ||
				rec.To != "finanzas" || rec.Reason != "end of day" {
				t.Fatalf("record = %+v", rec)
			}
			msgs := on.messagesTo(t, "finanzas")
			if len(msgs) != i+1 || msgs[i].Type != protocol.TypeShutdownRequest || msgs[i].RequestID != id ||
				msgs[i].Reason != "end of day" || msgs[i].From != protocol.Lead {
				t.Fatalf("finanzas's inbox: %+v", msgs)
			}
		}

		// A stopped member: the request is cancelled at once and nothing is sent.
		on.putMember(t, protocol.Member{Name: "auditor", Status: protocol.MemberStopped, Since: time.Now()})
		r := on.must(t, "shutdown", "auditor")
		lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
		if len(lines) != 2 || !shutdownID.MatchString(lines[0]) || lines[1] != "cancelled: auditor is already stopped" {
			t.Fatalf("shutdown of a stopped member printed %q", r.stdout)
		}
		if rec := on.request(t, lines[0]); rec.Status != protocol.RequestCancelled {
			t.Fatalf("record = %+v, want cancelled", rec)
		}
		if msgs := on.messagesTo(t, "auditor"); len(msgs) != 0 {
			t.Fatalf("a cancelled shutdown was sent: %+v", msgs)
		}

		on.huddle(t, "shutdown", "zed").wantError(t, ExitFail, `no member "zed"`, "shutdown zed")
		on.huddle(t, "shutdown").wantError(t, ExitUsage, "MEMBER is required", "shutdown")
		on.huddle(t, "shutdown", "data", "finanzas").wantError(t, ExitUsage, `unexpected argument "finanzas"`, "shutdown data finanzas")

		// --wait, in a process of its own: the member agrees, as its
		// runtime would, and the answer is printed.
		on.putMember(t, protocol.Member{Name: "reservas", Status: protocol.MemberIdle, Since: time.Now()})
		cmd := exec.Command(huddleBinary(t), slices.Concat([]string{"shutdown", "reservas", "--reason", "done", "--wait", "--timeout", "60s"}, on.args)...)
		cmd.Env = append(os.Environ(), "HUDDLE_DIR=", "HUDDLE_STORE=")
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr testkit.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		rd := bufio.NewReader(out)
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("shutdown --wait: %v (stderr %s)", err, stderr.String())
		}
		sid := strings.TrimSpace(line)
		if asked := on.messagesTo(t, "reservas"); len(asked) != 1 || asked[0].Type != protocol.TypeShutdownRequest || asked[0].RequestID != sid || asked[0].Reason != "done" {
			t.Fatalf("reservas was asked %+v (id %q)", asked, sid)
		}
		if _, err := on.st.Decide(context.Background(), sid, store.Decision{Event: protocol.EventApprove, By: "reservas", Text: "bye", At: time.Now()}); err != nil {
			t.Fatal(err)
		}
		rest, _ := rd.ReadString(0)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("shutdown --wait: %v (stderr %s)", err, stderr.String())
		}
		if rest != "approved by reservas: bye\n" {
			t.Fatalf("shutdown --wait printed %q", rest)
		}
		if strings.Contains(stderr.String(), natsToken) {
			t.Fatalf("shutdown --wait shows the token: %q", stderr.String())
		}
		var recs []protocol.Request
		all := on.must(t, "requests", "--all", "--json")
		if err := json.Unmarshal([]byte(all.stdout), &recs); err != nil || len(recs) != 4 ||
			recs[0].To != "finanzas" || recs[1].To != "finanzas" || !slices.ContainsFunc(recs[2:], func(r protocol.Request) bool { return r.ID == sid && r.Status == protocol.RequestApproved }) {
			t.Fatalf("requests --all --json: %v\n%s", err, all.stdout)
		}
	})
}

// TestCLISendAndBroadcast: on both kinds of store, what send and
// broadcast append is in the members' inboxes, from the lead or --from,
// the sender left out of its broadcast; a stranger or no text is refused
// before anything is written.
func TestCLISendAndBroadcast(t *testing.T) {
	onEachDemoStore(t, func(t *testing.T, on *teamOn) {
		r := on.must(t, "send", "reservas", "hello", "there")
		if r.stdout != "sent to reservas\n" {
			t.Errorf("send printed %q", r.stdout)
		}
		// --from before the text, and -- before text that starts with a dash.
		on.must(t, "send", "finanzas", "--from", "data", "--", "-1", "EUR")
		if got := on.messagesTo(t, "reservas"); len(got) != 1 || got[0].Type != protocol.TypeMessage ||
			got[0].From != protocol.Lead || got[0].Content != "hello there" {
			t.Fatalf("reservas got %+v", got)
		}
		if got := on.messagesTo(t, "finanzas"); len(got) != 1 || got[0].From != "data" || got[0].Content != "-1 EUR" {
			t.Fatalf("finanzas got %+v", got)
		}

		r = on.must(t, "broadcast", "--from", "reservas", "wrap", "up")
		if r.stdout != "broadcast to 3 members\n" {
			t.Errorf("broadcast printed %q", r.stdout)
		}
		on.must(t, "broadcast", "all hands")
		sent := map[string]int{"reservas": 1, "finanzas": 1} // the messages before the broadcasts
		want := map[string][]string{
			"reservas": {"lead: all hands"},
			"finanzas": {"reservas: wrap up", "lead: all hands"},
			"data":     {"reservas: wrap up", "lead: all hands"},
			"auditor":  {"reservas: wrap up", "lead: all hands"},
		}
		for member, w := range want {
			var got []string
			for _, m := range on.messagesTo(t, member)[sent[member]:] {
				if m.Type != protocol.TypeBroadcast {
					t.Errorf("%s got a %s", member, m.Type)
				}
				got = append(got, m.From+": "+m.Content)
			}
			if !reflect.DeepEqual(got, w) {
				t.Errorf("%s got %q, want %q", member, got, w)
			}
		}

		untouched := on.untouched(t)
		on.huddle(t, "send", "zed", "hi").wantError(t, ExitFail, `no member "zed" in team puruto-demo`, "send zed")
		on.huddle(t, "send", "data", "hi", "--from", "zed").wantError(t, ExitFail, `no member "zed"`, "send --from zed")
		on.huddle(t, "broadcast", "hi", "--from", "zed").wantError(t, ExitFail, `no member "zed"`, "broadcast --from zed")
		on.huddle(t, "send", "data").wantError(t, ExitUsage, "TEXT is required", "send data")
		on.huddle(t, "broadcast").wantError(t, ExitUsage, "TEXT is required", "broadcast")
		untouched("refused sends")
	})
}

// TestCLIRequests: on both kinds of store, requests lists the pending
// requests, oldest first, and --all the decided ones after them, as JSON
// and as a table with each one's age and time left.
func TestCLIRequests(t *testing.T) {
	onEachDemoStore(t, func(t *testing.T, on *teamOn) {
		if r := on.must(t, "requests", "--json"); strings.TrimSpace(r.stdout) != "[]" {
			t.Fatalf("requests --json with none = %q, want []", r.stdout)
		}
		if r := on.must(t, "requests", "--all", "--json"); strings.TrimSpace(r.stdout) != "[]" {
			t.Fatalf("requests --all --json with none = %q, want []", r.stdout)
		}
		if r := on.must(t, "requests"); r.stdout != "no pending requests\n" {
			t.Fatalf("requests with none = %q", r.stdout)
		}

		natsteam.Plan(t, on.st, "pl-000000000001", "reservas")
		sd := strings.TrimSpace(on.must(t, "shutdown", "data").stdout)
		natsteam.Plan(t, on.st, "pl-000000000002", "finanzas")
		on.must(t, "approve", "pl-000000000002")

		list := func(args ...string) []protocol.Request {
			t.Helper()
			r := on.must(t, append([]string{"requests", "--json"}, args...)...)
			var out []protocol.Request
			if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
				t.Fatalf("requests --json: %v\n%s", err, r.stdout)
			}
			return out
		}
		pending := list()
		if len(pending) != 2 || pending[0].ID != "pl-000000000001" || pending[1].ID != sd {
			t.Fatalf("pending = %+v, want pl-000000000001 then %s", pending, sd)
		}
		if pending[0].Plan != "a plan of reservas" || pending[0].Status != protocol.RequestPending || pending[1].Kind != protocol.KindShutdown {
			t.Fatalf("pending records = %+v", pending)
		}
		all := list("--all")
		if len(all) != 3 || all[2].ID != "pl-000000000002" || all[2].Status != protocol.RequestApproved || all[2].ResolvedBy != protocol.Lead {
			t.Fatalf("--all = %+v", all)
		}

		table := on.must(t, "requests").stdout
		for _, row := range []string{
			`(?m)^ID +KIND +FROM → TO +STATUS +AGE +LEFT +WHAT$`,
			`(?m)^pl-000000000001 +plan +reservas → lead +pending +\d+s +9m\d\ds +a plan of reservas$`,
			`(?m)^` + sd + ` +shutdown +lead → data +pending +\d+s +1m\d\ds +-$`,
		} {
			if !regexp.MustCompile(row).MatchString(table) {
				t.Errorf("requests table has no line matching %s:\n%s", row, table)
			}
		}
		if strings.Contains(table, "pl-000000000002") {
			t.Errorf("the pending table lists a decided request:\n%s", table)
		}
		if all := on.must(t, "requests", "--all").stdout; !strings.Contains(all, "approved by lead") {
			t.Errorf("requests --all lacks the decided request:\n%s", all)
		}
	})
}

// TestRequestsAndStatusGolden: on both kinds of store, requests and
// status print the same records the same, to the byte: the pending
// requests, all of them, and the members, each --json.
func TestRequestsAndStatusGolden(t *testing.T) {
	onEachDemoStore(t, func(t *testing.T, on *teamOn) {
		putRecords(t, on)
		// First: on a store a member not seen within 15 s would show lost.
		wantGolden(t, "status-json", on.must(t, "status", "--json").stdout)
		wantGolden(t, "requests-json", on.must(t, "requests", "--json").stdout)
		wantGolden(t, "requests-all-json", on.must(t, "requests", "--all", "--json").stdout)
	})
}

// TestCLIRequestsCountAnInterruptedDecision: a decision whose record
// rewrite was interrupted counts as decided. Only a team directory has
// one: the files store writes a decision beside the record and then
// rewrites the record, where NATS decides in one write to the bucket.
func TestCLIRequestsCountAnInterruptedDecision(t *testing.T) {
	dir := demoTeam(t)
	createPlan(t, dir, "pl-000000000003", "data")
	d := `{"event":"reject","by":"lead","text":"no","at":"2026-11-30T09:00:00Z"}`
	if err := os.WriteFile(filepath.Join(dir, "requests", "pl-000000000003.decision"), []byte(d), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := mustHuddle(t, "requests", "--json", "--dir", dir); strings.TrimSpace(r.stdout) != "[]" {
		t.Fatalf("a decided request is listed as pending: %s", r.stdout)
	}
}

// TestCLIApproveAndReject: on both kinds of store, approve and reject
// decide a plan and tell its member; the first decision wins; a bad or
// missing argument, or a shutdown request (the teammate's to answer), is
// refused before anything is written.
func TestCLIApproveAndReject(t *testing.T) {
	onEachDemoStore(t, func(t *testing.T, on *teamOn) {
		natsteam.Plan(t, on.st, "pl-aaaaaaaaaaaa", "reservas")
		natsteam.Plan(t, on.st, "pl-bbbbbbbbbbbb", "finanzas")
		natsteam.Plan(t, on.st, "pl-cccccccccccc", "data")

		on.must(t, "approve", "pl-aaaaaaaaaaaa", "--feedback", "go ahead")
		rec := on.request(t, "pl-aaaaaaaaaaaa")
		if rec.Status != protocol.RequestApproved || rec.ResolvedBy != protocol.Lead || rec.Feedback != "go ahead" {
			t.Fatalf("approved record = %+v", rec)
		}
		msgs := on.messagesTo(t, "reservas")
		if len(msgs) != 1 || msgs[0].Type != protocol.TypePlanApprovalResponse || msgs[0].RequestID != "pl-aaaaaaaaaaaa" ||
			!msgs[0].Approved() || msgs[0].Feedback != "go ahead" {
			t.Fatalf("reservas got %+v", msgs)
		}

		// The first decision wins; later ones say who made it, exit 1 and send nothing.
		on.huddle(t, "approve", "pl-aaaaaaaaaaaa").wantError(t, ExitFail, "already approved by lead", "approve twice")
		on.huddleFlagsFirst(t, "reject", "pl-aaaaaaaaaaaa", "--feedback", "no").wantError(t, ExitFail, "already approved by lead", "reject after approve")
		if got := on.messagesTo(t, "reservas"); len(got) != 1 {
			t.Fatalf("a refused decision sent %+v", got[1:])
		}

		// Flags before the ID.
		on.huddleFlagsFirst(t, "reject", "--feedback", "split it in two", "pl-bbbbbbbbbbbb").wantOK(t, "reject --feedback … pl-bbbbbbbbbbbb")
		rec = on.request(t, "pl-bbbbbbbbbbbb")
		if rec.Status != protocol.RequestRejected || rec.Feedback != "split it in two" {
			t.Fatalf("rejected record = %+v", rec)
		}
		if msgs := on.messagesTo(t, "finanzas"); len(msgs) != 1 || msgs[0].Approved() || msgs[0].Feedback != "split it in two" {
			t.Fatalf("finanzas got %+v", msgs)
		}

		// Reject without feedback is bad usage, refused before anything is touched.
		untouched := on.untouched(t)
		on.huddle(t, "reject", "pl-cccccccccccc").wantError(t, ExitUsage, "--feedback", "reject without feedback")
		on.huddle(t, "reject", "pl-cccccccccccc", "--feedback", "  ").wantError(t, ExitUsage, "--feedback", "reject with blank feedback")
		on.huddle(t, "approve").wantError(t, ExitUsage, "ID is required", "approve")
		on.huddle(t, "approve", "pl-cccccccccccc", "../x").wantError(t, ExitUsage, "../x", "approve a good and a bad id")
		on.huddle(t, "approve", "pl-000000000404").wantError(t, ExitFail, "no request pl-000000000404", "approve unknown")
		untouched("refused decisions")
		if rec := on.request(t, "pl-cccccccccccc"); rec.Status != protocol.RequestPending {
			t.Fatalf("pl-cccccccccccc = %s, want still pending", rec.Status)
		}

		// Several at once: each decided in turn, a line each; one that
		// fails is said and the others still go in.
		natsteam.Plan(t, on.st, "pl-dddddddddddd", "auditor")
		r := on.huddle(t, "approve", "pl-cccccccccccc", "pl-aaaaaaaaaaaa", "pl-dddddddddddd", "--feedback", "both")
		if r.code != ExitFail || strings.Count(r.stdout, "\n") != 2 || !strings.Contains(r.stdout, "approved pl-cccccccccccc: data's plan") ||
			!strings.Contains(r.stdout, "approved pl-dddddddddddd: auditor's plan") || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, "pl-aaaaaaaaaaaa") {
			t.Fatalf("approve three, one decided already: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
		}
		for _, id := range []string{"pl-cccccccccccc", "pl-dddddddddddd"} {
			if rec := on.request(t, id); rec.Status != protocol.RequestApproved || rec.Feedback != "both" {
				t.Fatalf("%s after approve of several: %+v", id, rec)
			}
		}

		// Only the teammate answers a shutdown request.
		sd := strings.TrimSpace(on.must(t, "shutdown", "data").stdout)
		on.huddle(t, "approve", sd).wantError(t, ExitFail, "shutdown request", "approve a shutdown")
		if rec := on.request(t, sd); rec.Status != protocol.RequestPending {
			t.Fatalf("%s = %s, want still pending", sd, rec.Status)
		}
	})
}

// TestCLIApproversRace: on both kinds of store, two `huddle approve`
// processes race on one request, many rounds; exactly one wins each time
// and says so, the other says who did and exits 1, and the member is told
// once, with the winner's feedback.
func TestCLIApproversRace(t *testing.T) {
	onEachDemoStore(t, func(t *testing.T, on *teamOn) {
		var id string
		for round := range 20 {
			id = protocol.NewRequestID(protocol.KindPlan)
			natsteam.Plan(t, on.st, id, "finanzas")
			var wg sync.WaitGroup
			results := make([]cliResult, 2)
			for i := range results {
				wg.Add(1)
				go func() {
					defer wg.Done()
					results[i] = on.huddle(t, "approve", id, "--feedback", fmt.Sprintf("go %d", i))
				}()
			}
			wg.Wait()
			wins := 0
			for _, r := range results {
				switch r.code {
				case ExitOK:
					wins++
					if r.stdout != "approved "+id+": finanzas's plan; finanzas has been told\n" {
						t.Errorf("round %d: the winner said %q", round, r.stdout)
					}
				case ExitFail:
					r.wantError(t, ExitFail, "request "+id+" already approved by lead", "the losing approve")
				default:
					t.Fatalf("round %d: approve: exit %d, stderr %q", round, r.code, r.stderr)
				}
			}
			if wins != 1 {
				t.Fatalf("round %d: %d approves won: %+v", round, wins, results)
			}
			rec := on.request(t, id)
			if rec.Status != protocol.RequestApproved || rec.ResolvedBy != protocol.Lead {
				t.Fatalf("round %d: record after the race: %+v", round, rec)
			}
			// The teammate is told once.
			var told []protocol.Message
			for _, m := range on.messagesTo(t, "finanzas") {
				if m.RequestID == id {
					told = append(told, m)
				}
			}
			if len(told) != 1 || told[0].Type != protocol.TypePlanApprovalResponse || told[0].Feedback != rec.Feedback {
				t.Fatalf("round %d: finanzas was told %+v (record feedback %q)", round, told, rec.Feedback)
			}
		}
		on.huddle(t, "reject", id, "--feedback", "no").wantError(t, ExitFail, "already approved by lead", "reject after approve")
		on.huddle(t, "approve", "pl-nothere").wantError(t, ExitFail, "no request pl-nothere", "approve an unknown id")
	})
}

// statusRows is status --json with args, decoded.
func statusRows(t *testing.T, args ...string) []memberRow {
	t.Helper()
	r := mustHuddle(t, append([]string{"status", "--json"}, args...)...)
	var rows []memberRow
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
		t.Fatalf("status --json: %v\n%s", err, r.stdout)
	}
	return rows
}

// TestStoreLostMember: a member whose runtime put it running and then
// went silent shows lost once --lost-after has passed; one seen recently
// does not. Only a store has it: a team directory's runtime.lock, not a
// member's last write, says whether it runs (--lost-after is refused
// there).
func TestStoreLostMember(t *testing.T) {
	on := demoOn(t, "nats")
	url, st := on.url, on.st
	if err := st.PutMember(context.Background(), &protocol.Member{Name: "data", Status: protocol.MemberWorking, Activity: "counting", Since: time.Now()}); err != nil {
		t.Fatal(err)
	}
	rows := statusRows(t, "--store", url, "--lost-after", "1h")
	if rows[2].Name != "data" || rows[2].Status != string(protocol.MemberWorking) || rows[2].Lost {
		t.Fatalf("status with data just seen: %+v", rows[2])
	}
	testkit.WaitFor(t, 20*time.Second, "data shown lost", func() bool {
		rows = statusRows(t, "--store", url, "--lost-after", "300ms")
		return rows[2].Lost
	})
	if rows[2].Status != string(protocol.MemberWorking) || rows[2].Seen == nil || rows[0].Lost {
		t.Fatalf("lost row %+v, reservas %+v", rows[2], rows[0])
	}
	table := mustHuddle(t, "status", "--store", url, "--lost-after", "300ms")
	if !strings.Contains(table.stdout, "lost") || !strings.Contains(table.stdout, "was working, not seen since") {
		t.Fatalf("status table:\n%s", table.stdout)
	}
	if !strings.Contains(table.stdout, "team not running (no member seen within 300ms)") {
		t.Fatalf("status table with every live member lost:\n%s", table.stdout)
	}
	huddle(t, "status", "--store", url, "--lost-after", "0s").wantError(t, ExitUsage, "--lost-after must be more than 0", "--lost-after 0")
	huddle(t, "status", "--dir", t.TempDir(), "--lost-after", "1s").wantError(t, ExitUsage, "--lost-after goes with --store", "--lost-after on a directory")
}

// TestStoreDeadlinesShownPausedWhileDown: with every member's record
// stopped (no runtime of the team alive), requests and show say the
// team is not running and show a pending deadline paused; with a member
// running again, they count it down. On a store the members' records say
// whether the team runs; on a team directory runtime.lock alone does
// (TestKill9ThenTheCommandsSayNotRunning).
func TestStoreDeadlinesShownPausedWhileDown(t *testing.T) {
	on := demoOn(t, "nats")
	url, st := on.url, on.st
	ctx := context.Background()
	if err := st.PutMember(ctx, &protocol.Member{Name: "data", Status: protocol.MemberStopped, Since: time.Now()}); err != nil {
		t.Fatal(err)
	}
	const id = "pl-downdowndownX"
	natsteam.Plan(t, st, id, "data")
	r := mustHuddle(t, "requests", "--store", url)
	if !strings.Contains(r.stdout, "team not running (no member seen within 15s); deadlines are paused until it starts") || !strings.Contains(r.stdout, "paused, ") {
		t.Fatalf("requests --store with the team down:\n%s", r.stdout)
	}
	if r := mustHuddle(t, "show", "--store", url, id); !strings.Contains(r.stdout, "left when the team starts)") {
		t.Fatalf("show --store with the team down:\n%s", r.stdout)
	}
	if err := st.PutMember(ctx, &protocol.Member{Name: "data", Status: protocol.MemberWorking, Since: time.Now()}); err != nil {
		t.Fatal(err)
	}
	r = mustHuddle(t, "requests", "--store", url)
	if strings.Contains(r.stdout, "paused") || strings.Contains(r.stdout, "not running") || !strings.Contains(r.stdout, id) {
		t.Fatalf("requests --store with data running:\n%s", r.stdout)
	}
}

func TestCLIRefusesBadNamesBeforeTouchingFiles(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "team", ".huddle")
	mustHuddle(t, "init", "--dir", dir)
	before := testkit.Tree(t, root)
	for _, args := range [][]string{
		{"shutdown", "../x"},
		{"shutdown", "LEAD"},
		{"shutdown", "lead"},
		{"shutdown", "a/b"},
		{"send", "../x", "hi"},
		{"send", "LEAD", "hi"},
		{"send", "../../x", "hi"},
		{"send", "reservas", "hi", "--from", "../x"},
		{"send", "reservas", "hi", "--from", "LEAD"},
		{"broadcast", "hi", "--from", "../x"},
		{"approve", "../x"},
		{"approve", "a/b"},
		{"reject", "../requests/x", "--feedback", "no"},
		{"approve", ""},
	} {
		args = append(args, "--dir", dir)
		r := huddle(t, args...)
		r.wantError(t, ExitUsage, "", args...)
		if !strings.Contains(r.stderr, "invalid") && !strings.Contains(r.stderr, "reserved") && !strings.Contains(r.stderr, "empty") {
			t.Errorf("huddle %v: %q does not say what is wrong", args, r.stderr)
		}
	}
	if after := testkit.Tree(t, root); !reflect.DeepEqual(before, after) {
		t.Fatalf("bad names touched files:\nbefore %v\nafter  %v", before, after)
	}
}

func TestCLIHelpAndBadFlags(t *testing.T) {
	for name, flags := range map[string][]string{
		"init":      {"--dir"},
		"status":    {"--dir", "--json"},
		"requests":  {"--dir", "--all", "--json"},
		"approve":   {"--dir", "--feedback"},
		"reject":    {"--dir", "--feedback"},
		"shutdown":  {"--dir", "--reason"},
		"send":      {"--dir", "--from"},
		"broadcast": {"--dir", "--from"},
	} {
		r := huddle(t, name, "-h")
		if r.code != ExitOK || r.stderr != "" || !strings.HasPrefix(r.stdout, "usage: huddle "+name+" ") {
			t.Errorf("%s -h: exit %d, stdout %q, stderr %q", name, r.code, r.stdout, r.stderr)
		}
		for _, f := range flags {
			if !regexp.MustCompile(`(?m)^  ` + f + `( |$)`).MatchString(r.stdout) {
				t.Errorf("%s -h does not describe %s:\n%s", name, f, r.stdout)
			}
		}
		huddle(t, name, "--bogus").wantError(t, ExitUsage, "--bogus", name, "--bogus")
	}
	// The dispatcher lists every lead command.
	r := huddle(t, "help")
	for _, name := range []string{"init", "status", "requests", "approve", "reject", "shutdown", "send", "broadcast"} {
		if !strings.Contains(r.stdout, "  "+name+" ") {
			t.Errorf("help does not list %s:\n%s", name, r.stdout)
		}
	}
}

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                             "0s",
		42 * time.Second:              "42s",
		-42 * time.Second:             "42s",
		3*time.Minute + 5*time.Second: "3m05s",
		2*time.Hour + 3*time.Minute:   "2h03m",
		76 * time.Hour:                "3d04h",
	} {
		if got := shortDuration(d); got != want {
			t.Errorf("shortDuration(%v) = %q, want %q", d, got, want)
		}
	}
}
