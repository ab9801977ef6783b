package teamdir

import (
	"bytes"
	"errors"
	"fmt"
	"os"
)

// ClaimDecision makes b the decision of request id, if it is the first:
// requests/<id>.decision is created exclusively (LinkExclusive). It reports
// false when another decision came first, live or archived. A resolver that
// read the request pending can link after the runtime archived the real
// decision to requests/done/; it looks there right after its link, takes
// its claim back and loses. The archived decision may also be the claim's
// own (the runtime watches requests/ and can apply and archive a claim
// between its link and that look): byte for byte b, it won.
func ClaimDecision(dir, id string, b []byte) (bool, error) {
	p, err := DecisionPath(dir, id)
	if err != nil {
		return false, err
	}
	claimed, err := LinkExclusive(p, b)
	if err != nil || !claimed {
		return claimed, err
	}
	if !Archived(dir, id) {
		return true, nil
	}
	if done, err := DoneDecisionPath(dir, id); err == nil {
		if db, err := os.ReadFile(done); err == nil && bytes.Equal(db, b) {
			return true, nil
		}
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("take back a late claim on %s: %w", id, err)
	}
	return false, nil
}

// Archived reports whether requests/done/ holds id's decision or record.
func Archived(dir, id string) bool {
	for _, path := range []func(string, string) (string, error){DoneDecisionPath, DoneRequestPath} {
		p, err := path(dir, id)
		if err != nil {
			return false
		}
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}

// Archive moves request id out of requests/ into requests/done/: first its
// decision, then its record, each by a rename, so a reader always finds the
// record in one place or the other and a resolver that read it before it
// was final loses (ClaimDecision). The caller has checked that the record is
// final; decision is the decision to leave in requests/done/ when there is
// none (a final record a foreign agent wrote without one), so that no late
// resolver can claim it. A crash between the two renames is finished by the
// next Archive.
func Archive(dir, id string, decision []byte) error {
	return ArchiveAll(dir, []Archival{{ID: id, Decision: decision}})[0]
}

// Archival is one request for ArchiveAll: its id, and the decision to leave
// in requests/done/ when it has none.
type Archival struct {
	ID       string
	Decision []byte
}

// ArchiveAll archives each of as as Archive says, the decisions it writes
// made durable for the whole batch at once (one sync of the file system's
// data, one of requests/done/), not two fsyncs a record: a history of
// thousands is archived in seconds. It returns one error per item, nil
// where the item was archived.
func ArchiveAll(dir string, as []Archival) []error {
	errs := make([]error, len(as))
	fail := func(i int, err error) { errs[i] = fmt.Errorf("archive %s: %w", as[i].ID, err) }
	doneDir := DoneDirPath(dir)
	if err := os.MkdirAll(doneDir, DirMode); err != nil {
		for i := range as {
			fail(i, err)
		}
		return errs
	}
	// First every live decision moves (or goes, when one is archived
	// already); the items left without one get theirs written to a temp
	// file, unsynced.
	temps := map[int]string{}
	defer func() {
		for _, tmp := range temps {
			_ = os.Remove(tmp) // linked, or failed: the temp itself is no record
		}
	}()
	for i, a := range as {
		liveDecision, err := DecisionPath(dir, a.ID)
		if err != nil {
			fail(i, err)
			continue
		}
		doneDecision, _ := DoneDecisionPath(dir, a.ID)
		if _, err := os.Stat(doneDecision); err == nil {
			// Archived before (its record came back through a stale
			// rewrite): the archived decision was first, a live one is
			// a late claim's.
			if err := os.Remove(liveDecision); err != nil && !errors.Is(err, os.ErrNotExist) {
				fail(i, err)
			}
			continue
		}
		if err := os.Rename(liveDecision, doneDecision); err == nil {
			continue
		} else if !errors.Is(err, os.ErrNotExist) {
			fail(i, err)
			continue
		}
		tmp, err := writeTemp(doneDecision, a.Decision)
		if err != nil {
			fail(i, err)
			continue
		}
		temps[i] = tmp
	}
	// The written decisions' data is made durable before their names
	// exist: a crash never leaves an empty decision standing.
	if len(temps) > 0 {
		if err := syncFS(doneDir); err != nil {
			for i := range temps {
				fail(i, err)
			}
			clear(temps)
		}
	}
	for i, tmp := range temps {
		doneDecision, _ := DoneDecisionPath(dir, as[i].ID)
		if err := os.Link(tmp, doneDecision); err != nil && !errors.Is(err, os.ErrExist) {
			fail(i, err)
		}
	}
	// The new names are made durable before any record leaves
	// requests/: an archived record always has its decision.
	if err := syncDir(doneDir); err != nil {
		for i := range as {
			if errs[i] == nil {
				fail(i, fmt.Errorf("sync %s: %w", doneDir, err))
			}
		}
		return errs
	}
	for i, a := range as {
		if errs[i] != nil {
			continue
		}
		live, _ := RequestPath(dir, a.ID)
		done, _ := DoneRequestPath(dir, a.ID)
		if err := os.Rename(live, done); err != nil {
			fail(i, err)
		}
	}
	return errs
}
