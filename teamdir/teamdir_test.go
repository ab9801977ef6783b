package teamdir

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestPathsValidateFirst(t *testing.T) {
	dir := "/t"
	for _, f := range []func(string, string) (string, error){InboxPath, CursorPath, LegacyCursorPath, PrevPath, MemberPath, MemberLogPath} {
		for _, bad := range []string{"../x", "LEAD", "", "a/b"} {
			if p, err := f(dir, bad); err == nil {
				t.Errorf("name %q became %s", bad, p)
			}
		}
	}
	for _, f := range []func(string, string) (string, error){RequestPath, DecisionPath} {
		for _, bad := range []string{"../x", "", "a/b"} {
			if p, err := f(dir, bad); err == nil {
				t.Errorf("id %q became %s", bad, p)
			}
		}
	}
	for _, c := range []struct {
		got  func() (string, error)
		want string
	}{
		{func() (string, error) { return InboxPath(dir, "bob") }, "/t/inbox/bob.jsonl"},
		{func() (string, error) { return CursorPath(dir, "bob") }, "/t/cursors/bob.cursor"},
		{func() (string, error) { return LegacyCursorPath(dir, "bob") }, "/t/inbox/bob.cursor"},
		{func() (string, error) { return PrevPath(dir, "bob") }, "/t/inbox/bob.jsonl.prev"},
		{func() (string, error) { return MemberPath(dir, "bob") }, "/t/members/bob.json"},
		{func() (string, error) { return MemberLogPath(dir, "bob") }, "/t/members/bob.log"},
		{func() (string, error) { return RequestPath(dir, "pl-1") }, "/t/requests/pl-1.json"},
		{func() (string, error) { return DecisionPath(dir, "pl-1") }, "/t/requests/pl-1.decision"},
		{func() (string, error) { return ConfigPath(dir), nil }, "/t/team.json"},
		{func() (string, error) { return PolicyPath(dir), nil }, "/t/.puruto-ipc.json"},
		{func() (string, error) { return RuntimeLockPath(dir), nil }, "/t/runtime.lock"},
		{func() (string, error) { return DeadLetterPath(dir), nil }, "/t/deadletter.jsonl"},
		{func() (string, error) { return TracesPath(dir), nil }, "/t/traces.jsonl"},
		{func() (string, error) { return ExecutionsPath(dir), nil }, "/t/executions.jsonl"},
		{func() (string, error) { return InboxRel("bob"), nil }, "inbox/bob.jsonl"},
	} {
		if got, err := c.got(); err != nil || got != c.want {
			t.Errorf("got %q %v, want %q", got, err, c.want)
		}
	}
}

// Lines appended from many goroutines at once come out whole.
func TestAppendLineWhole(t *testing.T) {
	p := filepath.Join(t.TempDir(), "log.jsonl")
	line := func(w, i int) []byte { return []byte(fmt.Sprintf("%d:%d:%s\n", w, i, strings.Repeat("x", 5000))) }
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 50 {
				if err := AppendLine(p, line(w, i)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	if len(lines) != 201 || len(lines[200]) != 0 {
		t.Fatalf("%d lines", len(lines))
	}
	for _, l := range lines[:200] {
		if len(l) < 5000 || !bytes.HasSuffix(l, []byte(strings.Repeat("x", 5000)+"\n")) {
			t.Fatalf("torn line %.40q", l)
		}
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != FileMode {
		t.Errorf("mode %v", st.Mode().Perm())
	}
	if err := AppendLine(p, []byte("no newline")); err == nil {
		t.Error("a line without its newline was appended")
	}
	if err := AppendLine(filepath.Join(t.TempDir(), "no", "log"), []byte("x\n")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing directory: %v", err)
	}
}

func TestRewriteLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "r.json")
	for i, write := range []func(string, []byte) error{WriteFileAtomic, ReplaceFile} {
		want := []byte(fmt.Sprint("v", i))
		if err := write(p, want); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(p); !bytes.Equal(got, want) {
			t.Errorf("got %q want %q", got, want)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("%d files left: %v", len(ents), ents)
	}
}

func TestLinkExclusiveFirstWins(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.decision")
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for i := range 8 {
		wg.Go(func() {
			ok, err := LinkExclusive(p, []byte(fmt.Sprint(i)))
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				won++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if won != 1 {
		t.Errorf("%d winners", won)
	}
	if b, _ := os.ReadFile(p); len(b) != 1 {
		t.Errorf("decision %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d files left", len(ents))
	}
}

func TestLockRuntimeOnce(t *testing.T) {
	dir := t.TempDir()
	unlock, err := LockRuntime(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LockRuntime(dir); err == nil || !strings.Contains(err.Error(), fmt.Sprint(os.Getpid())) {
		t.Errorf("second lock: %v", err)
	}
	unlock()
	unlock2, err := LockRuntime(dir)
	if err != nil {
		t.Fatalf("after unlock: %v", err)
	}
	unlock2()
}

// Moved from inbox.
func TestAppendLineNeedsANewline(t *testing.T) {
	p := filepath.Join(t.TempDir(), "log.jsonl")
	if err := AppendLine(p, []byte(`{"a":1}`)); err == nil {
		t.Fatal("a line without a newline was appended")
	}
	if err := AppendLine(p, []byte("{\"a\":1}\n")); err != nil {
		t.Fatal(err)
	}
	if err := AppendLine(p, []byte("{\"a\":2}\n")); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if string(b) != "{\"a\":1}\n{\"a\":2}\n" {
		t.Fatalf("file: %q", b)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", st.Mode().Perm())
	}
}

// TestLinkExclusiveSyncsTheDirectoryAfterTheLink: the decision's name is
// made durable, and only once it exists (a sync before the link would
// leave the name to the next journal commit).
func TestLinkExclusiveSyncsTheDirectoryAfterTheLink(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.decision")
	var synced []string
	real := syncDir
	syncDir = func(d string) error {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("directory synced before the link: %v", err)
		}
		synced = append(synced, d)
		return real(d)
	}
	t.Cleanup(func() { syncDir = real })

	if ok, err := LinkExclusive(p, []byte("won")); !ok || err != nil {
		t.Fatalf("first link: %v, %v", ok, err)
	}
	if len(synced) != 1 || synced[0] != dir {
		t.Fatalf("directories synced: %q, want [%q]", synced, dir)
	}
	if ok, err := LinkExclusive(p, []byte("lost")); ok || err != nil {
		t.Fatalf("second link: %v, %v", ok, err)
	}
	if len(synced) != 1 {
		t.Errorf("a lost race synced the directory: %q", synced)
	}

	// A failed sync is reported, and the file is there all the same.
	syncDir = func(string) error { return errors.New("disk gone") }
	q := filepath.Join(dir, "y.decision")
	ok, err := LinkExclusive(q, []byte("made"))
	if !ok || err == nil || !strings.Contains(err.Error(), "disk gone") {
		t.Fatalf("failed sync: %v, %v", ok, err)
	}
	if b, _ := os.ReadFile(q); string(b) != "made" {
		t.Errorf("file after a failed sync: %q", b)
	}
}

// TestAppenderWritesAgainWhereTheNameIs: a line appended after the file
// lost its name is checked for just after its write and written again into
// the file at the path; the old file, which a reader may still hold open,
// has it too (the reason an inbox's consumer dedupes by id).
func TestAppenderWritesAgainWhereTheNameIs(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.jsonl")
	a, err := OpenAppender(p)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Append([]byte("one\n")); err != nil {
		t.Fatal(err)
	}
	old, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := a.Append([]byte("two\n")); err != nil {
		t.Fatal(err)
	}
	if err := a.Append([]byte("three\n")); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(p)
	if err != nil || string(got) != "two\nthree\n" {
		t.Fatalf("the file at the path holds %q (%v), want two and three", got, err)
	}
	gotOld, err := io.ReadAll(old)
	if err != nil || string(gotOld) != "one\ntwo\n" {
		t.Fatalf("the unlinked file holds %q (%v), want one and two", gotOld, err)
	}
}
