package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"testing"

	"huddle/team"
)

func compactJSON(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func TestReadExportRefusesWhatIsNotAnExport(t *testing.T) {
	tl := synthTimeline(t, 20)
	var good bytes.Buffer
	if err := Export(&good, tl, time.Now()); err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(good.String(), "\n")
	cases := []struct {
		name, content, want string
	}{
		{"empty", "", "is not a huddle export"},
		{"a team.json", string(tl.TeamJSON), "is not a huddle export"},
		{"another format", `{"format":"other","version":1}` + "\n", "is not a huddle export"},
		{"a later version", strings.Replace(lines[0], `"version":1`, `"version":99`, 1), "version 99"},
		{"a bad team", strings.Replace(lines[0], `"members"`, `"membres"`, 1), "header"},
		{"a broken event", lines[0] + lines[1] + "{not json\n", "line 3"},
		{"an unknown kind", lines[0] + `{"at":"2026-01-02T03:04:05Z","kind":"weather"}` + "\n", `line 2: unknown kind "weather"`},
		{"a kind without its payload", lines[0] + `{"at":"2026-01-02T03:04:05Z","kind":"request"}` + "\n", "line 2: a request event without"},
		{"an invalid message", lines[0] + `{"at":"2026-01-02T03:04:05Z","kind":"message","inbox":"a","message":{"type":"nonsense"}}` + "\n", "line 2: message"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadExport(strings.NewReader(c.content), "x.jsonl")
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "x.jsonl") {
				t.Fatalf("error %v, want one naming x.jsonl and saying %q", err, c.want)
			}
		})
	}
	// The good one reads, and a last line without its newline is read too.
	back, err := ReadExport(strings.NewReader(strings.TrimSuffix(good.String(), "\n")), "good")
	if err != nil {
		t.Fatal(err)
	}
	sameEvents(t, back.Events, tl.Events)
}

func TestOpenTellsADirectoryFromAnExport(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(t.Context(), dir, openFiles); err == nil || !strings.Contains(err.Error(), "is not a team directory") {
		t.Fatalf("a directory without team.json: %v", err)
	}
	if _, err := Open(t.Context(), filepath.Join(dir, "missing"), openFiles); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a missing path: %v, want not exist", err)
	}
	if err := team.Init(dir); err != nil {
		t.Fatal(err)
	}
	tl, err := Open(t.Context(), dir, openFiles)
	if err != nil || tl.Team.Name == "" || len(tl.Events) != 0 {
		t.Fatalf("a team never run: %+v %v, want its team and no event", tl, err)
	}
	path := filepath.Join(t.TempDir(), "s.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := Export(f, synthTimeline(t, 50), time.Now()); err != nil {
		t.Fatal(err)
	}
	f.Close()
	back, err := Open(t.Context(), path, openFiles)
	if err != nil || len(back.Events) != 50 {
		t.Fatalf("the export: %d events, %v; want 50", len(back.Events), err)
	}
}
