package team

import (
	"strings"
	"testing"
)

// TestParseNamesUnknownKeysAndSyntaxErrors: a typo in team.json is an
// error that says which key, where, and what was meant, instead of a
// default silently kept; a syntax error says where.
func TestParseNamesUnknownKeysAndSyntaxErrors(t *testing.T) {
	for _, c := range []struct{ name, json, want string }{
		{"a setting mistyped", "{\n  \"name\": \"t\",\n  \"settings\": {\n    \"approval_dedline\": \"5m\"\n  },\n  \"members\": [{\"name\": \"a\", \"runtime\": {\"kind\": \"external\"}}]\n}",
			`team.json: unknown field "settings.approval_dedline" at 4:5 (did you mean "approval_deadline"?)`},
		{"a member's field", "{\"name\": \"t\", \"members\": [\n {\"name\": \"a\", \"rol\": \"x\", \"runtime\": {\"kind\": \"external\"}}]}",
			`team.json: unknown field "members[0].rol" at 2:16 (did you mean "role"?)`},
		{"deep in a step", "{\"name\": \"t\", \"members\": [{\"name\": \"a\", \"runtime\": {\"kind\": \"script\", \"steps\": [{\"wiat\": \"1s\"}]}}]}",
			`unknown field "members[0].runtime.steps[0].wiat" at 1:82 (did you mean "wait"?)`},
		{"nothing near", "{\"name\": \"t\", \"frobnicate\": 1, \"members\": []}",
			`team.json: unknown field "frobnicate" at 1:15`},
		{"after a multibyte name", "{\"name\": \"équipe\", \"membres\": []}",
			`unknown field "membres" at 1:20 (did you mean "members"?)`},
		{"a missing comma", "{\n  \"name\": \"t\"\n  \"members\": []\n}", `team.json: syntax error at 3:3:`},
		{"cut short", "{\"name\": \"t\", \"members\": [", `team.json: syntax error at 1:27: unexpected end of file`},
		{"two documents", "{\"name\": \"t\"} {}", `team.json: syntax error at 1:15: more after the closing brace`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.json))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Parse: %v\nwant it to say %s", err, c.want)
			}
			if c.name == "nothing near" && strings.Contains(err.Error(), "did you mean") {
				t.Fatalf("Parse: %v: suggests a key nothing like it", err)
			}
			if strings.Count(err.Error(), "\n") != 0 {
				t.Fatalf("Parse: %q: want one line", err)
			}
		})
	}
}

// TestParseTakesWhatDecodingTakes: keys encoding/json accepts (a case
// variant, a map's own keys, a custom type's content) are not called
// unknown.
func TestParseTakesWhatDecodingTakes(t *testing.T) {
	tm, err := Parse([]byte(`{"Name": "t", "settings": {"Approval_Deadline": "3m"}, "members": [
		{"name": "a", "runtime": {"kind": "script", "steps": [{"wait": "1s"}]},
		 "actions": {"anything-goes": {"reply": "ok", "delay": "1s"}},
		 "permissions": {"allow": ["Read"]}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if tm.Settings.Approval().Minutes() != 3 || tm.Members[0].Actions["anything-goes"].Reply != "ok" {
		t.Fatalf("parsed %+v", tm)
	}
}
