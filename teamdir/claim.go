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
	live, err := RequestPath(dir, id)
	if err != nil {
		return err
	}
	liveDecision, _ := DecisionPath(dir, id)
	done, _ := DoneRequestPath(dir, id)
	doneDecision, _ := DoneDecisionPath(dir, id)
	if err := os.MkdirAll(DoneDirPath(dir), DirMode); err != nil {
		return fmt.Errorf("archive %s: %w", id, err)
	}
	if _, err := os.Stat(doneDecision); err == nil {
		// Archived before (its record came back through a stale rewrite):
		// the archived decision was first, a live one is a late claim's.
		if err := os.Remove(liveDecision); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("archive %s: %w", id, err)
		}
	} else if err := os.Rename(liveDecision, doneDecision); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("archive %s: %w", id, err)
	}
	if _, err := os.Stat(doneDecision); errors.Is(err, os.ErrNotExist) {
		if _, err := LinkExclusive(doneDecision, decision); err != nil {
			return fmt.Errorf("archive %s: %w", id, err)
		}
	}
	if err := os.Rename(live, done); err != nil {
		return fmt.Errorf("archive %s: %w", id, err)
	}
	return nil
}
