package team

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"huddle/ipc"
)

// validateFixture is the absolute path of ipc/testdata/validate/<name>.
func validateFixture(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "ipc", "testdata", "validate", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// brief is a finding without its message, as "level code path".
func brief(fs []ipc.Finding) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, f.Level+" "+f.Code+" "+f.Path)
	}
	return out
}

func TestValidateIPC(t *testing.T) {
	broken := t.TempDir()
	if err := os.WriteFile(filepath.Join(broken, "team.json"), []byte(`{"name": "x", "members": [`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, dir string
		want      []string
		says      []string // in the messages, in order
	}{
		{
			name: "unknown target and empty allowlist", dir: validateFixture(t, "team"),
			want: []string{
				"warning unknown-ipc-target reservas.ipc.json",
				"warning ipc-empty-allowlist " + filepath.Join("finanzas", ".puruto-ipc.json"),
			},
			says: []string{`member "reservas": allowed_targets names "contabilidad"`, `member "finanzas": allowed_targets is empty`},
		},
		{
			name: "invalid team.json still has its members' configs checked", dir: validateFixture(t, "team-invalid"),
			want: []string{"error invalid-team team.json", "warning unknown-ipc-target reservas.ipc.json"},
			says: []string{`member "reservas": name: duplicate member`, `"ghost"`},
		},
		{
			name: "a missing ipc file, a member repo without a config", dir: validateFixture(t, "team-missing-ipc"),
			want: []string{
				"error ipc-config-not-found " + filepath.Join("policies", "auditoria.json"),
				"warning missing-ipc-config " + filepath.Join("data", ".puruto-ipc.json"),
			},
			says: []string{`member "auditoria": team.json names this file`, `member "data": a Puruto repo without`},
		},
		{
			name: "team.json that is not JSON", dir: broken,
			want: []string{"error invalid-team team.json"},
			says: []string{"syntax error at 1:27: unexpected end of file"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ValidateIPC(tc.dir)
			if got := brief(r.Findings); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("findings\n got  %q\n want %q", got, tc.want)
			}
			for i, s := range tc.says {
				if !strings.Contains(r.Findings[i].Message, s) {
					t.Errorf("finding %d: %q does not say %q", i, r.Findings[i].Message, s)
				}
			}
			errs := 0
			for _, w := range tc.want {
				if strings.HasPrefix(w, "error ") {
					errs++
				}
			}
			if r.Kind != ipc.KindTeam || r.Path != tc.dir || r.Errors != errs || r.Warnings != len(tc.want)-errs || r.OK != (errs == 0) {
				t.Fatalf("report %+v", r)
			}
		})
	}
}
