package inbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"

	"huddle/protocol"
	"huddle/teamdir"
)

// Observer follows a member's inbox read-only: it sees every valid line,
// consumed or not, and follows the file across compactions by logical
// offset, reading the previous generation when it lags behind one. It never
// writes, commits or dead-letters.
type Observer struct {
	teamDir, member string
	path            string
	journal         journalPaths // the consumer's cursor journal
	prevPath        string       // the consumer's prev file
	pos             int64        // logical offset of the next line to read
	fn              func(Delivery)
	gaps            atomic.Int64
	tail            journalTail // the journal kept open between reads
}

// NewObserver follows member's inbox under teamDir, from the oldest line
// still on disk when fromStart is set, otherwise from the current end.
func NewObserver(teamDir, member string, fromStart bool, fn func(Delivery)) (*Observer, error) {
	p, err := path(teamDir, member)
	if err != nil {
		return nil, err
	}
	journal, prevPath, err := companions(teamDir, member)
	if err != nil {
		return nil, err
	}
	o := &Observer{teamDir: teamDir, member: member, path: p, journal: journal, prevPath: prevPath, fn: fn}
	base, err := readBase(journal)
	if err != nil {
		return nil, fmt.Errorf("inbox %s: %w", member, err)
	}
	switch {
	case fromStart:
		o.pos = base
		if prev, ok := openPrev(prevPath); ok {
			if prev.end() == base {
				o.pos = prev.base
			}
			prev.Close()
		}
	default:
		o.pos = base
		if st, err := os.Stat(p); err == nil {
			o.pos += st.Size()
		}
	}
	return o, nil
}

// Close lets go of the cursor journal the observer keeps open.
func (o *Observer) Close() error {
	o.tail.close()
	return nil
}

// Names lists the inboxes under teamDir that have a file, sorted: the
// names valid as a member's (a file of another name is no inbox).
func Names(teamDir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(teamdir.InboxDirPath(teamDir), "*.jsonl"))
	if err != nil {
		return nil, fmt.Errorf("inbox: %w", err)
	}
	var names []string
	for _, f := range files {
		if name := strings.TrimSuffix(filepath.Base(f), ".jsonl"); protocol.ValidateName(name) == nil {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// ReadAll hands fn every message member's inbox holds now, consumed or
// not, oldest first, from the previous generation on: what a read-only
// observer started from the start reads, once.
func ReadAll(teamDir, member string, fn func(Delivery)) error {
	o, err := NewObserver(teamDir, member, true, fn)
	if err != nil {
		return err
	}
	defer o.Close()
	return o.Drain()
}

// Unread counts the messages in member's inbox its consumer has not
// committed: the valid lines at or past Committed. It reads from there,
// not from the oldest line kept, so what it costs grows with what is
// unread, not with the previous generations.
func Unread(teamDir, member string) (int, error) {
	committed, err := Committed(teamDir, member)
	if err != nil {
		return 0, err
	}
	n := 0
	o, err := NewObserver(teamDir, member, false, func(Delivery) { n++ })
	if err != nil {
		return 0, err
	}
	defer o.Close()
	o.pos = committed
	if err := o.Drain(); err != nil {
		return 0, err
	}
	return n, nil
}

// Gaps reports how many bytes went by unseen because the observer lagged
// further behind the consumer than the kept generations reach.
func (o *Observer) Gaps() int64 { return o.gaps.Load() }

// maxBatch bounds what one Drain holds in memory and under the shared lock.
const maxBatch = 4 << 20

// Drain delivers every complete line past the observer's position. It reads
// under a shared lock so that a compaction (which holds the exclusive lock)
// is seen either wholly before or wholly after.
func (o *Observer) Drain() error {
	for {
		batch, more, err := o.read()
		if err != nil {
			return fmt.Errorf("inbox %s: observe: %w", o.member, err)
		}
		for _, d := range batch {
			o.fn(d)
		}
		if !more {
			return nil
		}
	}
}

func (o *Observer) read() (batch []Delivery, more bool, err error) {
	f, err := teamdir.OpenRead(o.path, os.O_RDONLY)
	if os.IsNotExist(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	if err := teamdir.LockShared(f); err != nil {
		return nil, false, err
	}
	defer teamdir.Unlock(f)
	base, err := o.tail.base(o.journal)
	if err != nil {
		return nil, false, err
	}
	st, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	size := st.Size()
	var bytesRead int64
	collect := func(lineBase int64) func(l line) error {
		return func(l line) error {
			if l.oversize {
				return nil
			}
			logical := lineBase + l.at
			msg, err := protocol.Decode(l.text, protocol.Fallback{To: o.member, ID: derivedID(o.member, logical)})
			if err == nil && msg.To == o.member {
				batch = append(batch, Delivery{Msg: msg, Offset: logical})
			}
			bytesRead += l.next - l.at
			if bytesRead >= maxBatch {
				more = true
				return errBatchFull
			}
			return nil
		}
	}
	if o.pos < base {
		if err := o.readPrev(base, collect); err != nil && err != errBatchFull {
			return nil, false, err
		}
		if more {
			return batch, true, nil
		}
	}
	phys := o.pos - base
	if phys > size {
		// Truncated by someone else: start again from 0 of the new content.
		phys, o.pos = 0, base
	}
	end, err := scanLines(f, phys, size, collect(base))
	if err != nil && err != errBatchFull {
		return nil, false, err
	}
	o.pos = base + end
	return batch, more, nil
}

var errBatchFull = errors.New("batch full")

// readPrev reads what the observer missed from the previous generations, or
// counts a gap when it lagged further than they reach.
func (o *Observer) readPrev(base int64, collect func(int64) func(line) error) error {
	p, ok := openPrev(o.prevPath)
	if !ok {
		o.gaps.Add(base - o.pos)
		o.pos = base
		return nil
	}
	defer p.Close()
	if p.end() != base {
		o.gaps.Add(base - o.pos)
		o.pos = base
		return nil
	}
	if o.pos < p.base {
		o.gaps.Add(p.base - o.pos)
		o.pos = p.base
	}
	end, err := scanLines(p.content(), o.pos-p.base, p.n, collect(p.base))
	o.pos = p.base + end
	return err
}
