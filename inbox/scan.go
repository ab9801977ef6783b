package inbox

import (
	"bufio"
	"errors"
	"io"
	"math"
	"sync"

	"huddle/protocol"
)

// line is one complete line found by scanLines.
type line struct {
	at       int64  // byte offset of the line's start in the file
	next     int64  // byte offset just past its newline
	text     []byte // without the newline; only the first 4 KiB when oversized
	oversize bool
}

// scanBufs are the buffers of one scanLines call. They come from a pool
// and go back when the call returns, so a consumer or observer holds none
// while idle (a 64 KiB read buffer for each of 1,000 idle teammates would
// be 64 MiB) and following an inbox still allocates next to nothing per
// message.
type scanBufs struct {
	r   *bufio.Reader
	acc []byte
}

var scanPool = sync.Pool{New: func() any { return &scanBufs{r: bufio.NewReaderSize(nil, 64<<10)} }}

// scanLines reads complete lines of f from off up to limit and calls fn for
// each. A trailing line without a newline is a write in progress: it is not
// passed on, and the returned offset stays at its start. A line longer than
// protocol.MaxLine is passed on as oversize once its newline arrives, without
// being held in memory. fn returning an error stops the scan.
func scanLines(f io.ReaderAt, off, limit int64, fn func(line) error) (int64, error) {
	next, _, err := scanLinesTo(f, off, limit, fn)
	return next, err
}

// toEnd as scanLinesTo's limit reads until f says io.EOF.
const toEnd = -1

// scanLinesTo is scanLines that also returns how far it read: with limit
// toEnd it reads until f returns io.EOF (a consumer that skipped the fstat
// of the file's size), and read is then where the file ended.
func scanLinesTo(f io.ReaderAt, off, limit int64, fn func(line) error) (next, read int64, err error) {
	if limit == toEnd {
		limit = math.MaxInt64
	}
	if off >= limit {
		return off, off, nil
	}
	s := scanPool.Get().(*scanBufs)
	s.r.Reset(io.NewSectionReader(f, off, limit-off))
	r, acc := s.r, s.acc[:0]
	defer func() {
		s.r.Reset(nil) // let go of the file
		if cap(acc) <= 64<<10 {
			s.acc = acc[:0] // keep small buffers only
		} else {
			s.acc = nil
		}
		scanPool.Put(s)
	}()
	start, pos := off, off
	oversize := false
	for {
		chunk, err := r.ReadSlice('\n')
		pos += int64(len(chunk))
		complete := err == nil
		if !oversize {
			if len(acc)+len(chunk) > protocol.MaxLine {
				oversize = true
				acc = append(acc, chunk[:min(len(chunk), max(maxRaw-len(acc), 0))]...)
			} else {
				acc = append(acc, chunk...)
			}
		}
		switch {
		case complete:
			l := line{at: start, next: pos, oversize: oversize}
			if oversize {
				l.text = acc[:min(len(acc), maxRaw)]
			} else {
				l.text = acc[:len(acc)-1]
			}
			if ferr := fn(l); ferr != nil {
				return start, pos, ferr
			}
			acc, start, oversize = acc[:0], pos, false
		case errors.Is(err, bufio.ErrBufferFull):
			// A long line: keep reading.
		case errors.Is(err, io.EOF):
			return start, pos, nil
		default:
			return start, pos, err
		}
	}
}
