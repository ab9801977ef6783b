package ipc

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestScaffoldPassesTheValidator(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "puruto-reservas")
	written, err := Scaffold(dir, "puruto-reservas")
	if err != nil {
		t.Fatal(err)
	}
	paths := []string{filepath.Join(dir, ConfigFile), filepath.Join(dir, SkillPath)}
	if !reflect.DeepEqual(written, paths) {
		t.Fatalf("wrote %q, want %q", written, paths)
	}
	p, err := LoadPolicy(filepath.Join(dir, ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	if !p.Enabled || p.Owner != "puruto-reservas" || p.MaxHops != 2 || p.DefaultTimeoutSec != 120 ||
		p.AllowedTargets == nil || len(p.AllowedTargets) != 0 || p.AllowedActions == nil || len(p.AllowedActions) != 0 {
		t.Fatalf("policy %+v is not the template", p)
	}
	skill, _ := os.ReadFile(filepath.Join(dir, SkillPath))
	for _, s := range []string{"name: call", `/call TARGET ACTION "PROMPT"`, "huddle call --target TARGET --action ACTION --prompt", "./.puruto-ipc.json", "Exit codes"} {
		if !bytes.Contains(skill, []byte(s)) {
			t.Errorf("SKILL.md does not say %q", s)
		}
	}
	r := Validate(dir)
	if !r.OK || r.Errors != 0 {
		t.Fatalf("the scaffold does not validate: %+v", r)
	}
	// The only thing to say is that nothing is allowed yet.
	checkFindings(t, r.Findings, []want{{LevelWarning, CodeEmptyAllowlist, ConfigFile, nil}})
}

func TestScaffoldNeverOverwrites(t *testing.T) {
	for _, existing := range []string{ConfigFile, SkillPath} {
		t.Run(existing, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, existing)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte("mine"), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Scaffold(dir, "x")
			if err == nil || !strings.Contains(err.Error(), "already exists") {
				t.Fatalf("err %v, want already exists", err)
			}
			if b, _ := os.ReadFile(path); string(b) != "mine" {
				t.Fatalf("%s was overwritten: %q", existing, b)
			}
			for _, other := range []string{ConfigFile, SkillPath} {
				if _, err := os.Stat(filepath.Join(dir, other)); other != existing && err == nil {
					t.Fatalf("%s was written beside an existing %s", other, existing)
				}
			}
		})
	}
}

func TestScaffoldRefusesABadOwner(t *testing.T) {
	dir := t.TempDir()
	if _, err := Scaffold(dir, "My Repo"); err == nil || !strings.Contains(err.Error(), "owner") {
		t.Fatalf("err %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("a refused scaffold wrote %v", entries)
	}
}
