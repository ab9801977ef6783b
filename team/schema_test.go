package team

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/invopop/jsonschema"
	jsonschemav "github.com/santhosh-tekuri/jsonschema/v6"
)

var updateSchema = flag.Bool("update-schema", false, "rewrite docs/team.schema.json from the Go types")

// schemaPath is the published JSON Schema of team.json, from this
// package's directory.
var schemaPath = filepath.Join("..", "docs", "team.schema.json")

// teamSchema is team.json's JSON Schema made from the Go types and their
// comments, with a Duration a string such as "90s".
func teamSchema(t *testing.T) []byte {
	t.Helper()
	r := jsonschema.Reflector{
		RequiredFromJSONSchemaTags: true,
		Mapper: func(ty reflect.Type) *jsonschema.Schema {
			if ty == reflect.TypeFor[Duration]() {
				return &jsonschema.Schema{Type: "string", Pattern: `^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`,
					Description: `A duration such as "90s", "2m" or "1h30m".`}
			}
			return nil
		},
	}
	t.Chdir("..") // the comments are read by import path from the module's root
	for _, pkg := range []string{"team", "permit"} {
		if err := r.AddGoComments("huddle", pkg); err != nil {
			t.Fatal(err)
		}
	}
	s := r.Reflect(&Team{})
	s.ID = "https://huddle.invalid/team.schema.json"
	s.Title = "huddle team.json"
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir("team")
	return append(b, '\n')
}

// TestSchemaIsCurrent: docs/team.schema.json is what the Go types make
// (go test ./team -run TestSchemaIsCurrent -update-schema rewrites it), and
// it refuses an unknown key as Parse does.
func TestSchemaIsCurrent(t *testing.T) {
	want := teamSchema(t)
	if *updateSchema {
		if err := os.WriteFile(schemaPath, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is not what the Go types make: run go test ./team -run TestSchemaIsCurrent -update-schema", schemaPath)
	}
	var s struct {
		Defs map[string]struct {
			AdditionalProperties *bool               `json:"additionalProperties"`
			Properties           map[string]struct{} `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(got, &s); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"Team", "Settings", "MemberSpec", "RuntimeSpec", "Step"} {
		d, ok := s.Defs[name]
		if !ok || d.AdditionalProperties == nil || *d.AdditionalProperties || len(d.Properties) == 0 {
			t.Errorf("the schema's %s: %+v, want its properties and no others", name, d)
		}
	}
	if _, ok := s.Defs["Settings"].Properties["approval_deadline"]; !ok {
		t.Errorf("the schema's Settings has no approval_deadline")
	}
}

// TestSchemaAgreesWithParse: a JSON Schema validator (not huddle's code)
// passes the team.json files huddle writes and refuses a mistyped key, a
// wrong kind and a bad duration.
func TestSchemaAgreesWithParse(t *testing.T) {
	c := jsonschemav.NewCompiler()
	doc, err := jsonschemav.UnmarshalJSON(bytes.NewReader(teamSchema(t)))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddResource("team.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("team.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, b []byte) error {
		v, err := jsonschemav.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return sch.Validate(v)
	}
	llm, err := LLMFiles(LLMTemplateFromEnv(func(string) string { return "" }))
	if err != nil {
		t.Fatal(err)
	}
	good := map[string][]byte{"the demo team": DemoTeam(), "the llm template": llm[0].Data,
		"a desk": []byte(`{"$schema": "team.schema.json", "name": "desk", "desk": true}`)}
	for name, b := range good {
		if _, err := Parse(b); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := check(name, b); err != nil {
			t.Errorf("%s fails the schema: %v", name, err)
		}
	}
	for name, b := range map[string]string{
		"a mistyped key": `{"name": "t", "settings": {"approval_dedline": "5m"}, "members": []}`,
		"a wrong kind":   `{"name": "t", "members": [{"name": "a", "runtime": {"kind": "docker"}}]}`,
		"a bad duration": `{"name": "t", "settings": {"approval_deadline": "soon"}, "members": []}`,
		"no name":        `{"members": []}`,
	} {
		if check(name, []byte(b)) == nil {
			t.Errorf("the schema passes %s: %s", name, b)
		}
		if _, err := Parse([]byte(b)); err == nil {
			t.Errorf("Parse passes %s: %s", name, b)
		}
	}
}
