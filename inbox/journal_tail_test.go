package inbox

import (
	"os"
	"path/filepath"
	"testing"
)

// TestJournalTailReadsWhatWasAppended: the base a journalTail gives is
// the one readBase reads from the journal, through appends, a torn last
// line, a journal replaced by rename (its rewrite), one cut shorter, and
// one removed.
func TestJournalTailReadsWhatWasAppended(t *testing.T) {
	dir := t.TempDir()
	j := journalPaths{path: filepath.Join(dir, "bob.cursor"), legacy: filepath.Join(dir, "legacy", "bob.cursor")}
	var tail journalTail
	defer tail.close()
	check := func(step string, want int64) {
		t.Helper()
		got, err := tail.base(j)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		read, err := readBase(j)
		if err != nil {
			t.Fatalf("%s: readBase: %v", step, err)
		}
		if got != want || read != want {
			t.Fatalf("%s: journalTail says base %d, readBase %d, want %d", step, got, read, want)
		}
	}
	appendTo := func(s string) {
		t.Helper()
		f, err := os.OpenFile(j.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	replace := func(s string) {
		t.Helper()
		tmp := j.path + ".tmp"
		if err := os.WriteFile(tmp, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, j.path); err != nil {
			t.Fatal(err)
		}
	}
	check("no journal", 0)
	appendTo(`{"b":0,"o":10,"id":"m-1"}` + "\n")
	check("first record", 0)
	check("unchanged", 0)
	appendTo(`{"b":100,"o":0}` + "\n" + `{"b":100,"o":7,"id":"m-2"}` + "\n")
	check("a rebase appended", 100)
	appendTo(`{"b":300`)
	check("a torn record", 100)
	appendTo(`,"o":0}` + "\n")
	check("the record completed", 300)
	appendTo("not a record\n")
	check("a line that does not parse", 300)
	replace(`{"b":200,"o":5}` + "\n")
	check("the journal rewritten", 200)
	replace(`{"b":200,"o":5}` + "\n" + `{"b":250,"o":0}` + "\n" + `{"b":250,"o":9}` + "\n")
	check("rewritten again", 250)
	if err := os.Truncate(j.path, 16); err != nil {
		t.Fatal(err)
	}
	check("cut shorter", 200)
	if err := os.Remove(j.path); err != nil {
		t.Fatal(err)
	}
	check("removed", 0)
}
