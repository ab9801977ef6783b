package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/fsnotify/fsnotify"

	"huddle/llm"
	"huddle/protocol"
	"huddle/team"
	"huddle/teamdir"
)

func logsFlags(fs *flag.FlagSet) runFunc {
	transcript := fs.Bool("transcript", false, "print the member's llm transcript (members/NAME.transcript.jsonl) instead of its log")
	asJSON := fs.Bool("json", false, "with --transcript: print the raw JSON lines")
	follow := fs.Bool("f", false, "keep printing what is appended, until Ctrl-C")
	return func(cl *cmdline) int { return runLogs(cl, *transcript, *asJSON, *follow) }
}

func runLogs(cl *cmdline, transcript, asJSON, follow bool) int {
	if code, ok := cl.wantArgs(1, 1, "MEMBER"); !ok {
		return code
	}
	name := cl.args[0]
	if asJSON && !transcript {
		return cl.usageError("--json goes with --transcript")
	}
	t, err := team.Load(cl.dir)
	if err != nil {
		return cl.fail(err)
	}
	if err := protocol.ValidateMemberName(name); err != nil {
		return cl.usageError("%v", err)
	}
	if _, ok := t.Member(name); !ok {
		return cl.fail(fmt.Errorf("no member %q in team %s", name, t.Name))
	}
	path, err := teamdir.MemberLogPath(cl.dir, name)
	print := func(w io.Writer, line []byte) { _, _ = w.Write(line) }
	what := "log (an exec member's stderr)"
	if transcript {
		path, err = teamdir.TranscriptPath(cl.dir, name)
		what = "transcript (an llm member's turns)"
		print = printEntry
		if asJSON {
			print = func(w io.Writer, line []byte) { _, _ = w.Write(line) }
		}
	}
	if err != nil {
		return cl.fail(err)
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) && !follow {
		return cl.fail(fmt.Errorf("%s has no %s yet: %s", name, what, path))
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return cl.fail(err)
	}
	var off int64
	if f != nil {
		off, err = printLines(f, cl.stdout, print)
		f.Close()
		if err != nil {
			return cl.fail(err)
		}
	}
	if !follow {
		return exitOK
	}
	ctx, stop := signalContext()
	defer stop()
	if err := followFile(ctx, path, off, cl.stdout, print); err != nil {
		return cl.fail(err)
	}
	return exitOK
}

// printLines prints every whole line of r and returns the offset after the
// last one (a line still being written is left for later).
func printLines(r io.Reader, w io.Writer, print func(io.Writer, []byte)) (int64, error) {
	br := bufio.NewReader(r)
	var off int64
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			print(w, line)
			off += int64(len(line))
		}
		if errors.Is(err, io.EOF) {
			return off, nil
		}
		if err != nil {
			return off, err
		}
	}
}

// followFile prints the lines appended to path from off on, as they are
// written (fsnotify on its directory), until ctx ends.
func followFile(ctx context.Context, path string, off int64, w io.Writer, print func(io.Writer, []byte)) error {
	wt, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer wt.Close()
	if err := wt.Add(filepath.Dir(path)); err != nil {
		return err
	}
	readMore := func() error {
		f, err := os.Open(path)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		defer f.Close()
		if fi, err := f.Stat(); err == nil && fi.Size() < off {
			off = 0 // truncated or replaced: start again
		}
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			return err
		}
		n, err := printLines(f, w, print)
		off += n
		return err
	}
	if err := readMore(); err != nil { // what came between the first read and the watch
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-wt.Events:
			if !ok {
				return nil
			}
			if filepath.Clean(ev.Name) == filepath.Clean(path) {
				if err := readMore(); err != nil {
					return err
				}
			}
		case err, ok := <-wt.Errors:
			if !ok {
				return nil
			}
			return err
		}
	}
}

// printEntry prints one transcript line readably on one line: time, kind,
// the conversation when it is not the main one, then what the entry holds.
// A line that is not an entry is printed as it is, marked.
func printEntry(w io.Writer, line []byte) {
	var e llm.Entry
	if err := json.Unmarshal(bytes.TrimSpace(line), &e); err != nil {
		fmt.Fprintf(w, "(not an entry) %s\n", printable(string(bytes.TrimSpace(line))))
		return
	}
	var b strings.Builder
	b.WriteString(e.TS.Local().Format("15:04:05"))
	b.WriteString(" " + e.Kind)
	if e.Conv != "" && e.Conv != "main" {
		b.WriteString(" [" + e.Conv + "]")
	}
	if e.Turn > 0 {
		fmt.Fprintf(&b, " #%d", e.Turn)
	}
	if e.Tool != "" {
		b.WriteString(" " + e.Tool)
	}
	if len(e.Args) > 0 {
		var compact bytes.Buffer
		if json.Compact(&compact, e.Args) == nil {
			b.WriteString(" " + compact.String())
		}
	}
	if e.IsError {
		b.WriteString(" ERROR")
	}
	if e.Text != "" {
		sep := ": "
		if e.Kind == "tool_result" {
			sep = " → "
		}
		b.WriteString(sep + e.Text)
	}
	if e.Usage != nil {
		fmt.Fprintf(&b, " (tokens in %d, out %d)", e.Usage.In, e.Usage.Out)
	}
	if e.Duration > 0 {
		fmt.Fprintf(&b, " %dms", e.Duration)
	}
	fmt.Fprintln(w, printable(b.String()))
}

// printable is s on one line with no control characters: what a model
// writes must not move the terminal's cursor or change its colours.
func printable(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || r == '\r' {
			return ' '
		}
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return '?'
		}
		return r
	}, s)
	return strings.Join(strings.Fields(s), " ")
}
