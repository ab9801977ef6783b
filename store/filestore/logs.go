package filestore

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"huddle/protocol"
	"huddle/store"
	"huddle/teamdir"
)

// A member's log and transcript are the team directory's own files,
// members/<member>.log and members/<member>.transcript.jsonl.

func (s *Store) logPath(member string, kind store.LogKind) (string, error) {
	if err := protocol.ValidateName(member); err != nil {
		return "", err
	}
	switch kind {
	case store.LogStderr:
		return teamdir.MemberLogPath(s.dir, member)
	case store.LogTranscript:
		return teamdir.TranscriptPath(s.dir, member)
	}
	return "", fmt.Errorf("log of %s: no kind %q", member, kind)
}

// AppendLog appends the lines to the member's file, in one write.
func (s *Store) AppendLog(ctx context.Context, member string, kind store.LogKind, lines [][]byte) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	p, err := s.logPath(member, kind)
	if err != nil {
		return err
	}
	var all []byte
	for _, l := range lines {
		all = append(all, store.CutLogLine(l)...)
	}
	if len(all) == 0 {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), teamdir.DirMode); err != nil {
		return fmt.Errorf("log of %s: %w", member, err)
	}
	return teamdir.AppendLine(p, all)
}

// ReadLog reads the member's file, and with follow goes on as it grows,
// woken by fsnotify.
func (s *Store) ReadLog(ctx context.Context, member string, kind store.LogKind, follow bool, fn func(line []byte)) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	p, err := s.logPath(member, kind)
	if err != nil {
		return err
	}
	var off int64
	drain := func(context.Context) error {
		var err error
		off, err = readLinesFrom(p, off, fn)
		return err
	}
	if !follow {
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("log of %s: %w", member, store.ErrNotFound)
		}
		return drain(ctx)
	}
	if err := os.MkdirAll(filepath.Dir(p), teamdir.DirMode); err != nil {
		return fmt.Errorf("log of %s: %w", member, err)
	}
	sub, err := s.follow(ctx, filepath.Dir(p), filepath.Base(p), drainFunc(drain), 0)
	if err != nil {
		return err
	}
	<-ctx.Done()
	return sub.Stop()
}

// readLinesFrom calls fn with each whole line of path from off on and
// returns the offset after the last: a line still being written waits for
// the next read. A file shorter than off was replaced: read from its start.
func readLinesFrom(path string, off int64, fn func([]byte)) (int64, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return off, nil
	}
	if err != nil {
		return off, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() < off {
		off = 0
	}
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return off, err
	}
	br := bufio.NewReader(f)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			fn(line)
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
