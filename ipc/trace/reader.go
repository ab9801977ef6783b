package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"huddle/protocol"
	"huddle/teamdir"
)

// TraceReader follows a team's traces.jsonl by byte offset. It is used by
// one goroutine at a time.
type TraceReader struct {
	path     string
	off      int64       // byte offset of the next line to read
	file     os.FileInfo // the file read last, to notice a replacement
	skipped  int64
	restarts int64
	br       *bufio.Reader
	acc      []byte
}

// NewTraceReader follows teamDir/traces.jsonl from its first line.
func NewTraceReader(teamDir string) *TraceReader {
	return &TraceReader{path: teamdir.TracesPath(teamDir)}
}

// Skipped counts the lines that were not valid spans (bad JSON, failed
// validation, or over 1 MiB); each is skipped once.
func (r *TraceReader) Skipped() int64 { return r.skipped }

// Restarts counts how often the file shrank below the reader's offset or was
// replaced, so that the reader started again from its first line. A caller
// that folds spans starts its fold again when this grows.
func (r *TraceReader) Restarts() int64 { return r.restarts }

// Read returns the spans of the complete lines added since the last call.
// A trailing line without its newline is a write in progress: it is read
// when complete. A missing file reads as empty.
func (r *TraceReader) Read() ([]Span, error) {
	f, err := os.Open(r.path)
	if errors.Is(err, os.ErrNotExist) {
		if r.off > 0 {
			r.restart()
		}
		r.file = nil
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("traces: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("traces: %w", err)
	}
	if st.Size() < r.off || (r.file != nil && !os.SameFile(r.file, st)) {
		// Truncated or replaced by someone else: the new content from 0.
		r.restart()
	}
	r.file = st
	size := st.Size()
	if r.off >= size {
		return nil, nil
	}
	section := io.NewSectionReader(f, r.off, size-r.off)
	if r.br == nil {
		r.br = bufio.NewReaderSize(section, 64<<10)
	} else {
		r.br.Reset(section)
	}
	var spans []Span
	acc, lineLen, oversize := r.acc[:0], int64(0), false
	defer func() {
		if cap(acc) <= 64<<10 {
			r.acc = acc[:0] // keep small buffers only
		}
	}()
	for {
		chunk, err := r.br.ReadSlice('\n')
		lineLen += int64(len(chunk))
		if !oversize {
			if len(acc)+len(chunk) > protocol.MaxLine {
				oversize, acc = true, acc[:0]
			} else {
				acc = append(acc, chunk...)
			}
		}
		switch {
		case err == nil:
			r.off += lineLen
			if s, ok := r.parse(acc, oversize); ok {
				spans = append(spans, s)
			}
			acc, lineLen, oversize = acc[:0], 0, false
		case errors.Is(err, bufio.ErrBufferFull):
			// A long line: keep reading.
		case errors.Is(err, io.EOF):
			return spans, nil // a partial last line waits for its newline
		default:
			return spans, fmt.Errorf("traces: %w", err)
		}
	}
}

// parse decodes one complete line (with its newline); a blank line is
// ignored, anything else that is not a valid span is counted as skipped.
func (r *TraceReader) parse(line []byte, oversize bool) (Span, bool) {
	if oversize {
		r.skipped++
		return Span{}, false
	}
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return Span{}, false
	}
	var s Span
	if json.Unmarshal(line, &s) != nil || s.Validate() != nil {
		r.skipped++
		return Span{}, false
	}
	return s, true
}

func (r *TraceReader) restart() {
	r.off = 0
	r.restarts++
}
