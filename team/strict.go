package team

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"

	"huddle/internal/suggest"
)

// checkKeys reads team.json against Team's fields and names the first key
// no field takes, where it is (line:column) and the known key it was
// probably meant to be, or the place of a syntax error. encoding/json
// drops an unknown key without a word, so a typo ("approval_dedline")
// would silently keep the default.
func checkKeys(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	w := walker{src: b, dec: dec}
	if err := w.value(reflect.TypeFor[Team](), ""); err != nil {
		return err
	}
	end := dec.InputOffset()
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("syntax error at %s: more after the closing brace", w.lineCol(w.start(end)))
	}
	return nil
}

type walker struct {
	src []byte
	dec *json.Decoder
}

var unmarshaler = reflect.TypeFor[json.Unmarshaler]()

// value reads one JSON value that decodes into t, at path.
func (w *walker) value(t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshaler) || t.Kind() == reflect.Interface {
		return w.skip()
	}
	tok, err := w.dec.Token()
	if err != nil {
		return w.syntax(err)
	}
	d, isDelim := tok.(json.Delim)
	switch {
	case t.Kind() == reflect.Struct && isDelim && d == '{':
		return w.object(path, func(key string, keyAt int64) error {
			f, ok := fieldOf(t, key)
			if !ok {
				return w.unknown(path, key, keyAt, jsonNames(t))
			}
			return w.value(f.Type, join(path, key))
		})
	case t.Kind() == reflect.Map && isDelim && d == '{':
		return w.object(path, func(key string, _ int64) error { return w.value(t.Elem(), join(path, key)) })
	case (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && isDelim && d == '[':
		for i := 0; w.dec.More(); i++ {
			if err := w.value(t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		_, err := w.dec.Token() // ]
		return w.syntax(err)
	case isDelim:
		// The wrong shape: json.Unmarshal says so, with the field's
		// name; what it holds is not read for keys.
		return w.rest(d)
	}
	return nil
}

// object reads the members of an object whose '{' was read, handing each
// key and the offset it starts at to member, which reads the value.
func (w *walker) object(path string, member func(key string, at int64) error) error {
	for w.dec.More() {
		before := w.dec.InputOffset()
		tok, err := w.dec.Token()
		if err != nil {
			return w.syntax(err)
		}
		key, _ := tok.(string)
		if err := member(key, w.start(before)); err != nil {
			return err
		}
	}
	_, err := w.dec.Token() // }
	return w.syntax(err)
}

// rest reads what is left of an object or array whose opening d was read.
func (w *walker) rest(d json.Delim) error {
	for w.dec.More() {
		if d == '{' {
			if _, err := w.dec.Token(); err != nil {
				return w.syntax(err)
			}
		}
		if err := w.skip(); err != nil {
			return err
		}
	}
	_, err := w.dec.Token()
	return w.syntax(err)
}

func (w *walker) skip() error {
	var raw json.RawMessage
	return w.syntax(w.dec.Decode(&raw))
}

// start is where the token after offset begins: past the blanks, commas
// and colons between tokens.
func (w *walker) start(offset int64) int64 {
	for offset < int64(len(w.src)) && strings.IndexByte(" \t\r\n,:", w.src[offset]) >= 0 {
		offset++
	}
	return offset
}

func (w *walker) unknown(path, key string, at int64, known []string) error {
	msg := fmt.Sprintf("unknown field %q at %s", join(path, key), w.lineCol(at))
	if s := suggest.Nearest(key, known); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return errors.New(msg)
}

// syntax places a syntax error by line and column; other errors pass.
func (w *walker) syntax(err error) error {
	var se *json.SyntaxError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se):
		return fmt.Errorf("syntax error at %s: %s", w.lineCol(se.Offset), strings.TrimPrefix(se.Error(), "invalid character "))
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return fmt.Errorf("syntax error at %s: unexpected end of file", w.lineCol(int64(len(w.src))))
	}
	return fmt.Errorf("at %s: %w", w.lineCol(w.dec.InputOffset()), err)
}

// lineCol is offset as "line:column", both from 1, the column in
// characters.
func (w *walker) lineCol(offset int64) string {
	offset = min(max(offset, 0), int64(len(w.src)))
	before := w.src[:offset]
	line := bytes.Count(before, []byte("\n")) + 1
	col := utf8.RuneCount(before[bytes.LastIndexByte(before, '\n')+1:]) + 1
	return fmt.Sprintf("%d:%d", line, col)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// fieldOf finds the field key decodes into, as encoding/json does: the
// exact name first, then one equal but for case.
func fieldOf(t reflect.Type, key string) (reflect.StructField, bool) {
	var fold *reflect.StructField
	fs := fieldsOf(t)
	for i := range fs {
		if fs[i].name == key {
			return fs[i].f, true
		}
		if fold == nil && strings.EqualFold(fs[i].name, key) {
			fold = &fs[i].f
		}
	}
	if fold != nil {
		return *fold, true
	}
	return reflect.StructField{}, false
}

func jsonNames(t reflect.Type) []string {
	var out []string
	for _, f := range fieldsOf(t) {
		out = append(out, f.name)
	}
	return out
}

// namedField is a field that takes a key, with its key.
type namedField struct {
	name string
	f    reflect.StructField
}

// fieldCache holds the namedFields of each struct type checkKeys met:
// reflect.VisibleFields allocates on every call, and a team of thousands
// of members asks for the same few types once per object.
var fieldCache sync.Map // reflect.Type → []namedField

func fieldsOf(t reflect.Type) []namedField {
	if fs, ok := fieldCache.Load(t); ok {
		return fs.([]namedField)
	}
	var fs []namedField
	for _, f := range reflect.VisibleFields(t) {
		if name, ok := jsonName(f); ok {
			fs = append(fs, namedField{name, f})
		}
	}
	fieldCache.Store(t, fs)
	return fs
}

// jsonName is the key a field takes, if it takes one.
func jsonName(f reflect.StructField) (string, bool) {
	if !f.IsExported() || f.Anonymous {
		return "", false
	}
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", false
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "" {
		name = f.Name
	}
	return name, true
}
