package inbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"huddle/teamdir"
)

// The cursor of a consumer is a journal: every commit appends one small
// record with a single write(2), instead of rewriting a file per message.
// (docs/decisions/0001-cursor-journal.md says why: a rename costs ~200 µs here against
// ~2 µs for an append, and the consumer commits after every message.) The
// last complete record is the committed position; the ids of the last
// records are the persisted dedupe set. When the journal has grown to four
// times the dedupe window it is rewritten with write-temp + fsync + rename.
type record struct {
	Base  int64   `json:"b"`               // logical offset of byte 0 of the inbox file
	Off   int64   `json:"o"`               // committed byte offset within the inbox file
	ID    string  `json:"id,omitempty"`    // message handled by this commit
	Clean bool    `json:"clean,omitempty"` // the consumer stopped cleanly here
	First *anchor `json:"a,omitempty"`     // the inbox file's first line, once read
}

// appendLine appends r as one line of the journal, the bytes
// json.Marshal gives followed by a newline, without its reflection: the
// consumer writes one record per message it handles. An id that needs
// escaping (none that protocol.ValidateID accepts does) goes through
// encoding/json.
func (r record) appendLine(b []byte) []byte {
	b = append(b, `{"b":`...)
	b = strconv.AppendInt(b, r.Base, 10)
	b = append(b, `,"o":`...)
	b = strconv.AppendInt(b, r.Off, 10)
	if r.ID != "" {
		b = append(b, `,"id":`...)
		if plainID(r.ID) {
			b = append(append(append(b, '"'), r.ID...), '"')
		} else {
			q, _ := json.Marshal(r.ID)
			b = append(b, q...)
		}
	}
	if r.Clean {
		b = append(b, `,"clean":true`...)
	}
	if r.First != nil {
		b = append(b, `,"a":{"n":`...)
		b = strconv.AppendInt(b, r.First.N, 10)
		b = append(b, `,"s":`...)
		b = strconv.AppendUint(b, uint64(r.First.Sum), 10)
		b = append(b, '}')
	}
	return append(b, '}', '\n')
}

// plainID reports whether id is written in JSON as it is.
func plainID(id string) bool {
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// anchor fingerprints the first line of the inbox file the committed offset
// is counted in: its length and the CRC-32 of its first anchorWindow bytes.
// Appends never change that line; a truncation does (a foreign reader
// draining the file, or a compaction whose rebase a crash cut off), and so
// does the burst written after one, however long. So the offset is trusted
// only while the line is still there (docs/ARCHITECTURE.md, "Delivery").
type anchor struct {
	N   int64  `json:"n"`
	Sum uint32 `json:"s"`
}

// anchorWindow bounds what an anchor covers and so what checking one reads.
const anchorWindow = 4 << 10

// anchorOf fingerprints a line read by scanLines (text holds at least its
// first anchorWindow bytes).
func anchorOf(l line) anchor {
	n := l.next - l.at
	if n <= anchorWindow && !l.oversize {
		return anchor{N: n, Sum: crc32.Update(crc32.ChecksumIEEE(l.text), crc32.IEEETable, []byte{'\n'})}
	}
	return anchor{N: n, Sum: crc32.ChecksumIEEE(l.text[:min(len(l.text), anchorWindow)])}
}

// holds reports whether f still starts with the anchored line; buf is
// scratch space of at least anchorWindow bytes.
func (a anchor) holds(f io.ReaderAt, buf []byte) (bool, error) {
	w := min(a.N, anchorWindow)
	n, err := f.ReadAt(buf[:w], 0)
	if int64(n) < w {
		if err == io.EOF {
			return false, nil // shorter than the line: truncated
		}
		return false, err
	}
	if crc32.ChecksumIEEE(buf[:w]) != a.Sum {
		return false, nil
	}
	if a.N > w {
		// A long line: its newline must still be where it was.
		if n, err := f.ReadAt(buf[:1], a.N-1); n < 1 || buf[0] != '\n' {
			if err != nil && err != io.EOF {
				return false, err
			}
			return false, nil
		}
	}
	return true, nil
}

type cursor struct {
	path    string
	f       *os.File
	base    int64
	off     int64
	keep    int
	recent  []string // ring of the last keep ids, oldest first once full
	next    int
	seen    map[string]struct{}
	records int
	// first fingerprints the inbox file's first line; nil until it is read.
	first *anchor
	// startedClean is true when the journal ended with a clean stop (or did
	// not exist): after a crash the first delivery is marked as a redelivery.
	startedClean bool
	// damaged says why the journal could not be read whole (records that do
	// not parse, other than a torn last one); nil when it could.
	damaged error
	// buf holds the record being written, kept between commits.
	buf []byte
}

func openCursor(path string, keep int) (*cursor, error) {
	c := &cursor{path: path, keep: keep, seen: make(map[string]struct{}), startedClean: true}
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("cursor: %w", err)
	}
	var last *record
	torn, bad := false, 0
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			torn = true // a crash in the middle of a write: the normal case
			break
		}
		var r record
		if json.Unmarshal(data[:i], &r) == nil && r.Base >= 0 && r.Off >= 0 {
			last = &r
			c.records++
			if r.ID != "" {
				c.remember(r.ID)
			}
		} else {
			bad++
		}
		data = data[i+1:]
	}
	if last != nil {
		c.base, c.off, c.startedClean, c.first = last.Base, last.Off, last.Clean, last.First
	}
	if bad > 0 {
		// Only something other than the consumer writes whole records that
		// do not parse: the position may be stale, so this is a crash.
		c.damaged = fmt.Errorf("cursor journal %s: %d records unreadable, %d read: treated as a crash", path, bad, c.records)
		c.startedClean = false
	}
	if torn || bad > 0 || c.records > 4*keep {
		if err := c.rewrite(); err != nil {
			return nil, err
		}
	} else if err == nil {
		// The journal is there: appended to from now on. One that is not
		// there yet is created by its first record (write): a consumer
		// that never commits, as most of a large team's do at first,
		// costs no file; a spawn, one less create.
		if err := c.open(); err != nil {
			return nil, err
		}
	}
	if c.startedClean && c.records > 0 {
		// Running from here on: a crash must not look like the clean stop.
		if err := c.write(record{Base: c.base, Off: c.off, First: c.first}); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *cursor) remember(id string) {
	if _, ok := c.seen[id]; ok {
		return
	}
	if len(c.recent) < c.keep {
		c.recent = append(c.recent, id)
	} else {
		delete(c.seen, c.recent[c.next])
		c.recent[c.next] = id
		c.next = (c.next + 1) % c.keep
	}
	c.seen[id] = struct{}{}
}

func (c *cursor) has(id string) bool { _, ok := c.seen[id]; return ok }

// commit records that everything before off has been handled, and that id
// (if any) was the message handled last.
func (c *cursor) commit(off int64, id string) error {
	if err := c.write(record{Base: c.base, Off: off, ID: id, First: c.first}); err != nil {
		return err
	}
	c.off = off
	if id != "" {
		c.remember(id)
	}
	return nil
}

// rebase records that the inbox file now starts at logical offset base;
// its first line is yet to be read.
func (c *cursor) rebase(base int64) error {
	if err := c.write(record{Base: base, Off: 0}); err != nil {
		return err
	}
	c.base, c.off, c.first = base, 0, nil
	return nil
}

// open opens the journal for appends, creating it when it is not there.
func (c *cursor) open() error {
	f, err := os.OpenFile(c.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, teamdir.FileMode)
	if err != nil {
		return fmt.Errorf("cursor: %w", err)
	}
	c.f = f
	return nil
}

func (c *cursor) write(r record) error {
	if c.f == nil {
		if err := c.open(); err != nil {
			return err
		}
	}
	c.buf = r.appendLine(c.buf[:0])
	// Whole or absent: a record cut by a full disk is cut back, so the
	// next one is not glued onto it.
	if err := teamdir.WriteWhole(int(c.f.Fd()), c.path, c.buf); err != nil {
		return fmt.Errorf("cursor: %w", err)
	}
	c.records++
	if c.records > 4*c.keep {
		return c.rewrite()
	}
	return nil
}

// rewrite replaces the journal with the current position and the dedupe
// window: write-temp + fsync + rename.
func (c *cursor) rewrite() error {
	var buf []byte
	ids := c.ids()
	// A rewrite happens while the consumer runs: never a clean stop.
	for _, id := range ids {
		buf = record{Base: c.base, Off: c.off, ID: id, First: c.first}.appendLine(buf)
	}
	if len(ids) == 0 {
		buf = record{Base: c.base, Off: c.off, First: c.first}.appendLine(buf)
	}
	if err := teamdir.WriteFileAtomic(c.path, buf); err != nil {
		return fmt.Errorf("cursor: %w", err)
	}
	if c.f != nil {
		c.f.Close()
	}
	f, err := os.OpenFile(c.path, os.O_WRONLY|os.O_APPEND, teamdir.FileMode)
	if err != nil {
		return fmt.Errorf("cursor: %w", err)
	}
	c.f = f
	c.records = max(len(ids), 1)
	return nil
}

// ids returns the dedupe window, oldest first.
func (c *cursor) ids() []string {
	if len(c.recent) < c.keep {
		return append([]string(nil), c.recent...)
	}
	return append(append([]string(nil), c.recent[c.next:]...), c.recent[:c.next]...)
}

// close records a clean stop, unless the consumer is going away mid-crash.
func (c *cursor) close(clean bool) error {
	if c.f == nil {
		// Nothing recorded, no journal: which is what a clean stop at
		// the start says.
		return nil
	}
	var err error
	if clean {
		err = c.write(record{Base: c.base, Off: c.off, Clean: true, First: c.first})
	}
	if cerr := c.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// readBase returns the base offset recorded in member's cursor journal,
// reading only its tail (0 when there is no journal).
func readBase(j journalPaths) (int64, error) {
	r, err := j.readLast()
	return r.Base, err
}

// Committed returns the logical offset up to which member's consumer has
// handled its inbox: every line whose logical offset is below it is done.
// It reads only the tail of the cursor journal; 0 when there is none (a
// member nobody consumes, or one that never started).
func Committed(teamDir, member string) (int64, error) {
	j, err := journalOf(teamDir, member)
	if err != nil {
		return 0, fmt.Errorf("inbox: %w", err)
	}
	r, err := j.readLast()
	if err != nil {
		return 0, fmt.Errorf("inbox %s: cursor: %w", member, err)
	}
	return r.Base + r.Off, nil
}

// journalPaths are where a member's cursor journal is (cursors/<name>.cursor)
// and where it was before cursors/ (inbox/<name>.cursor): a team directory
// from before keeps its journals there until each consumer opens and moves
// its own (adoptLegacy).
type journalPaths struct {
	path, legacy string
}

func journalOf(teamDir, member string) (journalPaths, error) {
	p, err := teamdir.CursorPath(teamDir, member)
	if err != nil {
		return journalPaths{}, err
	}
	legacy, err := teamdir.LegacyCursorPath(teamDir, member)
	if err != nil {
		return journalPaths{}, err
	}
	return journalPaths{path: p, legacy: legacy}, nil
}

// readLast returns the last complete record of the journal that parses,
// from its tail (a zero record when there is none). A journal being moved
// while it reads (adoptLegacy renames it) is looked for again at its new
// name, so a reader never takes a move for an absent journal.
func (j journalPaths) readLast() (record, error) {
	r, ok, err := readLast(j.path)
	if ok || err != nil {
		return r, err
	}
	if r, ok, err = readLast(j.legacy); ok || err != nil {
		return r, err
	}
	r, _, err = readLast(j.path)
	return r, err
}

// adoptLegacy moves a journal from its legacy name to its name with one
// rename, so a crash at any instruction leaves it whole under one of the
// two names and the next open finds it: nothing handled is forgotten, and
// the records (the position, the dedupe window, whether the last run
// stopped cleanly) are the same as before the move. Journals under both
// names mean an older huddle ran after a move and started one of its own:
// only one consumer runs at a time (the runtime lock), so the one written
// last holds the position; it takes the name, the other goes, and note
// says which went (nil when none did).
func (j journalPaths) adoptLegacy() (note, err error) {
	old, err := os.Stat(j.legacy)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cursor: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(j.path), teamdir.DirMode); err != nil {
		return nil, fmt.Errorf("cursor: %w", err)
	}
	cur, err := os.Stat(j.path)
	switch {
	case os.IsNotExist(err), err == nil && old.ModTime().After(cur.ModTime()):
		if err == nil {
			note = fmt.Errorf("cursor journal %s replaced by %s, written after it", j.path, j.legacy)
		}
		step("journal-move")
		if err := os.Rename(j.legacy, j.path); err != nil {
			return nil, fmt.Errorf("cursor: %w", err)
		}
		step("journal-moved")
		return note, nil
	case err != nil:
		return nil, fmt.Errorf("cursor: %w", err)
	}
	if err := os.Remove(j.legacy); err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("cursor: %w", err)
	}
	return fmt.Errorf("cursor journal %s removed: %s was written after it", j.legacy, j.path), nil
}

// readLast returns the last complete record of a cursor journal that
// parses, reading only its tail (a zero record when there is none); ok is
// false when the file does not exist.
func readLast(path string) (r record, ok bool, err error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return record{}, false, nil
	}
	if err != nil {
		return record{}, false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return record{}, true, err
	}
	r, _, err = tailOf(f, st.Size())
	return r, true, err
}

// tailOf reads the last 4 KiB of a journal of size bytes and returns its
// last complete record that parses (a zero record when there is none) and
// where its last whole line ends.
func tailOf(f *os.File, size int64) (r record, end int64, err error) {
	const tail = 4 << 10
	start := max(size-tail, 0)
	buf := make([]byte, size-start)
	n, err := f.ReadAt(buf, start)
	if err != nil && err != io.EOF {
		return record{}, 0, err
	}
	buf = buf[:n]
	end = start + int64(bytes.LastIndexByte(buf, '\n')+1)
	r, _ = lastRecord(buf)
	return r, end, nil
}

// lastRecord is the last complete line of buf that parses as a record.
func lastRecord(buf []byte) (record, bool) {
	end := bytes.LastIndexByte(buf, '\n')
	for end > 0 {
		begin := bytes.LastIndexByte(buf[:end], '\n') + 1
		var r record
		if json.Unmarshal(buf[begin:end], &r) == nil && r.Base >= 0 && r.Off >= 0 {
			return r, true
		}
		end = begin - 1
	}
	return record{}, false
}

// journalTail keeps a cursor journal open and its last record, for a
// reader that asks for the base before every read of the inbox (an
// Observer): while the journal is unchanged that costs one fstat, and
// after the consumer's commits it reads only the records they appended,
// not the journal's tail again. A journal replaced (rewritten by temp and
// rename: the kept one has no link left) or shorter than what was read is
// opened again; one not at its name yet (none, or under its legacy name)
// is read as readBase reads it, each time.
type journalTail struct {
	f    *os.File
	end  int64 // where the last whole line read ends
	last record
}

// tailChunk is the most a journalTail reads of what was appended; past it,
// the journal's tail is read instead.
const tailChunk = 64 << 10

func (t *journalTail) base(j journalPaths) (int64, error) {
	if t.f != nil {
		var st syscall.Stat_t
		if err := syscall.Fstat(int(t.f.Fd()), &st); err == nil && st.Nlink > 0 && st.Size >= t.end && st.Size-t.end <= tailChunk {
			if st.Size == t.end {
				return t.last.Base, nil
			}
			buf := make([]byte, st.Size-t.end)
			n, err := t.f.ReadAt(buf, t.end)
			if err == nil || err == io.EOF {
				buf = buf[:n]
				if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
					if r, ok := lastRecord(buf[:i+1]); ok {
						t.last = r
					}
					t.end += int64(i + 1)
				}
				return t.last.Base, nil
			}
		}
		t.close()
	}
	f, err := os.Open(j.path)
	if err != nil {
		return readBase(j)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return 0, err
	}
	r, end, err := tailOf(f, st.Size())
	if err != nil {
		f.Close()
		return 0, err
	}
	t.f, t.end, t.last = f, end, r
	return r.Base, nil
}

func (t *journalTail) close() {
	if t.f != nil {
		t.f.Close()
		t.f = nil
	}
}
