package worktree

import (
	"bytes"
	"strconv"
	"strings"
)

// FileDiff is one file of a unified diff: its paths, its +/- counts and
// its hunks.
type FileDiff struct {
	Path    string `json:"path"`
	OldPath string `json:"old_path,omitempty"` // a rename's or a deletion's
	Status  string `json:"status"`             // modified, added, deleted, renamed
	Binary  bool   `json:"binary,omitempty"`
	Added   int    `json:"added"`
	Deleted int    `json:"deleted"`
	Hunks   []Hunk `json:"hunks,omitempty"`
}

// Hunk is one @@ section: where it starts on each side and its lines.
type Hunk struct {
	Header   string `json:"header"`
	OldStart int    `json:"old_start"`
	NewStart int    `json:"new_start"`
	Lines    []Line `json:"lines"`
}

// Line is one line of a hunk: ' ' context, '+' added, '-' deleted, with
// its number on the old and the new side (0 where it has none).
type Line struct {
	Kind byte   `json:"kind"`
	Text string `json:"text"`
	Old  int    `json:"old,omitempty"`
	New  int    `json:"new,omitempty"`
}

// ParseDiff reads git's unified diff (git diff, no colour) into files. It
// is lenient: what it does not know it skips.
func ParseDiff(b []byte) []FileDiff {
	var files []FileDiff
	var f *FileDiff
	var h *Hunk
	oldN, newN := 0, 0
	for len(b) > 0 {
		var line []byte
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			line, b = b, nil
		}
		s := string(line)
		switch {
		case strings.HasPrefix(s, "diff --git "):
			files = append(files, FileDiff{Status: "modified"})
			f, h = &files[len(files)-1], nil
			a, bb := splitGitPaths(s[len("diff --git "):])
			f.OldPath, f.Path = a, bb
		case f == nil:
		case h != nil && len(s) > 0 && (s[0] == ' ' || s[0] == '+' || s[0] == '-'):
			l := Line{Kind: s[0], Text: s[1:]}
			switch s[0] {
			case ' ':
				l.Old, l.New = oldN, newN
				oldN++
				newN++
			case '+':
				l.New = newN
				newN++
				f.Added++
			case '-':
				l.Old = oldN
				oldN++
				f.Deleted++
			}
			h.Lines = append(h.Lines, l)
		case h != nil && s == `\ No newline at end of file`:
		case strings.HasPrefix(s, "@@ "):
			f.Hunks = append(f.Hunks, Hunk{Header: s})
			h = &f.Hunks[len(f.Hunks)-1]
			h.OldStart, h.NewStart = hunkStarts(s)
			oldN, newN = h.OldStart, h.NewStart
		case strings.HasPrefix(s, "new file mode"):
			f.Status = "added"
		case strings.HasPrefix(s, "deleted file mode"):
			f.Status = "deleted"
		case strings.HasPrefix(s, "rename from "):
			f.Status, f.OldPath = "renamed", s[len("rename from "):]
		case strings.HasPrefix(s, "rename to "):
			f.Path = s[len("rename to "):]
		case strings.HasPrefix(s, "Binary files "):
			f.Binary = true
		}
	}
	for i := range files {
		if files[i].Status == "modified" || files[i].Status == "added" {
			files[i].OldPath = ""
		}
		if files[i].Status == "deleted" {
			files[i].Path, files[i].OldPath = files[i].OldPath, ""
		}
	}
	return files
}

// splitGitPaths splits "a/x b/y" of a diff --git line into x and y.
func splitGitPaths(s string) (string, string) {
	if i := strings.Index(s, " b/"); i >= 0 && strings.HasPrefix(s, "a/") {
		return s[2:i], s[i+3:]
	}
	return s, s
}

// hunkStarts reads "@@ -a,b +c,d @@" into a and c.
func hunkStarts(s string) (int, int) {
	f := strings.Fields(s)
	if len(f) < 3 {
		return 0, 0
	}
	num := func(p string) int {
		p, _, _ = strings.Cut(p[1:], ",")
		n, _ := strconv.Atoi(p)
		return n
	}
	return num(f[1]), num(f[2])
}
