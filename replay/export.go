package replay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"huddle/store"
	"huddle/team"
)

// Format and FormatVersion name an export: its first line says both.
const (
	Format        = "huddle-session"
	FormatVersion = 1
)

// header is the first line of an export.
type header struct {
	Format     string          `json:"format"`
	Version    int             `json:"version"`
	ExportedAt time.Time       `json:"exported_at"`
	Team       json.RawMessage `json:"team"`
	// Store is set on an export of a team kept in a store (Read): what
	// it leaves out. An optional field, so the version stays 1: a reader
	// of version 1 that does not know it ignores it, and an export
	// without it is a team directory's.
	Store *StoreSource `json:"store,omitempty"`
}

// Export writes tl as JSON lines: a header (format, version, the export
// time, team.json, and for a store's timeline what it leaves out), then
// one event per line, oldest first.
func Export(w io.Writer, tl *Timeline, now time.Time) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	h := header{Format: Format, Version: FormatVersion, ExportedAt: now.UTC(), Team: json.RawMessage(tl.TeamJSON), Store: tl.Store}
	if err := enc.Encode(h); err != nil {
		return fmt.Errorf("export: header: %w", err)
	}
	for i := range tl.Events {
		if err := enc.Encode(tl.Events[i]); err != nil {
			return fmt.Errorf("export: event %d: %w", i+1, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// maxExportLine bounds one line of an export: an event holds at most an
// inbox line (1 MiB) or a request record, with room for its escaping.
const maxExportLine = 8 << 20

// ReadExport reads an export written by Export. name is what errors call
// it. A file whose first line is not an export's header is refused whole;
// so is a line that is not a valid event, with its line number.
func ReadExport(r io.Reader, name string) (*Timeline, error) {
	br := bufio.NewReader(r)
	first, err := readLine(br)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var h header
	if json.Unmarshal(first, &h) != nil || h.Format != Format {
		return nil, fmt.Errorf("%s is not a huddle export (its first line is not a %q header)", name, Format)
	}
	if h.Version != FormatVersion {
		return nil, fmt.Errorf("%s is a %s of version %d; this huddle reads version %d", name, Format, h.Version, FormatVersion)
	}
	t, err := team.Parse(h.Team)
	if err != nil {
		return nil, fmt.Errorf("%s: header: %w", name, err)
	}
	tl := &Timeline{TeamJSON: []byte(h.Team), Team: t, Store: h.Store}
	for n := 2; ; n++ {
		line, err := readLine(br)
		if len(bytes.TrimSpace(line)) > 0 {
			var e Event
			if uerr := json.Unmarshal(line, &e); uerr != nil {
				return nil, fmt.Errorf("%s: line %d: %w", name, n, uerr)
			}
			tl.Events = append(tl.Events, e)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", name, n, err)
		}
	}
	sortEvents(tl.Events)
	return tl, nil
}

// readLine reads one line, without its newline, refusing one longer than
// maxExportLine.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxExportLine {
			return nil, fmt.Errorf("a line longer than %d bytes", maxExportLine)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSuffix(line, []byte("\n")), err
	}
}

// Open reads the timeline at path: a team directory, read through the
// store openDir opens on it (internal/cli picks the files store), or a
// file Export wrote.
func Open(ctx context.Context, path string, openDir func(dir string) (store.Store, error)) (*Timeline, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if info.IsDir() {
		st, err := openDir(path)
		if err != nil {
			return nil, err
		}
		defer st.Close()
		return Read(ctx, st, path)
	}
	return ReadExportFile(path)
}

// ReadExportFile reads the file Export wrote at path.
func ReadExportFile(path string) (*Timeline, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.Close()
	return ReadExport(f, path)
}
