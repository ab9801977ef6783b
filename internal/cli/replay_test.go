package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"huddle/inbox"
	"huddle/internal/testkit/dirlead"
	"huddle/internal/testkit/dirrecords"
	"huddle/internal/testkit/files"
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

func TestExportWritesWhatReplayReads(t *testing.T) {
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
	if r.code != exitOK || r.stdout != "" || !strings.Contains(r.stderr, "exported") {
		t.Fatalf("export: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	got, err := replay.ReadExportFile(out)
	if err != nil {
		t.Fatal(err)
	}
	sameTimeline(t, got, want)
	// Without -o, the export goes to stdout; --dir names the team too.
	r = mustHuddle(t, "export", "--dir", dir)
	got, err = replay.ReadExport(strings.NewReader(r.stdout), "stdout")
	if err != nil {
		t.Fatal(err)
	}
	sameTimeline(t, got, want)
	if first, _, _ := strings.Cut(r.stdout, "\n"); !strings.Contains(first, `"format":"huddle-session"`) || !strings.Contains(first, `"exported_at"`) || !strings.Contains(first, `"name":"puruto-demo"`) {
		t.Fatalf("the header line: %s", first)
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
		{[]string{"export", empty}, exitFail, "is not a team directory"},
		{[]string{"export", filepath.Join(empty, "missing")}, exitFail, "is not a team directory"},
		{[]string{"export", notExport}, exitFail, "is not a team directory"},
		{[]string{"export", team, "-o", filepath.Join(empty, "no", "such", "dir.jsonl")}, exitFail, "export:"},
		{[]string{"export", team, "extra"}, exitUsage, `unexpected argument "extra"`},
		{[]string{"replay", empty}, exitFail, "is not a team directory"},
		{[]string{"replay", filepath.Join(empty, "missing")}, exitFail, "no such team directory or export"},
		{[]string{"replay", notExport}, exitFail, "is not a huddle export"},
		{[]string{"replay", filepath.Join(team, "team.json")}, exitFail, "is not a huddle export"},
		{[]string{"replay", team, "--speed", "0"}, exitUsage, "--speed must be more than 0"},
		{[]string{"replay", team, "--speed", "fast"}, exitUsage, "invalid value"},
		{[]string{"replay", team}, exitUsage, "not a terminal"}, // a valid team, but no terminal to play it on
	} {
		huddle(t, c.args...).wantError(t, c.code, c.want, c.args...)
	}
	if ents, _ := os.ReadDir(empty); len(ents) != 1 {
		t.Fatalf("the failed commands left files behind: %v", ents)
	}
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
