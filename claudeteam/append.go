package claudeteam

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"huddle/teamdir"
)

// appendEntry appends e to the inbox at path as Claude Code's writers do:
// under the inbox lock, read the array, add one element, write it back.
// Every byte already in the file stays as it is (the element is spliced
// before the closing bracket, nothing is re-encoded), and the file is
// replaced by a rename, so no reader ever sees it half written.
func appendEntry(ctx context.Context, path string, e Entry) error {
	if _, err := os.Stat(filepath.Dir(path)); err != nil {
		return fmt.Errorf("inbox %s: %w", path, err)
	}
	l, err := lockInbox(ctx, path, lockWait)
	if err != nil {
		return err
	}
	werr := spliceInto(path, e, l)
	if uerr := l.unlock(); werr == nil {
		werr = uerr
	}
	return werr
}

func spliceInto(path string, e Entry, l *inboxLock) error {
	old, err := os.ReadFile(path)
	mode := os.FileMode(0o600)
	switch {
	case errors.Is(err, os.ErrNotExist):
		old = []byte("[]")
	case err != nil:
		return fmt.Errorf("inbox %s: %w", path, err)
	default:
		if fi, serr := os.Stat(path); serr == nil {
			mode = fi.Mode().Perm()
		}
	}
	if len(bytes.TrimSpace(old)) == 0 {
		// Just created by a Claude Code writer that has not written its []
		// yet (it creates the file outside the lock): an empty inbox.
		old = []byte("[]")
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(old, &elems); err != nil {
		return fmt.Errorf("inbox %s is not a JSON array, so nothing was appended: %w", path, err)
	}
	elem, err := json.MarshalIndent(e, "  ", "  ")
	if err != nil {
		return err
	}
	next, err := splice(old, elem, len(elems) == 0)
	if err != nil {
		return fmt.Errorf("inbox %s: %w", path, err)
	}
	var check []json.RawMessage
	if err := json.Unmarshal(next, &check); err != nil || len(check) != len(elems)+1 {
		return fmt.Errorf("inbox %s: the appended array does not read back (%v): nothing written", path, err)
	}
	if !l.fresh() {
		return fmt.Errorf("inbox %s: huddle held the lock too long to be sure it is still its own: nothing written", path)
	}
	// A temp file beside it (a dot name: Claude Code's readers skip it),
	// renamed over it with its mode kept.
	if err := teamdir.ReplaceFileMode(path, next, mode); err != nil {
		return fmt.Errorf("inbox %s: write: %w", path, err)
	}
	return nil
}

// splice puts elem as the last element of the array in old.
func splice(old, elem []byte, empty bool) ([]byte, error) {
	body := bytes.TrimRight(old, " \t\r\n")
	if len(body) == 0 || body[len(body)-1] != ']' {
		return nil, errors.New("does not end with ]")
	}
	head := body[:len(body)-1]
	var b bytes.Buffer
	if empty {
		b.Write(bytes.TrimRight(head, " \t\r\n"))
		b.WriteString("\n  ")
	} else {
		b.Write(bytes.TrimRight(head, " \t\r\n"))
		b.WriteString(",\n  ")
	}
	b.Write(elem)
	b.WriteString("\n]")
	return b.Bytes(), nil
}
