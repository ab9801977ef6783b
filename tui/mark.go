package tui

import (
	"strings"
	"unicode/utf8"
)

// Underline on and off: a match is underlined, which no style of the
// screen uses, so switching it leaves every other style of the line as
// it was (NO_COLOR's selection is reverse video, the colours' a
// background).
const (
	markOn  = "\x1b[4m"
	markOff = "\x1b[24m"
)

// marked underlines every case-insensitive occurrence of f in line, a
// line that may hold escape sequences: they are copied as they are, and
// only the text between them is searched.
func marked(line, f string) string {
	if f == "" {
		return line
	}
	var plain []byte
	for i := 0; i < len(line); {
		if line[i] == 0x1b {
			i = escapeEnd(line, i)
			continue
		}
		plain = append(plain, line[i])
		i++
	}
	type span struct{ from, to int } // in plain
	var spans []span
	for i := 0; i+len(f) <= len(plain); {
		if strings.EqualFold(string(plain[i:i+len(f)]), f) {
			spans = append(spans, span{i, i + len(f)})
			i += len(f)
			continue
		}
		_, n := utf8.DecodeRune(plain[i:])
		i += n
	}
	if len(spans) == 0 {
		return line
	}
	var b strings.Builder
	b.Grow(len(line) + 2*len(spans)*len(markOn+markOff))
	k, in := 0, false // the next span, and whether the text is in one
	for i, p := 0, 0; i < len(line); {
		if line[i] == 0x1b {
			j := escapeEnd(line, i)
			b.WriteString(line[i:j])
			if in {
				b.WriteString(markOn) // a reset inside a match must not end it
			}
			i = j
			continue
		}
		if k < len(spans) && p == spans[k].from {
			b.WriteString(markOn)
			in = true
		}
		b.WriteByte(line[i])
		i, p = i+1, p+1
		if in && p == spans[k].to {
			b.WriteString(markOff)
			in = false
			k++
		}
	}
	return b.String()
}

// escapeEnd is the index just past the escape sequence at line[i]: a CSI
// (ESC [ … final byte), an OSC (ESC ] … BEL or ESC \), or ESC and one
// byte.
func escapeEnd(line string, i int) int {
	if i+1 >= len(line) {
		return len(line)
	}
	switch line[i+1] {
	case '[':
		for j := i + 2; j < len(line); j++ {
			if line[j] >= 0x40 && line[j] <= 0x7e {
				return j + 1
			}
		}
		return len(line)
	case ']':
		for j := i + 2; j < len(line); j++ {
			if line[j] == '\a' {
				return j + 1
			}
			if line[j] == 0x1b && j+1 < len(line) && line[j+1] == '\\' {
				return j + 2
			}
		}
		return len(line)
	}
	return i + 2
}

// markedLines is marked on every line of a pane's body.
func markedLines(body, f string) string {
	if f == "" {
		return body
	}
	lines := strings.Split(body, "\n")
	for i, l := range lines {
		lines[i] = marked(l, f)
	}
	return strings.Join(lines, "\n")
}
