package team

import (
	"encoding/json"
	"os"
	"slices"

	"huddle/protocol"
	"huddle/teamdir"
)

// A request's record is rewritten after its decision is claimed (resolve).
// That rewrite is a rename over the record, and on ext4 a rename over an
// existing file whose new data has no blocks yet makes the kernel write the
// data out inside the rename (its auto_da_alloc rule, which keeps the file
// from reading empty after a power loss). Right after the decision's fsync
// that write waits on the disk's journal, and it made the teammate's own
// status write, at the same moment, wait too (docs/pending/perf-team.md).
// So the new record is written to its temp file, and its write-back
// started, while the claim's fsync waits on the disk: after the claim only
// the rename is left, and it has nothing to write out.

// preparedRecord is a request's record as its decision makes it, written
// to a temp file beside the record; zero when it could not be prepared
// (the ordinary rewrite is then made).
type preparedRecord struct {
	final *protocol.Request
	tmp   string
}

// prepareDecided writes r as d makes it to a temp file beside r's record
// and starts its write-back, without waiting for it.
func prepareDecided(dir string, r *protocol.Request, d *decision) preparedRecord {
	final := *r
	final.History = slices.Clone(r.History)
	if err := applyInMemory(&final, d); err != nil {
		return preparedRecord{}
	}
	p, err := teamdir.RequestPath(dir, r.ID)
	if err != nil {
		return preparedRecord{}
	}
	b, err := json.MarshalIndent(&final, "", "  ")
	if err != nil {
		return preparedRecord{}
	}
	f, err := teamdir.CreateTemp(p)
	if err != nil {
		return preparedRecord{}
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = startWriteback(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return preparedRecord{}
	}
	return preparedRecord{final: &final, tmp: f.Name()}
}

// commit renames the prepared record into place and returns it; ok is
// false when there is none, or when the request was archived meanwhile
// (the archive is the record then: applyDecision reads it), and the temp
// file is removed.
func (p preparedRecord) commit(dir string) (*protocol.Request, bool) {
	if p.final == nil {
		return nil, false
	}
	if !archived(dir, p.final.ID) {
		if dst, err := teamdir.RequestPath(dir, p.final.ID); err == nil && os.Rename(p.tmp, dst) == nil {
			return p.final, true
		}
	}
	p.abort()
	return nil, false
}

// abort removes the prepared temp file, if any.
func (p preparedRecord) abort() {
	if p.tmp != "" {
		os.Remove(p.tmp)
	}
}
