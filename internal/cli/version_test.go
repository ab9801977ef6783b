package cli

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"runtime/debug"
	"strings"
	"testing"
)

// TestVersionSaysWhatTheBuildRecorded: 'huddle version' and 'huddle
// --version' print what `go version -m` reads from the same binary: the
// module version, the commit when one was recorded, the Go version.
func TestVersionSaysWhatTheBuildRecorded(t *testing.T) {
	bin := huddleBinary(t)
	out, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatalf("go version -m: %v", err)
	}
	var goVersion, modVersion, revision string
	for i, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		switch {
		case i == 0 && len(f) == 2:
			goVersion = f[1]
		case len(f) >= 3 && f[0] == "mod":
			modVersion = f[2]
		case len(f) == 2 && f[0] == "build" && strings.HasPrefix(f[1], "vcs.revision="):
			revision = strings.TrimPrefix(f[1], "vcs.revision=")
		}
	}
	if goVersion == "" || modVersion == "" {
		t.Fatalf("go version -m said nothing usable:\n%s", out)
	}
	v := mustHuddle(t, "version")
	if v2 := mustHuddle(t, "--version"); v2.stdout != v.stdout {
		t.Fatalf("--version %q differs from version %q", v2.stdout, v.stdout)
	}
	if !strings.HasPrefix(v.stdout, "huddle "+modVersion+"\n") || !strings.HasSuffix(v.stdout, "built with "+goVersion+"\n") {
		t.Fatalf("huddle version:\n%s\nwant module %s and %s", v.stdout, modVersion, goVersion)
	}
	if revision != "" && !strings.Contains(v.stdout, "commit "+revision) {
		t.Fatalf("huddle version:\n%s\nwant commit %s", v.stdout, revision)
	}
	if revision == "" && !strings.Contains(v.stdout, "commit unknown") {
		t.Fatalf("huddle version:\n%s\nwant the commit said to be unknown", v.stdout)
	}
	var j buildVersion
	if err := json.Unmarshal([]byte(mustHuddle(t, "version", "--json").stdout), &j); err != nil {
		t.Fatal(err)
	}
	if j.Version != modVersion || j.Go != goVersion || j.Commit != revision || (revision != "") != (j.Modified != nil) {
		t.Fatalf("huddle version --json: %+v; want module %s, %s, commit %q", j, modVersion, goVersion, revision)
	}
	huddle(t, "version", "extra").wantError(t, ExitUsage, `unexpected argument "extra"`, "version", "extra")
}

// TestPrintVersionOfACheckout: a build with a recorded commit says which,
// when, and whether the tree was clean; one without says it is unknown.
func TestPrintVersionOfACheckout(t *testing.T) {
	info := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "huddle", Version: "v0.3.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "649b2a0849eb"}, {Key: "vcs.time", Value: "2026-11-30T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	var b bytes.Buffer
	printVersion(&b, info)
	want := "huddle v0.3.0\ncommit 649b2a0849eb (2026-11-30T10:00:00Z), with uncommitted changes\nbuilt with go1.26.8\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	printVersion(&b, &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "huddle", Version: "(devel)"}})
	if got := b.String(); !strings.HasPrefix(got, "huddle (devel)\ncommit unknown (") {
		t.Fatalf("devel build: %q", got)
	}
	b.Reset()
	printVersion(&b, nil)
	if !strings.Contains(b.String(), "unknown version") {
		t.Fatalf("no build info: %q", b.String())
	}
}
