package blueprint

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestConcurrentAppendsEachLandBeforeReturning runs many Appends at once,
// which the store writes in batches: each Append finds its own line in the
// file as soon as it returns, and in the end the file holds every line
// once, none torn.
func TestConcurrentAppendsEachLandBeforeReturning(t *testing.T) {
	dir := t.TempDir()
	st := NewStore(dir)
	const writers, each = 16, 20
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				e := &execution{ID: fmt.Sprintf("exec-%02d-%02d", w, i), SkillID: "a.b", CallerID: "c",
					State: StateAccepted, Created: time.Now().UTC()}
				if err := st.Append(e); err != nil {
					errs <- err
					return
				}
				b, err := os.ReadFile(st.Path())
				if err != nil {
					errs <- err
					return
				}
				if !strings.Contains(string(b), `"id":"`+e.ID+`"`) {
					errs <- fmt.Errorf("%s: not in the file when Append returned", e.ID)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	loaded, err := st.Load(time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Lines != writers*each || len(loaded.Executions) != writers*each || len(loaded.Skipped) != 0 {
		t.Fatalf("%d lines, %d executions, %d skipped; want %d, %d, 0", loaded.Lines, len(loaded.Executions), len(loaded.Skipped),
			writers*each, writers*each)
	}
}

// TestAppendAfterAFailedBatchTriesAgain: a batch that could not be written
// fails its Appends, and the next Append writes a batch of its own.
func TestAppendAfterAFailedBatchTriesAgain(t *testing.T) {
	dir := t.TempDir()
	st := NewStore(dir)
	if err := os.Mkdir(st.Path(), 0o700); err != nil { // a directory where the file goes: appends fail
		t.Fatal(err)
	}
	e := &execution{ID: "exec-1", SkillID: "a.b", CallerID: "c", State: StateAccepted, Created: time.Now().UTC()}
	if err := st.Append(e); err == nil {
		t.Fatal("append into a directory: no error")
	}
	if err := os.Remove(st.Path()); err != nil {
		t.Fatal(err)
	}
	e.ID = "exec-2"
	if err := st.Append(e); err != nil {
		t.Fatal(err)
	}
	loaded, err := st.Load(time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded.Executions) != 1 || loaded.Executions[0].ID != "exec-2" {
		t.Fatalf("after a failed batch: %+v", loaded.Executions)
	}
}

// TestAppendsLandInTheFileOfTheirName: the store keeps its file open
// between appends, and every append still lands in the file the path
// names — after the store's own rewrite, after another process replaced
// the file (renamed another over it) or removed it, and after Close.
func TestAppendsLandInTheFileOfTheirName(t *testing.T) {
	dir := t.TempDir()
	st := NewStore(dir)
	defer st.Close()
	n := 0
	appendOne := func(step string) {
		t.Helper()
		n++
		e := &execution{ID: fmt.Sprintf("exec-%02d", n), SkillID: "a.b", CallerID: "c", State: StateAccepted, Created: time.Now().UTC()}
		if err := st.Append(e); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		b, err := os.ReadFile(st.Path())
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if !strings.Contains(string(b), `"id":"`+e.ID+`"`) {
			t.Fatalf("%s: %s is not in the file the path names:\n%s", step, e.ID, b)
		}
	}
	appendOne("first")
	appendOne("second, through the kept descriptor")
	loaded, err := st.Load(time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Rewrite(loaded.Executions); err != nil {
		t.Fatal(err)
	}
	appendOne("after the store's rewrite")
	other := st.Path() + ".other"
	if err := os.WriteFile(other, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other, st.Path()); err != nil {
		t.Fatal(err)
	}
	appendOne("after another file was renamed over it")
	if err := os.Remove(st.Path()); err != nil {
		t.Fatal(err)
	}
	appendOne("after it was removed")
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	appendOne("after Close")
	loaded, err = st.Load(time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded.Executions) != 2 || loaded.Executions[0].ID != "exec-05" || loaded.Executions[1].ID != "exec-06" {
		t.Fatalf("the file holds %d executions (%+v), want exec-05 and exec-06", len(loaded.Executions), loaded.Executions)
	}
}
