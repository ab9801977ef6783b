package permit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
)

// writeLines is how much of a Write's content Describe shows.
const writeLines = 20

// Describe draws u for a person: the command line; the file and the
// change of an edit; the first lines a write puts in a file; the URL of a
// fetch; any other tool's input as compact JSON.
func Describe(u Use) string {
	in := u.input()
	path := relPath(u.Cwd, filePath(in))
	var b strings.Builder
	switch u.Tool {
	case "Bash":
		b.WriteString("$ " + in.Command)
		if in.Description != "" {
			b.WriteString("\n# " + in.Description)
		}
	case "Edit":
		b.WriteString("edit " + path)
		diff(&b, in.OldString, in.NewString)
	case "MultiEdit":
		fmt.Fprintf(&b, "edit %s (%d changes)", path, len(in.Edits))
		for _, e := range in.Edits {
			diff(&b, e.OldString, e.NewString)
		}
	case "Write", "NotebookEdit":
		b.WriteString("write " + path)
		lines := strings.Split(strings.TrimSuffix(in.Content, "\n"), "\n")
		for i, l := range lines {
			if i == writeLines {
				fmt.Fprintf(&b, "\n… %d more lines", len(lines)-writeLines)
				break
			}
			if in.Content != "" {
				b.WriteString("\n+ " + l)
			}
		}
	case "Read", "LS", "NotebookRead":
		b.WriteString("read " + path)
	case "Grep", "Glob":
		b.WriteString(strings.ToLower(u.Tool) + " " + in.Pattern)
		if path != "" {
			b.WriteString(" in " + path)
		}
	case "WebFetch":
		b.WriteString("fetch " + in.URL)
		if in.Prompt != "" {
			b.WriteString("\n# " + in.Prompt)
		}
	case "WebSearch":
		b.WriteString("search the web for " + in.Query)
	case "ExitPlanMode":
		b.WriteString("the plan")
	default:
		b.WriteString(u.Tool + " " + compact(u.Input, 400))
	}
	return strings.TrimSpace(b.String())
}

// diff draws a change as the lines it removes and adds.
func diff(b *strings.Builder, old, new string) {
	for _, l := range strings.Split(old, "\n") {
		if old != "" {
			b.WriteString("\n- " + l)
		}
	}
	for _, l := range strings.Split(new, "\n") {
		if new != "" {
			b.WriteString("\n+ " + l)
		}
	}
}

func compact(raw json.RawMessage, n int) string {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		buf.Reset()
		buf.Write(raw)
	}
	return cut(buf.String(), n)
}

// Summary is the first line of Describe, cut to n runes: what a list row
// shows.
func Summary(u Use, n int) string {
	line, _, _ := strings.Cut(Describe(u), "\n")
	return cut(line, n)
}

func cut(s string, n int) string {
	r := []rune(s)
	if n <= 0 || len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// runners are commands whose first word says little: a session allowance
// of one of them names its first two words.
var runners = map[string]bool{
	"go": true, "npm": true, "npx": true, "yarn": true, "pnpm": true, "cargo": true, "make": true,
	"git": true, "python": true, "python3": true, "node": true, "uv": true, "pip": true,
}

// SessionRule is the rule that allowing u for the rest of a session adds:
// a command's first word (two for a runner such as go or npm) as a
// prefix, a compound command exactly; the directory of an edited or read
// file; a fetch's host; any other tool by name.
func SessionRule(u Use) string {
	in := u.input()
	switch {
	case u.Tool == "Bash":
		parts, plain := splitCommand(in.Command)
		if len(parts) == 0 {
			return ""
		}
		if len(parts) > 1 || !plain {
			return "Bash(" + strings.Join(strings.Fields(in.Command), " ") + ")"
		}
		words := strings.Fields(parts[0])
		n := 1
		if runners[words[0]] && len(words) > 1 {
			n = 2
		}
		return "Bash(" + strings.Join(words[:n], " ") + ":*)"
	case editTools[u.Tool] || readTools[u.Tool]:
		file := filePath(in)
		if file == "" {
			return u.Tool
		}
		tool := "Read"
		if editTools[u.Tool] {
			tool = "Edit"
		}
		dir := filepath.Dir(relPath(u.Cwd, file))
		if filepath.IsAbs(dir) {
			return tool + "(/" + filepath.ToSlash(dir) + "/**)"
		}
		if dir == "." {
			return tool + "(./**)"
		}
		return tool + "(" + filepath.ToSlash(dir) + "/**)"
	case u.Tool == "WebFetch":
		if p, err := url.Parse(in.URL); err == nil && p.Hostname() != "" {
			return "WebFetch(domain:" + p.Hostname() + ")"
		}
	}
	return u.Tool
}
