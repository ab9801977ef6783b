package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/golden"

	"huddle/internal/testkit"
	"huddle/internal/testkit/files"
	"huddle/protocol"
	"huddle/team"
	"huddle/worktree"
)

// fixtureDiff is a review's diff: a Go file with two hunks, a new file and
// a deleted one, as git writes it.
const fixtureDiff = `diff --git a/cmd/main.go b/cmd/main.go
index 3b18e51..a7c1f0e 100644
--- a/cmd/main.go
+++ b/cmd/main.go
@@ -1,9 +1,10 @@
 package main
 
 import (
+	"flag"
 	"fmt"
 	"os"
 )
 
 func main() {
-	fmt.Println("hello")
+	verbose := flag.Bool("verbose", false, "say more")
@@ -20,6 +21,9 @@ func run(args []string) error {
 	if len(args) == 0 {
 		return fmt.Errorf("no arguments")
 	}
+	for _, a := range args {
+		fmt.Fprintln(os.Stderr, "arg:", a)
+	}
 	return nil
 }
diff --git a/docs/flags.md b/docs/flags.md
new file mode 100644
index 0000000..e69de29
--- /dev/null
+++ b/docs/flags.md
@@ -0,0 +1,2 @@
+# Flags
+--verbose says more.
diff --git a/old.txt b/old.txt
deleted file mode 100644
index 4f3d1a2..0000000
--- a/old.txt
+++ /dev/null
@@ -1 +0,0 @@
-gone
`

func fixtureReview() diffLoadedMsg {
	return diffLoadedMsg{id: "rv-5f1c9a2b7e31", member: "reservas", title: "review rv-5f1c9a2b7e31 · reservas · huddle/demo/reservas → main · pending", files: worktree.ParseDiff([]byte(fixtureDiff))}
}

// TestGoldenDiffView: the diff view at 80×24 (unified, the file on a line
// of its own), 120×36 (a file column) and 200×50 (side by side), with the
// cursor moved and a comment on a line.
func TestGoldenDiffView(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {120, 36}, {200, 50}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			m, _ := newTestModel(t, size[0], size[1])
			m.Update(SnapshotMsg(busySnapshot(t)))
			m.Update(fixtureReview())
			send(m, "n", "j", "j", "j", "j", "c")
			typeText(m, "import flag in its group")
			send(m, "enter")
			golden.RequireEqual(t, m.View().Content)
		})
	}
}

// TestDiffViewMoves: ] and [ go through the files, n and N through the
// hunks (on to the next file past the last), c comments on the line under
// the cursor with its line in the new file, and esc closes the view.
func TestDiffViewMoves(t *testing.T) {
	m, _ := newTestModel(t, 120, 36)
	m.Update(SnapshotMsg(busySnapshot(t)))
	m.Update(fixtureReview())
	v := m.diff
	if v == nil || v.file != 0 || len(v.files) != 3 {
		t.Fatalf("the view did not open on the first file: %+v", v)
	}
	send(m, "n")
	if r := v.at(v.cursor); r == nil || r.kind != '@' || !strings.Contains(r.text, "-20,6 +21,9") {
		t.Fatalf("n n: cursor on %+v", r)
	}
	send(m, "j", "j", "j", "j")
	if path, line, ok := v.commentable(); !ok || path != "cmd/main.go" || line != 24 {
		t.Fatalf("the line under the cursor: %s:%d %v", path, line, ok)
	}
	send(m, "n")
	if v.file != 1 || v.files[v.file].Path != "docs/flags.md" {
		t.Fatalf("n past the last hunk: file %d", v.file)
	}
	send(m, "]")
	if v.files[v.file].Path != "old.txt" || v.files[v.file].Status != "deleted" {
		t.Fatalf("]: %+v", v.files[v.file])
	}
	send(m, "]")
	if v.file != 0 {
		t.Fatalf("] past the last file: %d", v.file)
	}
	send(m, "[")
	if v.file != 2 {
		t.Fatalf("[ from the first file: %d", v.file)
	}
	send(m, "esc")
	if m.diff != nil {
		t.Fatal("esc left the view open")
	}
}

// TestHighlighterColoursCode: with colour, a Go line's keyword and string
// come out in colours of their own; without, the line is as it was; a
// file chroma knows nothing of is left plain.
func TestHighlighterColoursCode(t *testing.T) {
	h := newHighlighter(true)
	line := `    return fmt.Errorf("no arguments")`
	got := h.line("cmd/main.go", line)
	if !strings.Contains(got, "\x1b[") || stripped(got) != line {
		t.Fatalf("highlighted %q", got)
	}
	if !strings.Contains(got, "return") || strings.Count(got, "\x1b[") < 2 {
		t.Fatalf("keyword and string not coloured apart: %q", got)
	}
	if plain := newHighlighter(false).line("cmd/main.go", line); plain != line {
		t.Fatalf("without colour: %q", plain)
	}
	if odd := h.line("data.unknownext", "x = 1"); odd != "x = 1" {
		t.Fatalf("an unknown file type: %q", odd)
	}
}

func stripped(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b {
			for i < len(s) && s[i] != 'm' {
				i++
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// TestFlowReviewWithALineComment: a real review of a real branch, on the
// screen wired as huddle up wires it: the lead selects it, opens its diff
// (v), comments on the added line (c), sends it back with feedback (r);
// the record ends changes_requested with the comment as path:line, and the
// teammate's inbox has them as its next turn.
func TestFlowReviewWithALineComment(t *testing.T) {
	repo := testkit.GitRepo(t, map[string]string{"a.txt": "one\n"})
	dir := t.TempDir()
	on := true
	tmj := team.Team{Name: "crew", WorkspaceDefaults: &team.WorkspaceSpec{Repo: repo, Worktree: &on},
		Members: []team.MemberSpec{{Name: "alice", Role: "codes", Runtime: team.RuntimeSpec{Kind: team.RuntimeExternal}}}}
	st := files.Open(t, dir)
	ctx := context.Background()
	b, _ := jsonMarshal(tmj)
	if err := st.PutConfig(ctx, "team.json", b); err != nil {
		t.Fatal(err)
	}
	ws, _ := tmj.Workspace(dir, "alice")
	r, err := worktree.Open(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Ensure(ctx, ws.Path, ws.Branch, "main"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws.Path, "a.txt"), []byte("one\ntwo\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rv, err := team.OpenReview(ctx, st, &tmj, ws, "", "done: two")
	if err != nil || rv == nil {
		t.Fatalf("OpenReview: %v %v", rv, err)
	}

	styles := NewStyles(false, true)
	actions := Reviews(LeadActions(StoreLead(ctx, st)), StoreReviews(ctx, st, dir))
	tm := probed(t, New(Options{Dir: dir, Styles: &styles, Footer: "test", Actions: actions}))
	stop, err := Connect(ctx, files.Open(t, dir), tm.Send)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stop() })
	waitScreen(t, tm, rv.ID)
	pressKey(tm, "2")
	waitScreen(t, tm, "a merge alice "+rv.ID) // the footer offers the review's keys
	pressKey(tm, "v")
	waitScreen(t, tm, "review "+rv.ID)
	waitScreen(t, tm, "+ two")
	for _, k := range []string{"n", "j", "j", "c"} {
		pressKey(tm, k)
	}
	waitScreen(t, tm, "comment on a.txt:2")
	for _, k := range "say which two" {
		tm.Type(string(k))
	}
	pressKey(tm, "enter")
	waitScreen(t, tm, "✎ say which two")
	pressKey(tm, "r")
	waitScreen(t, tm, "changes for alice (1 comment(s)")
	tm.Type("tidy it up")
	pressKey(tm, "enter")
	var got *protocol.Request
	testkit.WaitFor(t, 15*time.Second, "the review sent back", func() bool {
		got, err = st.Request(ctx, rv.ID)
		return err == nil && got.Status == protocol.RequestChangesRequested
	})
	if got.Feedback != "tidy it up\na.txt:2: say which two" {
		t.Fatalf("feedback %q", got.Feedback)
	}
	waitScreen(t, tm, "→ main · changes_requested")
	var inbox []byte
	testkit.WaitFor(t, 15*time.Second, "alice told", func() bool {
		inbox, _ = os.ReadFile(filepath.Join(dir, "inbox", "alice.jsonl"))
		return len(inbox) > 0
	})
	if !strings.Contains(string(inbox), `a.txt:2: say which two`) {
		t.Fatalf("alice's inbox has no message with the comment:\n%s", inbox)
	}
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

// fakeReviewer records what the diff view's keys ask of a review.
type fakeReviewer struct {
	fakeActions
	discarded, merged []string
}

func (f *fakeReviewer) ReviewDiff(string) ([]worktree.FileDiff, error) { return nil, nil }
func (f *fakeReviewer) WorkDiff(string) ([]worktree.FileDiff, error)   { return nil, nil }
func (f *fakeReviewer) Merge(id string) (string, error) {
	f.merged = append(f.merged, id)
	return "merged " + id, nil
}
func (f *fakeReviewer) RequestChanges(string, string, []team.Comment) (string, error) { return "", nil }
func (f *fakeReviewer) Unmerged(string) ([]worktree.Commit, error) {
	return []worktree.Commit{{Hash: "ab12cd34", Subject: "reservas: cap the transfer"}}, nil
}
func (f *fakeReviewer) Discard(id string) (string, error) {
	f.discarded = append(f.discarded, id)
	return "discarded " + id, nil
}

// TestDiscardNamesWhatItLoses: d in the diff view names the commits the
// discard takes off the branch and discards only on y; n keeps it.
func TestDiscardNamesWhatItLoses(t *testing.T) {
	st := NewStyles(false, true)
	fr := &fakeReviewer{}
	m := New(Options{Dir: t.TempDir(), Styles: &st, Now: (&testClock{now: t0}).Now, Actions: fr})
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 36})
	m.Update(SnapshotMsg(busySnapshot(t)))
	m.Update(fixtureReview())
	run := func(cmd tea.Cmd) {
		if cmd != nil {
			m.Update(cmd())
		}
	}
	run(send(m, "d"))
	screen := m.View().Content
	if !strings.Contains(screen, "Discard rv-5f1c9a2b7e31?") || !strings.Contains(screen, "ab12cd34 reservas: cap the transfer") {
		t.Fatalf("the discard's confirmation does not name the commit:\n%s", screen)
	}
	send(m, "n")
	if m.dialog != nil || len(fr.discarded) != 0 {
		t.Fatalf("n discarded: %v", fr.discarded)
	}
	run(send(m, "d"))
	run(send(m, "y"))
	if len(fr.discarded) != 1 || fr.discarded[0] != "rv-5f1c9a2b7e31" {
		t.Fatalf("y discarded %v", fr.discarded)
	}
	run(send(m, "a"))
	if len(fr.merged) != 1 {
		t.Fatalf("a merged %v", fr.merged)
	}
}
