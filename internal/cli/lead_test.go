package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"huddle/inbox"
	"huddle/internal/testkit"
	"huddle/internal/testkit/dirrecords"
	"huddle/protocol"
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

// consume reads and consumes member's inbox, so a later call sees only what
// came after.
func consume(t *testing.T, dir, member string) []protocol.Message {
	t.Helper()
	var got []protocol.Message
	c, err := inbox.NewConsumer(dir, member, func(_ context.Context, d inbox.Delivery) error {
		got = append(got, d.Msg)
		return nil
	}, inbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Drain(context.Background()); err != nil {
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
	huddle(t, "init", "--dir", dir).wantError(t, exitFail, "already exists", "init again")
	if got, _ := os.ReadFile(path); !bytes.Equal(got, edited) {
		t.Fatalf("a second init changed team.json to %s", got)
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
		huddleIn(t, cwd, nil, args...).wantError(t, exitFail, "huddle init", args...)
	}
	if _, err := os.Stat(filepath.Join(cwd, "none")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("commands on a missing team created it (%v)", err)
	}
}

func TestCLIStatus(t *testing.T) {
	dir := demoTeam(t)
	since := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	for _, m := range []protocol.Member{
		{Name: "reservas", Status: protocol.MemberWorking, Activity: "checking availability", Since: since, PID: 77},
		{Name: "data", Status: protocol.MemberCrashed, Error: "exit status 3", Since: since},
	} {
		if err := dirrecords.WriteMember(dir, &m); err != nil {
			t.Fatal(err)
		}
	}
	r := mustHuddle(t, "status", "--json", "--dir", dir)
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

	table := mustHuddle(t, "status", "--dir", dir).stdout
	for _, want := range []string{"NAME", "reservas", "working", "checking availability", "not started", "error: exit status 3", "puruto-demo"} {
		if !strings.Contains(table, want) {
			t.Errorf("status table lacks %q:\n%s", want, table)
		}
	}
}

var shutdownID = regexp.MustCompile(`^sd-[0-9a-f]{12}$`)

func TestCLIShutdown(t *testing.T) {
	dir := demoTeam(t)
	if err := dirrecords.WriteMember(dir, &protocol.Member{Name: "finanzas", Status: protocol.MemberWorking, Since: time.Now()}); err != nil {
		t.Fatal(err)
	}
	// Flags may come before or after MEMBER.
	for _, args := range [][]string{
		{"shutdown", "finanzas", "--reason", "end of day", "--dir", dir},
		{"shutdown", "--dir", dir, "--reason", "end of day", "finanzas"},
	} {
		r := mustHuddle(t, args...)
		id := strings.TrimSuffix(r.stdout, "\n")
		if !shutdownID.MatchString(id) {
			t.Fatalf("huddle %v printed %q, want one sd- id", args, r.stdout)
		}
		rec := loadRequest(t, dir, id)
		if rec.Status != protocol.RequestPending || rec.Kind != protocol.KindShutdown || rec.From != protocol.Lead ||
			rec.To != "finanzas" || rec.Reason != "end of day" {
			t.Fatalf("record = %+v", rec)
		}
		msgs := consume(t, dir, "finanzas")
		if len(msgs) != 1 || msgs[0].Type != protocol.TypeShutdownRequest || msgs[0].RequestID != id ||
			msgs[0].Reason != "end of day" || msgs[0].From != protocol.Lead {
			t.Fatalf("finanzas's inbox: %+v", msgs)
		}
	}

	// A stopped member: the request is cancelled at once and nothing is sent.
	if err := dirrecords.WriteMember(dir, &protocol.Member{Name: "auditor", Status: protocol.MemberStopped, Since: time.Now()}); err != nil {
		t.Fatal(err)
	}
	r := mustHuddle(t, "shutdown", "auditor", "--dir", dir)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != 2 || !shutdownID.MatchString(lines[0]) || lines[1] != "cancelled: auditor is already stopped" {
		t.Fatalf("shutdown of a stopped member printed %q", r.stdout)
	}
	if rec := loadRequest(t, dir, lines[0]); rec.Status != protocol.RequestCancelled {
		t.Fatalf("record = %+v, want cancelled", rec)
	}
	if msgs := inboxLines(t, dir, "auditor"); len(msgs) != 0 {
		t.Fatalf("a cancelled shutdown was sent: %+v", msgs)
	}

	huddle(t, "shutdown", "zed", "--dir", dir).wantError(t, exitFail, `no member "zed"`, "shutdown zed")
	huddle(t, "shutdown", "--dir", dir).wantError(t, exitUsage, "MEMBER is required", "shutdown")
	huddle(t, "shutdown", "data", "finanzas", "--dir", dir).wantError(t, exitUsage, `unexpected argument "finanzas"`, "shutdown data finanzas")
}

func TestCLISendAndBroadcast(t *testing.T) {
	dir := demoTeam(t)
	r := mustHuddle(t, "send", "reservas", "hello", "there", "--dir", dir)
	if r.stdout != "sent to reservas\n" {
		t.Errorf("send printed %q", r.stdout)
	}
	// --from before the text, and -- before text that starts with a dash.
	mustHuddle(t, "send", "--dir", dir, "finanzas", "--from", "data", "--", "-1", "EUR")
	if got := consume(t, dir, "reservas"); len(got) != 1 || got[0].Type != protocol.TypeMessage ||
		got[0].From != protocol.Lead || got[0].Content != "hello there" {
		t.Fatalf("reservas got %+v", got)
	}
	if got := consume(t, dir, "finanzas"); len(got) != 1 || got[0].From != "data" || got[0].Content != "-1 EUR" {
		t.Fatalf("finanzas got %+v", got)
	}

	r = mustHuddle(t, "broadcast", "--from", "reservas", "wrap", "up", "--dir", dir)
	if r.stdout != "broadcast to 3 members\n" {
		t.Errorf("broadcast printed %q", r.stdout)
	}
	mustHuddle(t, "broadcast", "all hands", "--dir", dir)
	want := map[string][]string{
		"reservas": {"lead: all hands"},
		"finanzas": {"reservas: wrap up", "lead: all hands"},
		"data":     {"reservas: wrap up", "lead: all hands"},
		"auditor":  {"reservas: wrap up", "lead: all hands"},
	}
	for member, w := range want {
		var got []string
		for _, m := range consume(t, dir, member) {
			if m.Type != protocol.TypeBroadcast {
				t.Errorf("%s got a %s", member, m.Type)
			}
			got = append(got, m.From+": "+m.Content)
		}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("%s got %q, want %q", member, got, w)
		}
	}

	before := testkit.Tree(t, filepath.Dir(dir))
	huddle(t, "send", "zed", "hi", "--dir", dir).wantError(t, exitFail, `no member "zed"`, "send zed")
	huddle(t, "send", "data", "hi", "--from", "zed", "--dir", dir).wantError(t, exitFail, `no member "zed"`, "send --from zed")
	huddle(t, "broadcast", "hi", "--from", "zed", "--dir", dir).wantError(t, exitFail, `no member "zed"`, "broadcast --from zed")
	huddle(t, "send", "data", "--dir", dir).wantError(t, exitUsage, "TEXT is required", "send data")
	huddle(t, "broadcast", "--dir", dir).wantError(t, exitUsage, "TEXT is required", "broadcast")
	if after := testkit.Tree(t, filepath.Dir(dir)); !reflect.DeepEqual(before, after) {
		t.Fatalf("refused sends touched files:\nbefore %v\nafter  %v", before, after)
	}
}

func TestCLIRequests(t *testing.T) {
	dir := demoTeam(t)
	if r := mustHuddle(t, "requests", "--json", "--dir", dir); strings.TrimSpace(r.stdout) != "[]" {
		t.Fatalf("requests --json with none = %q, want []", r.stdout)
	}
	if r := mustHuddle(t, "requests", "--all", "--json", "--dir", dir); strings.TrimSpace(r.stdout) != "[]" {
		t.Fatalf("requests --all --json with none = %q, want []", r.stdout)
	}
	if r := mustHuddle(t, "requests", "--dir", dir); r.stdout != "no pending requests\n" {
		t.Fatalf("requests with none = %q", r.stdout)
	}

	createPlan(t, dir, "pl-000000000001", "reservas")
	sd := strings.TrimSpace(mustHuddle(t, "shutdown", "data", "--dir", dir).stdout)
	createPlan(t, dir, "pl-000000000002", "finanzas")
	mustHuddle(t, "approve", "pl-000000000002", "--dir", dir)

	list := func(args ...string) []protocol.Request {
		t.Helper()
		r := mustHuddle(t, append([]string{"requests", "--json", "--dir", dir}, args...)...)
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

	table := mustHuddle(t, "requests", "--dir", dir).stdout
	for _, row := range []string{
		`(?m)^ID +KIND +FROM → TO +STATUS +AGE +LEFT$`,
		`(?m)^pl-000000000001 +plan +reservas → lead +pending +\d+s +9m\d\ds$`,
		`(?m)^` + sd + ` +shutdown +lead → data +pending +\d+s +1m\d\ds$`,
	} {
		if !regexp.MustCompile(row).MatchString(table) {
			t.Errorf("requests table has no line matching %s:\n%s", row, table)
		}
	}
	if strings.Contains(table, "pl-000000000002") {
		t.Errorf("the pending table lists a decided request:\n%s", table)
	}
	if all := mustHuddle(t, "requests", "--all", "--dir", dir).stdout; !strings.Contains(all, "approved by lead") {
		t.Errorf("requests --all lacks the decided request:\n%s", all)
	}

	// A decision whose record rewrite was interrupted counts as decided.
	createPlan(t, dir, "pl-000000000003", "data")
	d := `{"event":"reject","by":"lead","text":"no","at":"2026-11-30T09:00:00Z"}`
	if err := os.WriteFile(filepath.Join(dir, "requests", "pl-000000000003.decision"), []byte(d), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, r := range list() {
		if r.ID == "pl-000000000003" {
			t.Fatalf("a decided request is listed as pending: %+v", r)
		}
	}
}

func TestCLIApproveAndReject(t *testing.T) {
	dir := demoTeam(t)
	createPlan(t, dir, "pl-aaaaaaaaaaaa", "reservas")
	createPlan(t, dir, "pl-bbbbbbbbbbbb", "finanzas")
	createPlan(t, dir, "pl-cccccccccccc", "data")

	mustHuddle(t, "approve", "pl-aaaaaaaaaaaa", "--feedback", "go ahead", "--dir", dir)
	rec := loadRequest(t, dir, "pl-aaaaaaaaaaaa")
	if rec.Status != protocol.RequestApproved || rec.ResolvedBy != protocol.Lead || rec.Feedback != "go ahead" {
		t.Fatalf("approved record = %+v", rec)
	}
	msgs := consume(t, dir, "reservas")
	if len(msgs) != 1 || msgs[0].Type != protocol.TypePlanApprovalResponse || msgs[0].RequestID != "pl-aaaaaaaaaaaa" ||
		!msgs[0].Approved() || msgs[0].Feedback != "go ahead" {
		t.Fatalf("reservas got %+v", msgs)
	}

	// The first decision wins; later ones say who made it, exit 1 and send nothing.
	huddle(t, "approve", "pl-aaaaaaaaaaaa", "--dir", dir).wantError(t, exitFail, "already approved by lead", "approve twice")
	huddle(t, "reject", "--dir", dir, "pl-aaaaaaaaaaaa", "--feedback", "no").wantError(t, exitFail, "already approved by lead", "reject after approve")
	if got := consume(t, dir, "reservas"); len(got) != 0 {
		t.Fatalf("a refused decision sent %+v", got)
	}

	// Flags before the ID.
	mustHuddle(t, "reject", "--feedback", "split it in two", "--dir", dir, "pl-bbbbbbbbbbbb")
	rec = loadRequest(t, dir, "pl-bbbbbbbbbbbb")
	if rec.Status != protocol.RequestRejected || rec.Feedback != "split it in two" {
		t.Fatalf("rejected record = %+v", rec)
	}
	if msgs := consume(t, dir, "finanzas"); len(msgs) != 1 || msgs[0].Approved() || msgs[0].Feedback != "split it in two" {
		t.Fatalf("finanzas got %+v", msgs)
	}

	// Reject without feedback is bad usage, refused before anything is touched.
	before := testkit.Tree(t, dir)
	huddle(t, "reject", "pl-cccccccccccc", "--dir", dir).wantError(t, exitUsage, "--feedback", "reject without feedback")
	huddle(t, "reject", "pl-cccccccccccc", "--feedback", "  ", "--dir", dir).wantError(t, exitUsage, "--feedback", "reject with blank feedback")
	huddle(t, "approve", "--dir", dir).wantError(t, exitUsage, "ID is required", "approve")
	huddle(t, "approve", "pl-cccccccccccc", "pl-bbbbbbbbbbbb", "--dir", dir).wantError(t, exitUsage, "unexpected argument", "approve two")
	huddle(t, "approve", "pl-000000000404", "--dir", dir).wantError(t, exitFail, "no request pl-000000000404", "approve unknown")
	if after := testkit.Tree(t, dir); !reflect.DeepEqual(before, after) {
		t.Fatalf("refused decisions touched files:\nbefore %v\nafter  %v", before, after)
	}
	if rec := loadRequest(t, dir, "pl-cccccccccccc"); rec.Status != protocol.RequestPending {
		t.Fatalf("pl-cccccccccccc = %s, want still pending", rec.Status)
	}

	// Only the teammate answers a shutdown request.
	sd := strings.TrimSpace(mustHuddle(t, "shutdown", "data", "--dir", dir).stdout)
	huddle(t, "approve", sd, "--dir", dir).wantError(t, exitFail, "shutdown request", "approve a shutdown")
	if rec := loadRequest(t, dir, sd); rec.Status != protocol.RequestPending {
		t.Fatalf("%s = %s, want still pending", sd, rec.Status)
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
		r.wantError(t, exitUsage, "", args...)
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
		"init":      {"-dir"},
		"status":    {"-dir", "-json"},
		"requests":  {"-dir", "-all", "-json"},
		"approve":   {"-dir", "-feedback"},
		"reject":    {"-dir", "-feedback"},
		"shutdown":  {"-dir", "-reason"},
		"send":      {"-dir", "-from"},
		"broadcast": {"-dir", "-from"},
	} {
		r := huddle(t, name, "-h")
		if r.code != exitOK || r.stderr != "" || !strings.HasPrefix(r.stdout, "usage: huddle "+name+" ") {
			t.Errorf("%s -h: exit %d, stdout %q, stderr %q", name, r.code, r.stdout, r.stderr)
		}
		for _, f := range flags {
			if !regexp.MustCompile(`(?m)^  ` + f + `( |$)`).MatchString(r.stdout) {
				t.Errorf("%s -h does not describe %s:\n%s", name, f, r.stdout)
			}
		}
		huddle(t, name, "--bogus").wantError(t, exitUsage, "-bogus", name, "--bogus")
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
