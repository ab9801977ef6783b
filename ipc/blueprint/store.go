package blueprint

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"huddle/teamdir"
)

// MaxRecord bounds a line of executions.jsonl: an output (≤ 1 MiB, written
// without HTML escaping) and its error, ids and timestamps fit with room
// to spare. A longer line is skipped on load, never the file.
const MaxRecord = 4 * MaxBody

// Store persists executions under a team directory as one JSON line per
// change: one when an execution is accepted, one when it ends. A restarted
// server folds them (the last line of an execution wins), so it still
// answers status and result, and knows which executions a crash cut short.
type Store struct {
	path string
	mu   sync.Mutex // held while a batch is written or the file rewritten
	// app keeps the file open between appends (under mu), so an append
	// costs flock, fstat, write and unlock, not an open and a close too;
	// nil until the first append and after Close or a rewrite.
	app *teamdir.Appender

	pendingMu sync.Mutex
	pending   *appendBatch // lines waiting for the next write, or nil
}

// appendBatch is lines that concurrent Appends queued while another batch
// was being written: they go to the file in one write, and each Append
// returns once its batch is written (the error, if any, is the batch's).
type appendBatch struct {
	lines   []byte
	written bool // under Store.mu
	err     error
}

// NewStore keeps executions in dir/executions.jsonl.
func NewStore(dir string) *Store { return &Store{path: teamdir.ExecutionsPath(dir)} }

// Path is the file the store keeps, for messages.
func (s *Store) Path() string { return s.path }

// SkippedLine is a line of the file that load could not use.
type SkippedLine struct {
	Line   int
	Reason string
}

// Loaded is what Load found: the executions, oldest first, and the lines it
// skipped.
type Loaded struct {
	Executions []*execution
	Skipped    []SkippedLine
	// Lines is how many lines the file has, good or not: more lines than
	// executions means a rewrite would shrink it.
	Lines int
}

// Append records an execution's state: the line is in the file when it
// returns. Appends that arrive while a write is under way are written
// together by the first of them to get the lock (group commit), so 16
// callers cost one open, flock and write instead of 16, and none returns
// before its own line is written.
func (s *Store) Append(e *execution) error {
	line, err := encodeRecord(e)
	if err != nil {
		return err
	}
	s.pendingMu.Lock()
	if s.pending == nil {
		s.pending = &appendBatch{}
	}
	b := s.pending
	b.lines = append(b.lines, line...)
	s.pendingMu.Unlock()

	s.mu.Lock()
	defer s.mu.Unlock()
	if !b.written {
		// Closing the batch before reading it: later Appends start the
		// next one.
		s.pendingMu.Lock()
		if s.pending == b {
			s.pending = nil
		}
		s.pendingMu.Unlock()
		b.err, b.written = s.write(b.lines), true
	}
	return b.err
}

// write appends lines through the kept descriptor, opening it first if
// need be; the caller holds s.mu.
func (s *Store) write(lines []byte) error {
	if s.app == nil {
		app, err := teamdir.OpenAppender(s.path)
		if err != nil {
			return err
		}
		s.app = app
	}
	return s.app.Append(lines)
}

// Close releases the descriptor appends keep; an Append after it opens
// the file again.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closeAppender()
}

// closeAppender closes the kept descriptor; the caller holds s.mu.
func (s *Store) closeAppender() error {
	if s.app == nil {
		return nil
	}
	err := s.app.Close()
	s.app = nil
	return err
}

// encodeRecord is one line of the file. HTML is not escaped: escaping could
// make an output of 1 MiB six times longer.
func encodeRecord(e *execution) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		return nil, fmt.Errorf("executions: encode %s: %w", e.ID, err)
	}
	return buf.Bytes(), nil
}

// Load reads the file and folds it: the last line of each execution wins,
// and an execution that ended before since is left out. A line that is
// over MaxRecord, not JSON, or without an id is skipped and reported; it
// stops nothing.
func (s *Store) Load(since time.Time) (Loaded, error) {
	f, err := os.Open(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return Loaded{}, nil
	}
	if err != nil {
		return Loaded{}, fmt.Errorf("executions: %w", err)
	}
	defer f.Close()
	var out Loaded
	byID := map[string]int{}
	r := bufio.NewReaderSize(f, 64<<10)
	for {
		line, tooLong, err := readRecord(r)
		if err != nil {
			return out, fmt.Errorf("executions %s: %w", s.path, err)
		}
		if line == nil && !tooLong {
			break
		}
		out.Lines++
		e, reason := decodeRecord(line, tooLong)
		if e == nil {
			out.Skipped = append(out.Skipped, SkippedLine{Line: out.Lines, Reason: reason})
			continue
		}
		if i, seen := byID[e.ID]; seen {
			out.Executions[i] = e
			continue
		}
		byID[e.ID] = len(out.Executions)
		out.Executions = append(out.Executions, e)
	}
	kept := out.Executions[:0]
	for _, e := range out.Executions {
		if e.Done == nil || !e.Done.Before(since) {
			kept = append(kept, e)
		}
	}
	out.Executions = kept
	return out, nil
}

// decodeRecord parses one line, or says why it cannot be used.
func decodeRecord(line []byte, tooLong bool) (*execution, string) {
	if tooLong {
		return nil, fmt.Sprintf("longer than %d bytes", MaxRecord)
	}
	if len(bytes.TrimSpace(line)) == 0 {
		return nil, "empty"
	}
	var e execution
	if err := json.Unmarshal(line, &e); err != nil {
		return nil, "not an execution: " + err.Error()
	}
	if e.ID == "" || e.State == "" {
		return nil, "an execution without an id or a status"
	}
	return &e, ""
}

// readRecord reads one line of at most MaxRecord bytes. A longer line is
// read to its end and dropped (tooLong); nil without tooLong is the end of
// the file.
func readRecord(r *bufio.Reader) (line []byte, tooLong bool, err error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			buf = append(buf, chunk...)
			if len(buf) > MaxRecord {
				tooLong, buf = true, nil
			}
		}
		switch {
		case err == nil:
			return buf, tooLong, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(buf) == 0 && !tooLong {
				return nil, false, nil
			}
			return buf, tooLong, nil // a last line without its newline: a torn append
		default:
			return nil, false, err
		}
	}
}

// Rewrite replaces the file with exactly these executions, one line each.
func (s *Store) Rewrite(execs []*execution) error {
	return s.RewriteWith(func() []*execution { return execs })
}

// RewriteWith replaces the file with the executions current returns, called
// under the store's lock: no append of this process falls between the
// snapshot and the rename and is lost by it.
func (s *Store) RewriteWith(current func() []*execution) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var buf bytes.Buffer
	for _, e := range current() {
		b, err := encodeRecord(e)
		if err != nil {
			return err
		}
		buf.Write(b)
	}
	if err := teamdir.WriteFileAtomic(s.path, buf.Bytes()); err != nil {
		return fmt.Errorf("executions: rewrite: %w", err)
	}
	// The kept descriptor is of the file replaced: the next append opens
	// the new one (the Appender would find out by itself, one fstat later).
	_ = s.closeAppender()
	return nil
}

// Recorded is an execution as executions.jsonl last recorded it: its
// status as GET /status answers it, who asked, and its output once
// completed. For `huddle show`.
type Recorded struct {
	Status
	CallerID string          `json:"caller_id"`
	Output   json.RawMessage `json:"output,omitempty"`
}

// Find is execution id as the file last recorded it, or nil when the file
// holds none. An execution recorded as accepted or running may belong to a
// server that has stopped since (it fails it with SERVER_RESTARTED when it
// starts again).
func (s *Store) Find(id string) (*Recorded, error) {
	loaded, err := s.Load(time.Time{})
	if err != nil {
		return nil, err
	}
	for _, e := range loaded.Executions {
		if e.ID == id {
			return &Recorded{Status: e.status(), CallerID: e.CallerID, Output: e.Output}, nil
		}
	}
	return nil, nil
}
