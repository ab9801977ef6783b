package inbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"huddle/protocol"
	"huddle/teamdir"
)

// Delivery is one message handed to a handler.
type Delivery struct {
	Msg protocol.Message
	// Offset is the line's logical offset in the member's inbox: it never
	// goes back, across compactions.
	Offset int64
	// Redelivery marks the first message after a crash: the previous run may
	// have handled it already without committing. Handlers stay idempotent.
	Redelivery bool
}

// Handler handles one delivery. An error is retried a few times, then the
// line is dead-lettered with the error, so one bad message cannot stall an
// inbox.
type Handler func(ctx context.Context, d Delivery) error

// Options tune consumers, observers and the watcher. Zero values take the
// defaults.
type Options struct {
	// Rescan, when above zero, drains every followed inbox that often
	// besides on events. The default (zero) is none: inotify loses an
	// event only by overflowing, which the watcher hears and answers by
	// draining everything. Set it on a file system whose changes made by
	// other machines inotify never reports (NFS, CIFS/SMB, FUSE mounts such
	// as sshfs, 9p), where only a rescan sees them.
	Rescan    time.Duration
	CompactAt int64 // compact a fully consumed inbox at this size; default 256 KiB
	Keep      int   // dedupe window: ids remembered; default 1024
	Retries   int   // handler attempts before dead-lettering; default 3
	// Warn is told what a consumer recovered from on its own but a person
	// should know about (a damaged cursor journal). The team runtime turns
	// it into an event; nil logs it with log/slog.
	Warn func(member string, err error)
}

func (o Options) withDefaults() Options {
	if o.CompactAt <= 0 {
		o.CompactAt = 256 << 10
	}
	if o.Keep <= 0 {
		o.Keep = 1024
	}
	if o.Retries <= 0 {
		o.Retries = 3
	}
	return o
}

// Consumer reads one member's inbox from its committed cursor, hands each
// valid message to its handler once, commits after each, dead-letters bad
// lines and compacts the file once everything in it is consumed. A consumer
// is used by one goroutine at a time.
type Consumer struct {
	teamDir, member string
	path, source    string
	prevPath        string // the prev file
	h               Handler
	opts            Options
	cur             *cursor
	firstAfterCrash bool
	// redeliverBelow marks every line below this logical offset as a
	// redelivery: what was in the inbox when a damaged journal was opened.
	redeliverBelow int64
	// commitFailing is set while cursor commits fail (a full disk): the
	// failure is said once, and so is its end.
	commitFailing bool
	delivered     int64
	// f is the inbox file, kept open between drains (nil until it exists);
	// drain checks it is still the file at the path (inboxFile).
	f *os.File
	// anchorBuf is scratch space for anchor checks, from anchorPool for the
	// length of one drain.
	anchorBuf []byte
	// pending is the previous generation a compaction wrote before a
	// writer got in first, kept for the next try (compact); nil mostly.
	pending *pendingPrev
	// prevCopied counts the inbox bytes copied into previous generations.
	prevCopied int64
}

// anchorPool holds the anchor checks' scratch space between drains, so an
// idle consumer holds none.
var anchorPool = sync.Pool{New: func() any { return new(make([]byte, anchorWindow)) }}

// NewConsumer opens member's cursor under teamDir. Close it when done.
func NewConsumer(teamDir, member string, h Handler, opts Options) (*Consumer, error) {
	p, err := path(teamDir, member)
	if err != nil {
		return nil, err
	}
	journal, prevPath, err := companions(teamDir, member)
	if err != nil {
		return nil, err
	}
	for _, d := range []string{teamdir.InboxDirPath(teamDir), teamdir.CursorsDirPath(teamDir)} {
		if err := os.MkdirAll(d, teamdir.DirMode); err != nil {
			return nil, fmt.Errorf("inbox: %w", err)
		}
	}
	opts = opts.withDefaults()
	moved, err := journal.adoptLegacy()
	if err != nil {
		return nil, fmt.Errorf("inbox %s: %w", member, err)
	}
	cur, err := openCursor(journal.path, opts.Keep)
	if err != nil {
		return nil, fmt.Errorf("inbox %s: %w", member, err)
	}
	c := &Consumer{
		teamDir: teamDir, member: member, path: p, prevPath: prevPath,
		source: teamdir.InboxRel(member),
		h:      h, opts: opts, cur: cur, firstAfterCrash: !cur.startedClean,
	}
	if moved != nil {
		c.warn(moved)
	}
	if cur.damaged != nil {
		if err := c.recoverDamagedJournal(); err != nil {
			cur.close(false)
			return nil, fmt.Errorf("inbox %s: %w", member, err)
		}
	}
	return c, nil
}

// recoverDamagedJournal treats a journal that could not be read whole as a
// crash: whatever is in the inbox now may have been handled already, so it
// is all delivered again marked as a redelivery, and Warn is told. With no
// record left, logical offsets go on from the end of the kept generations,
// so that ids derived from them are not reused.
func (c *Consumer) recoverDamagedJournal() error {
	if c.cur.records == 0 {
		if prev, ok := openPrev(c.prevPath); ok {
			end := prev.end()
			prev.Close()
			if err := c.cur.rebase(end); err != nil {
				return err
			}
		}
	}
	var size int64
	if st, err := os.Stat(c.path); err == nil {
		size = st.Size()
	}
	c.redeliverBelow = c.cur.base + size
	c.warn(c.cur.damaged)
	return nil
}

func (c *Consumer) warn(err error) {
	if c.opts.Warn != nil {
		c.opts.Warn(c.member, err)
		return
	}
	slog.Warn("inbox", "member", c.member, "warning", err.Error())
}

// companions are the cursor journal and the prev file of member's inbox.
func companions(teamDir, member string) (journal journalPaths, prevPath string, err error) {
	if journal, err = journalOf(teamDir, member); err != nil {
		return journalPaths{}, "", fmt.Errorf("inbox: %w", err)
	}
	if prevPath, err = teamdir.PrevPath(teamDir, member); err != nil {
		return journalPaths{}, "", fmt.Errorf("inbox: %w", err)
	}
	return journal, prevPath, nil
}

// prevGenerations is about how many compacted generations the prev file keeps.
const prevGenerations = 4

// prevFile is an open prev file: a one-line header {"prev_base":N} and then
// content whose first byte has logical offset base.
type prevFile struct {
	f       *os.File
	hdrLen  int64
	base, n int64
}

// openPrev opens a prev file and reads its header; ok is false when there is
// none or it is not one.
func openPrev(path string) (p prevFile, ok bool) {
	f, err := teamdir.OpenRead(path, os.O_RDONLY)
	if err != nil {
		return prevFile{}, false
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return prevFile{}, false
	}
	head := make([]byte, 64)
	n, _ := f.ReadAt(head, 0) // a short file reads short
	head = head[:n]
	nl := bytes.IndexByte(head, '\n')
	var hdr struct {
		PrevBase *int64 `json:"prev_base"`
	}
	if nl < 0 || json.Unmarshal(head[:nl], &hdr) != nil || hdr.PrevBase == nil {
		f.Close()
		return prevFile{}, false
	}
	hdrLen := int64(nl + 1)
	return prevFile{f: f, hdrLen: hdrLen, base: *hdr.PrevBase, n: st.Size() - hdrLen}, true
}

// end is the logical offset just past the content.
func (p prevFile) end() int64 { return p.base + p.n }

// content reads the content by offsets relative to its first byte.
func (p prevFile) content() io.ReaderAt { return io.NewSectionReader(p.f, p.hdrLen, p.n) }

func (p prevFile) Close() error { return p.f.Close() }

// Delivered counts the messages handed to the handler by this consumer.
func (c *Consumer) Delivered() int64 { return c.delivered }

// Close records a clean stop.
func (c *Consumer) Close() error {
	c.dropPending()
	err := c.cur.close(true)
	if c.f != nil {
		c.f.Close()
		c.f = nil
	}
	return err
}

// Abandon lets the consumer's files go without recording a clean stop: the
// journal is left as a crash would leave it, so the next consumer hands
// out the message in flight again, marked Redelivery. For a stop that
// interrupted a handler, where Close's clean record would say the message
// was never handed out.
func (c *Consumer) Abandon() error {
	c.dropPending()
	err := c.cur.close(false)
	if c.f != nil {
		c.f.Close()
		c.f = nil
	}
	return err
}

// Drain handles every complete line from the cursor to the end of the file,
// then compacts the file if it is fully consumed and large enough.
func (c *Consumer) Drain(ctx context.Context) error { return c.drain(ctx, true) }

// DrainWritten is Drain after the file the consumer holds was only
// written to: it does not check by path that the name still points to
// that file (its watcher says when the name was created, removed or
// renamed, and calls Drain then). A file unlinked is seen all the same.
func (c *Consumer) DrainWritten(ctx context.Context) error { return c.drain(ctx, false) }

// drain is Drain; verify asks it to check by path that the kept inbox file
// is still the one the name points to (the watcher asks when the name was
// created, removed or renamed, or when events were lost; a file unlinked is
// seen without asking).
func (c *Consumer) drain(ctx context.Context, verify bool) error {
	f, st, err := c.inboxFile(verify)
	if err != nil {
		return fmt.Errorf("inbox %s: %w", c.member, err)
	}
	if f == nil {
		return nil
	}
	buf := anchorPool.Get().(*[]byte)
	c.anchorBuf = *buf
	defer func() { c.anchorBuf = nil; anchorPool.Put(buf) }()
	// Lines that land while the consumer catches up would make the
	// compaction back off, and a truncation by someone else ends a pass
	// early; a couple more passes give them their chance.
	replaced := false
	for pass := 0; pass < 3; pass++ {
		// A pass without a stat (st nil: inboxFile skipped it) reads to the
		// end; its read, checked against the anchor, says where the file
		// ends. One that reads nothing falls back on a stat'd pass, which
		// tells a file cut below the offset or replaced by one exactly as
		// long from one with nothing new.
		limit, from := int64(toEnd), c.cur.off
		if pass > 0 {
			if st, err = f.Stat(); err != nil {
				return fmt.Errorf("inbox %s: %w", c.member, err)
			}
		}
		if st != nil {
			if limit, err = c.sameFile(f, st.Size(), replaced); err != nil {
				return fmt.Errorf("inbox %s: %w", c.member, err)
			}
		}
		off, size, err := scanLinesTo(checkedFile{f, c}, c.cur.off, limit, func(l line) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			if l.at == 0 {
				c.cur.first = new(anchorOf(l))
			}
			return c.handle(ctx, l)
		})
		replaced = errors.Is(err, errReplaced)
		switch {
		case replaced:
			continue // the next pass rebases and starts over in the new content
		case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
			return nil
		case err != nil:
			return fmt.Errorf("inbox %s: %w", c.member, err)
		case limit == toEnd && size == from:
			continue // read nothing without a stat: look with one
		}
		if off != size || size < c.opts.CompactAt {
			return nil
		}
		if done, err := c.compact(f); err != nil || done {
			return err
		}
	}
	return nil
}

// inboxFile returns the inbox file, kept open between drains, and its
// stat; nil when there is none yet. Keeping it open saves an open and a
// close per wake-up; it stays right across appends and truncations in
// place (a compaction, a foreign reader), and is opened again when it lost
// its name (unlinked, or replaced by a rename: no link left) or, when
// verify is set, when the path names another file.
//
// A wake-up by a write to the inbox (verify unset) to a consumer whose
// offset is anchored takes no stat: the kept file is returned with a nil
// stat and the drain reads to the end. The name's changes do not go
// unseen: an unlink, a rename over the name and lost events all wake the
// consumer with verify set (Watcher).
func (c *Consumer) inboxFile(verify bool) (*os.File, os.FileInfo, error) {
	if c.f != nil && !verify && c.cur.off > 0 && c.cur.first != nil {
		return c.f, nil, nil
	}
	if c.f != nil {
		st, err := c.f.Stat()
		if err != nil {
			return nil, nil, err
		}
		if linked(st) && (!verify || c.isAtPath(st)) {
			return c.f, st, nil
		}
		c.f.Close()
		c.f = nil
	}
	f, err := teamdir.OpenRead(c.path, os.O_RDWR)
	if os.IsNotExist(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	c.f = f
	return f, st, nil
}

// isAtPath reports whether the inbox's path names the file of st.
func (c *Consumer) isAtPath(st os.FileInfo) bool {
	at, err := os.Stat(c.path)
	return err == nil && os.SameFile(at, st)
}

// linked reports whether a file still has a name.
func linked(st os.FileInfo) bool {
	sys, ok := st.Sys().(*syscall.Stat_t)
	return !ok || sys.Nlink > 0
}

// errReplaced says the inbox file no longer starts with the line it
// started with when the committed offset was counted.
var errReplaced = errors.New("inbox file truncated by another process")

// sameFile returns the size of the inbox file, after checking that the
// committed offset still counts in it. A file shorter than the offset, or
// one whose first line is not the anchored one, was truncated or replaced by
// someone else (a foreign reader that drains by truncating, or this
// consumer's own compaction cut off by a crash before its rebase), however
// much was appended since: the consumer starts again from 0 of the new
// content, with logical offsets that keep growing.
//
// When the file is longer than the offset the anchor is checked by the
// read that follows (checkedFile), which saves a pread per wake-up; a
// failed check there ends the pass with errReplaced, and the next pass
// calls this with recheck set. With nothing past the offset there is no
// read, so the anchor is checked here: a file replaced by one exactly as
// long would otherwise go unread.
func (c *Consumer) sameFile(f *os.File, size int64, recheck bool) (int64, error) {
	if c.cur.off == 0 {
		// Nothing of this file is committed: read from 0, where its first
		// line is anchored afresh (an anchor left by a pass that committed
		// nothing may be of a file since replaced).
		c.cur.first = nil
		return size, nil
	}
	same := size >= c.cur.off
	if same && c.cur.first != nil && (recheck || size == c.cur.off) {
		var err error
		if same, err = c.cur.first.holds(f, c.anchorBuf); err != nil {
			return 0, err
		}
	}
	if !same {
		if err := c.cur.rebase(c.cur.base + c.cur.off); err != nil {
			return 0, err
		}
		return size, nil
	}
	if c.cur.first == nil {
		// A journal from before anchors: trust the file as it is now.
		c.cur.first = c.firstLine(f)
	}
	return size, nil
}

// firstLine fingerprints the first line of f when it ends within the anchor
// window (nil otherwise: such a file goes unchecked until its next rebase).
func (c *Consumer) firstLine(f *os.File) *anchor {
	n, _ := f.ReadAt(c.anchorBuf, 0) // a short file reads short
	i := bytes.IndexByte(c.anchorBuf[:n], '\n')
	if i < 0 {
		return nil
	}
	return new(anchorOf(line{at: 0, next: int64(i + 1), text: c.anchorBuf[:i]}))
}

// checkedFile reads the inbox file for scanLines and checks, after each
// read, that the file still starts with its anchored line: a truncation and
// a burst of appends between two reads would otherwise hand on a read of the
// new content at the old offset. What a read returned before the check held
// was in the file before any truncation.
type checkedFile struct {
	f *os.File
	c *Consumer
}

func (r checkedFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := preadOnce(r.f, p, off)
	if first := r.c.cur.first; first != nil && n > 0 {
		ok, cerr := first.holds(r.f, r.c.anchorBuf)
		if cerr != nil {
			return 0, cerr
		}
		if !ok {
			return 0, errReplaced
		}
	}
	return n, err
}

// preadOnce reads p at off with one pread(2). A regular file reads short
// only at its end, so a short read says io.EOF at once rather than after a
// second read that returns nothing (what os.File.ReadAt does): a drain
// that reads to the end costs one read. Should a file system read short
// before the end, the rest is read at the next wake-up.
func preadOnce(f *os.File, p []byte, off int64) (int, error) {
	for {
		n, err := syscall.Pread(int(f.Fd()), p, off)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return 0, &os.PathError{Op: "read", Path: f.Name(), Err: err}
		case n < len(p):
			return n, io.EOF
		}
		return n, nil
	}
}

func (c *Consumer) handle(ctx context.Context, l line) error {
	logical := c.cur.base + l.at
	if l.oversize {
		return c.reject(l, logical, "line exceeds 1 MiB")
	}
	msg, err := protocol.Decode(l.text, protocol.Fallback{To: c.member, ID: derivedID(c.member, logical)})
	if err != nil {
		return c.reject(l, logical, err.Error())
	}
	if msg.To != c.member {
		return c.reject(l, logical, fmt.Sprintf("message to %q found in the inbox of %q", msg.To, c.member))
	}
	if c.cur.has(msg.ID) {
		// A true duplicate: the same id appended twice.
		return c.cur.commit(l.next, "")
	}
	d := Delivery{Msg: msg, Offset: logical, Redelivery: c.firstAfterCrash || logical < c.redeliverBelow}
	c.firstAfterCrash = false
	var herr error
	for attempt := range c.opts.Retries {
		if herr = c.h(ctx, d); herr == nil {
			break
		}
		if ctx.Err() != nil {
			return ctx.Err() // not handled; the next run delivers it again
		}
		if attempt < c.opts.Retries-1 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(10<<attempt) * time.Millisecond):
			}
		}
	}
	if herr != nil {
		return c.reject(l, logical, "handler: "+herr.Error())
	}
	c.delivered++
	return c.commitHandled(l, msg.ID)
}

// commitHandled commits past a line its handler took. When the commit
// fails (a full disk), the line will be handed again, so it is marked a
// redelivery then, and the failure is said once until a commit works: the
// caller retries the drain with backoff.
func (c *Consumer) commitHandled(l line, id string) error {
	err := c.cur.commit(l.next, id)
	if err != nil {
		c.redeliverBelow = max(c.redeliverBelow, c.cur.base+l.next)
		if !c.commitFailing {
			c.commitFailing = true
			c.warn(fmt.Errorf("committing the cursor after %s failed; it is handed again, marked a redelivery, until a commit works: %w", id, err))
		}
		return err
	}
	if c.commitFailing {
		c.commitFailing = false
		c.warn(errors.New("cursor commits work again"))
	}
	return nil
}

func (c *Consumer) reject(l line, logical int64, reason string) error {
	if err := WriteDeadLetter(c.teamDir, c.source, logical, reason, l.text); err != nil {
		return fmt.Errorf("dead letter: %w", err)
	}
	return c.cur.commit(l.next, "")
}

// derivedID names a line that came without an id by its inbox and offset.
func derivedID(member string, logical int64) string {
	id := "x" + strconv.FormatInt(logical, 10) + "-" + member
	return id[:min(len(id), 64)]
}

// compact empties a fully consumed inbox under its lock. The consumed
// content is kept as the previous generation, so a lagging observer can
// still read it; the cursor records the new base so logical offsets keep
// growing.
//
// It returns false when the file was left as it was: a writer got in
// first, or the file is no longer the one consumed.
//
// The consumed prefix never changes, so the new previous generation is
// written before taking the lock; writers wait only for a rename and a
// truncate. A compaction a writer got in first keeps what it wrote
// (c.pending): the next attempt copies only the lines consumed since. A
// writer that appends right after each delivery would otherwise win every
// race against a copy of the whole inbox, and each delivery would pay for
// one (docs/ARCHITECTURE.md, "Delivery"; docs/PERFORMANCE.md has the figures).
func (c *Consumer) compact(f *os.File) (done bool, err error) {
	size := c.cur.off
	p, err := c.prevUpTo(f, size)
	if err != nil {
		c.dropPending()
		return false, fmt.Errorf("inbox %s: compact: %w", c.member, err)
	}
	step("prev-written")

	if err := teamdir.LockExclusive(f); err != nil {
		return false, fmt.Errorf("inbox %s: compact: %w", c.member, err)
	}
	defer teamdir.Unlock(f)
	st, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("inbox %s: compact: %w", c.member, err)
	}
	if st.Size() != size {
		return false, nil // a writer got in first; p waits for the next try
	}
	if c.cur.first != nil {
		// Someone may have truncated it and written as much again.
		if same, err := c.cur.first.holds(f, c.anchorBuf); err != nil || !same {
			c.dropPending()
			return false, err
		}
	}
	c.pending = nil
	err = p.tmp.Close()
	if err == nil {
		err = os.Rename(p.tmp.Name(), c.prevPath)
	}
	if err != nil {
		os.Remove(p.tmp.Name())
		return false, fmt.Errorf("inbox %s: compact: %w", c.member, err)
	}
	step("prev-renamed")
	// Truncate before recording the new base: after a crash in between the
	// file no longer starts with the anchored line, which rebases to the
	// same place however much was appended since (sameFile).
	if err := f.Truncate(0); err != nil {
		return false, fmt.Errorf("inbox %s: compact: %w", c.member, err)
	}
	step("truncated")
	if err := c.cur.rebase(c.cur.base + size); err != nil {
		return false, err
	}
	step("rebased")
	return true, nil
}

// pendingPrev is a previous generation being written: the header, what is
// kept of the old one, and the inbox file's first covered bytes, all
// consumed. It belongs to one inbox file, counted from one base and
// anchored at one first line; any of them changing makes it useless.
type pendingPrev struct {
	tmp     *os.File
	inbox   *os.File
	first   *anchor
	base    int64
	covered int64
}

// prevUpTo returns the pending previous generation extended to the inbox
// file's first size bytes, starting one when there is none or the one
// there no longer fits (another file, another base or anchor, its temp
// file swept away).
func (c *Consumer) prevUpTo(f *os.File, size int64) (*pendingPrev, error) {
	p := c.pending
	if p != nil && (p.inbox != f || p.first != c.cur.first || p.base != c.cur.base || p.covered > size || !stillLinked(p.tmp)) {
		c.dropPending()
		p = nil
	}
	if p == nil {
		tmp, err := teamdir.CreateTemp(c.prevPath)
		if err != nil {
			return nil, err
		}
		p = &pendingPrev{tmp: tmp, inbox: f, first: c.cur.first, base: c.cur.base}
		c.pending = p
		if err := c.writePrevHead(tmp, size); err != nil {
			return nil, err
		}
	}
	if p.covered == size {
		return p, nil
	}
	// Copies go file to file (copy_file_range), without holding the data
	// in memory.
	if _, err := f.Seek(p.covered, io.SeekStart); err != nil {
		return nil, err
	}
	n, err := io.CopyN(p.tmp, f, size-p.covered)
	c.prevCopied += n
	if err != nil {
		return nil, err
	}
	p.covered = size
	return p, nil
}

// stillLinked reports whether f still has a name (a temp file left
// pending long enough may have been swept).
func stillLinked(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && linked(st)
}

// dropPending removes a pending previous generation.
func (c *Consumer) dropPending() {
	if p := c.pending; p != nil {
		c.pending = nil
		p.tmp.Close()
		os.Remove(p.tmp.Name())
	}
}

// stepHook, when a test sets it, runs at each step of a compaction and of a
// journal's move out of inbox/, so a test process can die at exactly that
// point. Nil outside tests.
var stepHook func(step string)

func step(name string) {
	if stepHook != nil {
		stepHook(name)
	}
}

// writePrevHead writes the start of the new previous generations to w: a
// header with the logical offset of their first byte, then the tail of the
// old ones (a rolling window, so an observer that lags by a few
// generations still reads every line); the consumed content of the inbox
// follows (prevUpTo). No fsync: they only serve observers that lag.
func (c *Consumer) writePrevHead(w *os.File, size int64) error {
	prevBase := c.cur.base
	var oldStart, oldLen int64
	old, ok := openPrev(c.prevPath)
	if ok {
		defer old.Close()
	}
	if ok && old.end() == c.cur.base {
		keep := int64(prevGenerations-1) * max(c.opts.CompactAt, size)
		cut := max(old.n-keep, 0)
		if cut > 0 {
			// Cut at a line boundary.
			skip, err := skipLine(io.NewSectionReader(old.content(), cut, old.n-cut))
			if err != nil {
				return err
			}
			cut += skip
		}
		prevBase, oldStart, oldLen = old.base+cut, old.hdrLen+cut, old.n-cut
	}
	if _, err := fmt.Fprintf(w, "{\"prev_base\":%d}\n", prevBase); err != nil {
		return err
	}
	if oldLen > 0 {
		if _, err := old.f.Seek(oldStart, io.SeekStart); err != nil {
			return err
		}
		if _, err := io.CopyN(w, old.f, oldLen); err != nil {
			return err
		}
	}
	return nil
}

// skipLine returns how many bytes up to and including the first newline.
func skipLine(r io.Reader) (int64, error) {
	br := bufio.NewReaderSize(r, 4<<10)
	var n int64
	for {
		chunk, err := br.ReadSlice('\n')
		n += int64(len(chunk))
		if err == nil {
			return n, nil
		}
		if err != bufio.ErrBufferFull {
			return n, nil // no newline: the whole rest goes
		}
	}
}
