package team

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseErrorsNameMemberAndField(t *testing.T) {
	const ok = `{"name":"b","runtime":{"kind":"external"}}`
	for _, tc := range []struct {
		name, json string
		want       []string // every one must appear in the error
	}{
		{"team name missing", `{"members":[` + ok + `]}`, []string{"team.json", "name is required"}},
		{"no members", `{"name":"t","members":[]}`, []string{"members", "at least one"}},
		{"member name missing", `{"name":"t","members":[{"runtime":{"kind":"external"}}]}`,
			[]string{"members[0]", "name", "empty"}},
		{"bad member name", `{"name":"t","members":[{"name":"Bad","runtime":{"kind":"external"}}]}`,
			[]string{`member "Bad"`, "name", "invalid name"}},
		{"lead is reserved", `{"name":"t","members":[{"name":"lead","runtime":{"kind":"external"}}]}`,
			[]string{`member "lead"`, "reserved"}},
		{"duplicate member", `{"name":"t","members":[` + ok + `,` + ok + `]}`,
			[]string{`member "b"`, "name", "duplicate"}},
		{"runtime kind missing", `{"name":"t","members":[{"name":"a","runtime":{}}]}`,
			[]string{`member "a"`, "runtime.kind", "required"}},
		{"unknown runtime kind", `{"name":"t","members":[{"name":"a","runtime":{"kind":"docker"}}]}`,
			[]string{`member "a"`, "runtime.kind", `"docker"`}},
		{"script without steps", `{"name":"t","members":[{"name":"a","runtime":{"kind":"script"}}]}`,
			[]string{`member "a"`, "runtime.steps", "at least one step"}},
		{"step that does nothing", `{"name":"t","members":[{"name":"a","runtime":{"kind":"script","steps":[{"work":"1s"},{}]}}]}`,
			[]string{`member "a"`, "runtime.steps[1]", "does nothing"}},
		{"step with two kinds", `{"name":"t","members":[{"name":"a","runtime":{"kind":"script","steps":[{"work":"1s"},{"plan":"p","wait":"2s"}]}}]}`,
			[]string{`member "a"`, "runtime.steps[1]", "plan", "wait", "one kind per step"}},
		{"say to unknown member", `{"name":"t","members":[{"name":"a","runtime":{"kind":"script","steps":[{"say":"zed","text":"hi"}]}},` + ok + `]}`,
			[]string{`member "a"`, "runtime.steps[0].say", `no member "zed"`}},
		{"say to a bad name", `{"name":"t","members":[{"name":"a","runtime":{"kind":"script","steps":[{"say":"../x","text":"hi"}]}}]}`,
			[]string{`member "a"`, "runtime.steps[0].say", "invalid name"}},
		{"say without text", `{"name":"t","members":[{"name":"a","runtime":{"kind":"script","steps":[{"say":"lead"}]}}]}`,
			[]string{`member "a"`, "runtime.steps[0].text", "required"}},
		{"call without action", `{"name":"t","members":[{"name":"a","runtime":{"kind":"script","steps":[{"call":"b"}]}},` + ok + `]}`,
			[]string{`member "a"`, "runtime.steps[0].action", "required"}},
		{"bad on_shutdown", `{"name":"t","members":[{"name":"a","runtime":{"kind":"script","on_shutdown":"maybe","steps":[{"work":"1s"}]}}]}`,
			[]string{`member "a"`, "runtime.on_shutdown", `"maybe"`}},
		{"exec without command", `{"name":"t","members":[` + ok + `,{"name":"x","runtime":{"kind":"exec"}}]}`,
			[]string{`member "x"`, "runtime.command", "required"}},
		{"exec with an empty program", `{"name":"t","members":[{"name":"x","runtime":{"kind":"exec","command":[""]}}]}`,
			[]string{`member "x"`, "runtime.command", "required"}},
		{"bad step duration", `{"name":"t","members":[` + ok + `,{"name":"a","runtime":{"kind":"script","steps":[{"plan":"p"},{"work":"abc"}]}}]}`,
			[]string{`member "a"`, "runtime.steps[1].work", `"abc"`, "duration"}},
		{"duration that is a number", `{"name":"t","members":[{"name":"a","runtime":{"kind":"script","steps":[{"wait":5}]}}]}`,
			[]string{`member "a"`, "runtime.steps[0].wait", "duration"}},
		{"negative duration", `{"name":"t","members":[{"name":"a","runtime":{"kind":"script","steps":[{"wait":"-5s"}]}}]}`,
			[]string{`member "a"`, "runtime.steps[0].wait", `"-5s"`}},
		{"bad settings duration", `{"name":"t","settings":{"shutdown_deadline":"soon"},"members":[` + ok + `]}`,
			[]string{"settings.shutdown_deadline", `"soon"`}},
		{"command of the wrong type", `{"name":"t","members":[{"name":"x","runtime":{"kind":"exec","command":"huddle agent"}}]}`,
			[]string{`member "x"`, "runtime", "command"}},
		{"http target of no protocol huddle has", `{"name":"t","members":[{"name":"x","target":{"kind":"http","protocol":"grpc","url":"http://h:1"}}]}`,
			[]string{`member "x"`, "target.protocol", `"grpc"`, "blueprint or a2a"}},
		{"blueprint target without a skill", `{"name":"t","members":[{"name":"x","target":{"kind":"http","url":"http://h:1"}}]}`,
			[]string{`member "x"`, "target.skill", "<member>.<action>"}},
		{"a2a target without a url", `{"name":"t","members":[{"name":"x","target":{"kind":"http","protocol":"a2a"}}]}`,
			[]string{`member "x"`, "target.url"}},
		{"protocol on an exec target", `{"name":"t","members":[{"name":"x","target":{"kind":"exec","command":["a"],"protocol":"a2a"}}]}`,
			[]string{`member "x"`, "target.protocol", "http target"}},
		{"not JSON", `{"name":`, []string{"team.json", "unexpected end"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			team, err := Parse([]byte(tc.json))
			if err == nil {
				t.Fatalf("Parse accepted it: %+v", team)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is more than one line: %q", err)
			}
		})
	}
}

func TestParseAcceptsEveryRuntime(t *testing.T) {
	team, err := Parse([]byte(`{
	  "name": "t",
	  "settings": {"approval_deadline": "90s"},
	  "members": [
	    {"name": "a", "role": "r", "runtime": {"kind": "script", "on_shutdown": "reject_while_working", "steps": [
	      {"plan": "p"}, {"work": "1s", "activity": "w"}, {"say": "*", "text": "all"}, {"say": "lead", "text": "hi"},
	      {"say": "b", "text": "hi"}, {"call": "b", "action": "x"}, {"wait": "2s"}, {"loop": true}]}},
	    {"name": "b", "runtime": {"kind": "exec", "command": ["agent", "--flag"]}},
	    {"name": "c.d_e-1", "runtime": {"kind": "external"}}
	  ]
	}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := team.Settings.Approval(); got != 90*time.Second {
		t.Errorf("approval deadline %v, want 90s", got)
	}
	if got := team.Settings.Shutdown(); got != DefaultShutdownDeadline {
		t.Errorf("shutdown deadline %v, want the default %v", got, DefaultShutdownDeadline)
	}
	if got := time.Duration(team.Members[0].Runtime.Steps[1].Work); got != time.Second {
		t.Errorf("work step %v, want 1s", got)
	}
	if m, ok := team.Member("b"); !ok || m.Runtime.Command[1] != "--flag" {
		t.Errorf("Member(b) = %+v, %v", m, ok)
	}
	if _, ok := team.Member("zed"); ok {
		t.Error("Member(zed) found a member that does not exist")
	}
}

func TestDurationRoundTrips(t *testing.T) {
	b, err := json.Marshal(Settings{ApprovalDeadline: Duration(10 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"approval_deadline":"10m0s"}`; string(b) != want {
		t.Fatalf("Marshal = %s, want %s", b, want)
	}
	var s Settings
	if err := json.Unmarshal(b, &s); err != nil || s.Approval() != 10*time.Minute {
		t.Fatalf("Unmarshal = %+v, %v", s, err)
	}
}

func TestDemoTeamParsesAndValidates(t *testing.T) {
	team, err := Parse(DemoTeam())
	if err != nil {
		t.Fatalf("the embedded demo team is invalid: %v", err)
	}
	if err := team.Validate(); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	for _, m := range team.Members {
		kinds[m.Name] = m.Runtime.Kind
	}
	want := map[string]string{"reservas": RuntimeScript, "finanzas": RuntimeScript, "data": RuntimeScript, "auditor": RuntimeExec}
	if len(kinds) != len(want) {
		t.Fatalf("demo members %v, want %v", kinds, want)
	}
	for name, kind := range want {
		if kinds[name] != kind {
			t.Errorf("demo member %s runs %q, want %q", name, kinds[name], kind)
		}
	}
	if team.Settings.Approval() != 10*time.Minute || team.Settings.Shutdown() != 2*time.Minute {
		t.Errorf("demo deadlines %v / %v, want 10m / 2m", team.Settings.Approval(), team.Settings.Shutdown())
	}
}

func TestInitWritesTheDemoTeamOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", ".huddle")
	if err := Init(dir); err != nil {
		t.Fatal(err)
	}
	path := ConfigPath(dir)
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("team.json mode %v, want 0600", perm)
	}
	if info, err := os.Stat(dir); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("team dir: %v, %v; want mode 0700", info, err)
	}
	if got := readFile(t, path); !bytes.Equal(got, DemoTeam()) {
		t.Errorf("team.json is not the demo team:\n%s", got)
	}
	if _, err := Load(dir); err != nil {
		t.Fatalf("Load after Init: %v", err)
	}

	// Someone edits it; a second Init must not undo the edit.
	edited := []byte(`{"name":"mine","members":[{"name":"solo","runtime":{"kind":"external"}}]}`)
	if err := os.WriteFile(path, edited, 0o600); err != nil {
		t.Fatal(err)
	}
	err = Init(dir)
	if err == nil || !strings.Contains(err.Error(), "already exists") || !strings.Contains(err.Error(), path) {
		t.Fatalf("second Init: %v, want a refusal naming %s", err, path)
	}
	if got := readFile(t, path); !bytes.Equal(got, edited) {
		t.Fatalf("second Init changed team.json to:\n%s", got)
	}
}

func TestLoadWithoutATeamSaysHowToMakeOne(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nothing")
	_, err := Load(dir)
	if err == nil || !strings.Contains(err.Error(), "huddle init --dir "+dir) {
		t.Fatalf("Load of an empty dir: %v", err)
	}
}
