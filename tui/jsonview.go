package tui

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"huddle/team"
)

// jsonLines draws s for a person: JSON pretty-printed, its keys, strings
// and literals coloured, each line wrapped at w on spaces (a token is
// broken only when it is longer than a line), the part after a break
// indented under its line; anything else as the text it is.
func (c *common) jsonLines(s string, w int) []string {
	t := strings.TrimSpace(s)
	if t == "" || (t[0] != '{' && t[0] != '[') || !json.Valid([]byte(t)) {
		return wrapText(s, w)
	}
	var b bytes.Buffer
	if json.Indent(&b, []byte(t), "", "  ") != nil {
		return wrapText(s, w)
	}
	var out []string
	for _, line := range strings.Split(team.PrintableText(b.String()), "\n") {
		var state jsonState
		for _, piece := range wrapOnSpaces(line, max(w-2, 10)) {
			out = append(out, "  "+state.colour(piece, &c.styles))
		}
	}
	return out
}

// wrapOnSpaces breaks line into pieces of at most w columns at its spaces,
// the pieces after the first indented two more than the line; a word
// longer than a piece is cut.
func wrapOnSpaces(line string, w int) []string {
	if utf8.RuneCountInString(line) <= w {
		return []string{line}
	}
	indent := len(line) - len(strings.TrimLeft(line, " "))
	pad := strings.Repeat(" ", min(indent+2, w/2))
	var out []string
	cur, n := strings.Builder{}, 0
	flush := func() {
		out = append(out, cur.String())
		cur.Reset()
		cur.WriteString(pad)
		n = len(pad)
	}
	for i, word := range strings.Split(line, " ") {
		if i > 0 {
			if n+1+utf8.RuneCountInString(word) > w && n > len(pad) {
				flush()
			} else {
				cur.WriteByte(' ')
				n++
			}
		}
		for utf8.RuneCountInString(word) > w-n {
			r := []rune(word)
			cut := max(w-n, 1)
			cur.WriteString(string(r[:cut]))
			word = string(r[cut:])
			flush()
		}
		cur.WriteString(word)
		n += utf8.RuneCountInString(word)
	}
	return append(out, cur.String())
}

// jsonState colours pretty-printed JSON a piece at a time, remembering
// whether a piece ended inside a string (and whether it is a key's).
type jsonState struct {
	inString, escaped, key bool
}

// colour is piece with its keys in the info ink, its strings in the
// success ink and its numbers and literals in the warning ink.
func (j *jsonState) colour(piece string, st *Styles) string {
	const (
		plain = iota
		key
		str
		literal
	)
	inks := [...]Ink{key: st.Info, str: st.Success, literal: st.Warning}
	var b, run strings.Builder
	tone := plain
	if j.inString {
		tone = str
		if j.key {
			tone = key
		}
	}
	emit := func() {
		if run.Len() == 0 {
			return
		}
		if tone == plain {
			b.WriteString(run.String())
		} else {
			b.WriteString(inks[tone].Render(run.String()))
		}
		run.Reset()
	}
	set := func(next int) {
		if next != tone {
			emit()
			tone = next
		}
	}
	for i := 0; i < len(piece); i++ {
		ch := piece[i]
		switch {
		case j.inString:
			run.WriteByte(ch)
			switch {
			case j.escaped:
				j.escaped = false
			case ch == '\\':
				j.escaped = true
			case ch == '"':
				j.inString = false
			}
		case ch == '"':
			// A key is a string followed by a colon on its line.
			j.inString, j.key = true, isKey(piece[i:])
			if j.key {
				set(key)
			} else {
				set(str)
			}
			run.WriteByte(ch)
		case ch == '-' || (ch >= '0' && ch <= '9') || ch == 't' || ch == 'f' || ch == 'n':
			set(literal)
			for ; i < len(piece) && !strings.ContainsRune(",]} ", rune(piece[i])); i++ {
				run.WriteByte(piece[i])
			}
			i--
		default:
			set(plain)
			run.WriteByte(ch)
		}
	}
	emit()
	return b.String()
}

// isKey reports whether the string starting at s[0] (a quote) is followed
// by a colon: an object's key.
func isKey(s string) bool {
	esc := false
	for i := 1; i < len(s); i++ {
		switch {
		case esc:
			esc = false
		case s[i] == '\\':
			esc = true
		case s[i] == '"':
			return strings.HasPrefix(s[i+1:], ":")
		}
	}
	return false
}
