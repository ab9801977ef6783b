package ipc

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// want is a finding without its message, and words the message must say.
type want struct {
	level, code, path string
	says              []string
}

func validateFixture(name string) string { return filepath.Join("testdata", "validate", name) }

// checkFindings compares findings with wants, in order.
func checkFindings(t *testing.T, got []Finding, wants []want) {
	t.Helper()
	var g, w []string
	for _, f := range got {
		g = append(g, f.Level+" "+f.Code+" "+f.Path)
	}
	for _, x := range wants {
		w = append(w, x.level+" "+x.code+" "+x.path)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("findings:\n got  %q\n want %q\n(%+v)", g, w, got)
	}
	for i, x := range wants {
		for _, s := range x.says {
			if !strings.Contains(got[i].Message, s) {
				t.Errorf("finding %s %s: message %q does not say %q", got[i].Code, got[i].Path, got[i].Message, s)
			}
		}
	}
}

func TestValidate(t *testing.T) {
	const cfg = ".puruto-ipc.json"
	skill := filepath.Join(".claude", "skills", "call", "SKILL.md")
	typ := func(key, wanted string) want {
		return want{LevelError, CodeInvalidType, cfg, []string{key, wanted}}
	}
	missing := func(key string) want { return want{LevelWarning, CodeMissingKey, cfg, []string{key}} }
	for _, tc := range []struct {
		name, path, kind string
		want             []want
	}{
		{name: "seed's minimal valid config, huddle as runtime", path: "valid-huddle", kind: KindPuruto},
		{name: "seed's minimal valid config, Puruto's scaffold runtime", path: "valid-python", kind: KindPuruto},
		{name: "seed's invalid types", path: "invalid-types", kind: KindPuruto, want: []want{
			typ("allowed_targets", "list"), typ("allowed_actions", "object"),
		}},
		{name: "wrong scalar types", path: "wrong-scalars", kind: KindPuruto, want: []want{
			typ("enabled", "true or false"), typ("owner", "string"),
			typ("max_hops", "whole number"), typ("default_timeout_sec", "whole number"),
		}},
		{name: "a target that is not a string, actions that are not a list", path: "wrong-elements", kind: KindPuruto, want: []want{
			typ("allowed_targets[1]", "target name"), typ(`allowed_actions["puruto-data"]`, "list of actions"),
		}},
		{name: "values huddle refuses", path: "bad-values", kind: KindPuruto, want: []want{
			{LevelError, CodeInvalidValue, cfg, []string{"max_hops", "negative"}},
			{LevelError, CodeInvalidValue, cfg, []string{"default_timeout_sec", "positive"}},
		}},
		{name: "missing keys", path: "missing-keys", kind: KindPuruto, want: []want{
			missing("enabled"), missing("max_hops"), missing("default_timeout_sec"),
			{LevelWarning, CodeMissingKey, cfg, []string{"allowed_targets", "denied"}}, missing("allowed_actions"),
		}},
		{name: "unparsable JSON", path: "unparsable", kind: KindPuruto, want: []want{
			{LevelError, CodeInvalidConfig, cfg, []string{"JSON"}},
		}},
		{name: "JSON that is not an object", path: "not-object", kind: KindPuruto, want: []want{
			{LevelError, CodeInvalidConfig, cfg, []string{"not a JSON object", "list"}},
		}},
		{name: "config without skill or runtime", path: "missing-skill", kind: KindPuruto, want: []want{
			{LevelError, CodeMissingSkill, skill, []string{"/call"}},
			{LevelError, CodeMissingRuntime, "ipc.py", []string{"ipc.py and invoker.py are missing", "huddle call"}},
		}},
		{name: "skill not running huddle, half of Puruto's runtime", path: "missing-runtime", kind: KindPuruto, want: []want{
			{LevelError, CodeMissingRuntime, "invoker.py", []string{"invoker.py is missing", "huddle call"}},
		}},
		{name: "the template's empty allowlist", path: "empty-allowlist", kind: KindPuruto, want: []want{
			{LevelWarning, CodeEmptyAllowlist, cfg, []string{"allowed_targets", "denied"}},
		}},
		{name: "a Puruto repo without IPC", path: "no-config", kind: KindPuruto, want: []want{
			{LevelWarning, CodeMissingConfig, cfg, []string{"huddle init --ipc"}},
		}},
		{name: "a repo's config file checks what lies beside it", path: "missing-skill/.puruto-ipc.json", kind: KindFile, want: []want{
			{LevelError, CodeMissingSkill, skill, nil},
			{LevelError, CodeMissingRuntime, "ipc.py", nil},
		}},
		{name: "a config file with type errors", path: "invalid-types/.puruto-ipc.json", kind: KindFile, want: []want{
			typ("allowed_targets", "list"), typ("allowed_actions", "object"),
		}},
		{name: "a policy file by another name is checked alone", path: "team/reservas.ipc.json", kind: KindFile},
		{name: "a path that is not there", path: "nowhere.json", kind: KindFile, want: []want{
			{LevelError, CodeConfigNotFound, "nowhere.json", []string{"not found"}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := validateFixture(tc.path)
			r := Validate(path)
			if r.Path != path || r.Kind != tc.kind {
				t.Errorf("path %q kind %q, want %q %q", r.Path, r.Kind, path, tc.kind)
			}
			checkFindings(t, r.Findings, tc.want)
			var errs, warns int
			for _, w := range tc.want {
				if w.level == LevelError {
					errs++
				} else {
					warns++
				}
			}
			if r.Errors != errs || r.Warnings != warns || r.OK != (errs == 0) {
				t.Errorf("errors %d warnings %d ok %v, want %d %d %v", r.Errors, r.Warnings, r.OK, errs, warns, errs == 0)
			}
		})
	}
}

// The validator never passes a config that huddle refuses to load.
func TestValidateConfigAgreesWithParsePolicy(t *testing.T) {
	configs, err := filepath.Glob(validateFixture("*/.puruto-ipc.json"))
	if err != nil || len(configs) < 10 {
		t.Fatalf("fixtures: %v %v", configs, err)
	}
	more := map[string]string{
		"null key":     `{"enabled": null}`,
		"trailing":     `{"enabled": true} {}`,
		"exponent":     `{"max_hops": 1e2}`,
		"huge":         `{"max_hops": 99999999999999999999}`,
		"bool as int":  `{"max_hops": true}`,
		"null element": `{"allowed_targets": ["a", null]}`,
		"empty":        ``,
	}
	for _, path := range configs {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		more[path] = string(b)
	}
	for name, content := range more {
		fs := checkConfig([]byte(content), ConfigFile)
		errs := 0
		for _, f := range fs {
			if f.Level == LevelError {
				errs++
			}
		}
		if _, err := ParsePolicy([]byte(content)); err != nil && errs == 0 {
			t.Errorf("%s: ParsePolicy refuses it (%v) but the validator finds no error: %+v", name, err, fs)
		}
	}
}

func TestValidateEmptyDirectory(t *testing.T) {
	r := Validate(t.TempDir())
	if !r.OK || r.Kind != KindPuruto {
		t.Fatalf("%+v", r)
	}
	checkFindings(t, r.Findings, []want{{LevelWarning, CodeMissingConfig, ConfigFile, []string{"nothing to check"}}})
}

func TestValidateDirNamesPathsUnderRel(t *testing.T) {
	fs := ValidateDir(validateFixture("missing-skill"), "members/a")
	checkFindings(t, fs, []want{
		{LevelError, CodeMissingSkill, filepath.Join("members/a", SkillPath), nil},
		{LevelError, CodeMissingRuntime, filepath.Join("members/a", "ipc.py"), nil},
	})
	// A directory that is no Puruto repo has nothing to say inside a team.
	if fs := ValidateDir(t.TempDir(), "x"); len(fs) != 0 {
		t.Fatalf("plain directory: %+v", fs)
	}
}

func TestReportJSONShape(t *testing.T) {
	b, err := json.Marshal(Validate(validateFixture("valid-huddle")))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range got {
		keys = append(keys, k)
	}
	if len(keys) != 6 || got["findings"] == nil || got["ok"] != true || got["errors"] != 0.0 || got["kind"] != "puruto" {
		t.Fatalf("report %s", b)
	}
	b, _ = json.Marshal(Validate(validateFixture("unparsable")))
	var r struct {
		Findings []map[string]string `json:"findings"`
	}
	if err := json.Unmarshal(b, &r); err != nil || len(r.Findings) != 1 {
		t.Fatalf("report %s: %v", b, err)
	}
	f := r.Findings[0]
	if len(f) != 4 || f["level"] != "error" || f["code"] != "invalid-ipc-config" || f["path"] != ".puruto-ipc.json" || f["message"] == "" {
		t.Fatalf("finding %v", f)
	}
}
