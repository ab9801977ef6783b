package team

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"huddle/protocol"
	"huddle/teamdir"
)

// spareRecord is a temp file made ready, ahead of time, for a teammate's
// next record write, so that the write that follows a plan decision costs
// an overwrite and a rename instead of a new file whose data the rename
// has to push to disk (docs/pending/perf-team.md).
//
// Why it is safe: the spare holds the teammate's current record, padded
// with spaces, and its data is handed to the disk when it is made
// (startWriteback), which gives it its blocks. The next record is written
// over it in place, padded to the same size, and renamed over the record.
// Readers only ever open the record's name, which a rename switches from
// one whole file to another, so no reader sees a torn or empty record;
// the spare is a dot-file, which readers skip and a start sweeps. The
// file's size never changes after it is made, so after a power loss its
// block holds the old record or the new one, never a mix of a new size
// and old bytes. (A rename over a file whose new data has no blocks yet is
// what makes ext4 write the data out inside the rename, its auto_da_alloc
// rule: that write waits on the disk's journal, which the decision's fsync
// has just made busy.)
type spareRecord struct {
	f    *os.File
	size int
}

// spareSlack is room for the next record to be longer than the current
// one (a longer activity, a counter with one more digit); a next record
// that does not fit is written the ordinary way.
const spareSlack = 512

// makeSpare creates the spare for rec: a temp file beside its record
// holding rec padded to len+spareSlack, its write-back started.
func makeSpare(dir string, rec *protocol.Member) (*spareRecord, error) {
	p, err := teamdir.MemberPath(dir, rec.Name)
	if err != nil {
		return nil, err
	}
	b, err := memberJSON(rec)
	if err != nil {
		return nil, err
	}
	size := len(b) + spareSlack
	f, err := teamdir.CreateTemp(p)
	if err != nil {
		return nil, err
	}
	_, err = f.Write(padded(b, size))
	if err == nil {
		err = startWriteback(f)
	}
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return &spareRecord{f: f, size: size}, nil
}

// write writes rec over the spare and renames it into place. ok is false
// when rec does not fit in the spare: nothing was written, and the caller
// writes rec the ordinary way. Either way the spare is used up.
func (s *spareRecord) write(dir string, rec *protocol.Member) (ok bool, err error) {
	if err := rec.Validate(); err != nil {
		s.discard()
		return true, err
	}
	b, err := memberJSON(rec)
	if err != nil {
		s.discard()
		return true, err
	}
	if len(b) > s.size {
		s.discard()
		return false, nil
	}
	p, err := teamdir.MemberPath(dir, rec.Name)
	if err != nil {
		s.discard()
		return true, err
	}
	_, err = s.f.WriteAt(padded(b, s.size), 0)
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(s.f.Name(), p)
	}
	if err != nil {
		os.Remove(s.f.Name())
		return true, fmt.Errorf("write %s: %w", rec.Name, err)
	}
	return true, nil
}

// discard removes an unused spare.
func (s *spareRecord) discard() {
	s.f.Close()
	os.Remove(s.f.Name())
}

// memberJSON is a member record as WriteMember writes it.
func memberJSON(rec *protocol.Member) ([]byte, error) {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// padded is b followed by spaces up to size bytes: JSON allows trailing
// white space, so every reader reads the record as it is.
func padded(b []byte, size int) []byte {
	return append(b, bytes.Repeat([]byte{' '}, size-len(b))...)
}
