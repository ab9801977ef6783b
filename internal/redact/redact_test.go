package redact

import (
	"encoding/base64"
	"net/url"
	"strings"
	"testing"
)

// wrap breaks s into lines of n characters, as base64(1) does at 76.
func wrap(s string, n int, nl string) string {
	var b strings.Builder
	for len(s) > n {
		b.WriteString(s[:n] + nl)
		s = s[n:]
	}
	b.WriteString(s)
	return b.String()
}

// recoverable reports whether secret can be read back from text: as it is,
// URL-unescaped, or base64-decoded from any run of base64 characters (line
// breaks taken out) at any of its four character offsets, in either
// alphabet.
func recoverable(text, secret string) bool {
	if strings.Contains(text, secret) {
		return true
	}
	if u, err := url.QueryUnescape(text); err == nil && strings.Contains(u, secret) {
		return true
	}
	if u, err := url.PathUnescape(text); err == nil && strings.Contains(u, secret) {
		return true
	}
	joined := strings.NewReplacer("\n", "", "\r", "").Replace(text)
	for _, run := range strings.FieldsFunc(joined, func(r rune) bool { return r > 127 || !isB64(byte(r)) || r == '=' }) {
		for off := range 4 {
			if off >= len(run) {
				break
			}
			r := run[off:]
			r = r[:len(r)/4*4]
			for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
				if b, err := enc.DecodeString(r); err == nil && strings.Contains(string(b), secret) {
					return true
				}
			}
		}
	}
	return false
}

func TestSecretsScrubbedInEveryForm(t *testing.T) {
	const key = "sk-proj-Abc123/Def+456_ghi"
	const token = "s3cr3t-nats-t0ken"
	s := New(key, token, "", "abc")
	environ := "PATH=/usr/bin\x00HOME=/root\x00OPENAI_API_KEY=" + key + "\x00HUDDLE_STORE=nats://" + token + "@broker:4222/crew\x00LANG=C\x00"
	forms := map[string]string{
		"raw":          "the key is " + key + ", the token " + token,
		"query-escape": "url: https://x/?k=" + url.QueryEscape(key),
		"path-escape":  "url: https://x/" + url.PathEscape(key),
	}
	for off := range 3 {
		prefix := strings.Repeat("x", off)
		std := base64.StdEncoding.EncodeToString([]byte(prefix + environ))
		forms["base64 std, offset "+string(rune('0'+off))] = std
		forms["base64 url, offset "+string(rune('0'+off))] = base64.URLEncoding.EncodeToString([]byte(prefix + environ))
		forms["base64 wrapped at 76, offset "+string(rune('0'+off))] = "$ base64 /proc/1/environ\n" + wrap(std, 76, "\n") + "\n$ "
		forms["base64 wrapped at 7 with CRLF, offset "+string(rune('0'+off))] = wrap(std, 7, "\r\n")
	}
	for name, text := range forms {
		t.Run(name, func(t *testing.T) {
			if !recoverable(text, key) && !recoverable(text, token) {
				t.Fatalf("the test's own check finds no secret in %q", text)
			}
			out := s.String(text)
			if recoverable(out, key) || recoverable(out, token) {
				t.Errorf("a secret is left in\n%s\nscrubbed from\n%s", out, text)
			}
			if !strings.Contains(out, Mark) {
				t.Errorf("no %s in %q", Mark, out)
			}
			if s.Holds(out) {
				t.Errorf("Holds(%q) after scrubbing", out)
			}
		})
	}
	plain := "abc: nothing secret here\nline two, base64 aGVsbG8gd29ybGQ=\n"
	if got := s.String(plain); got != plain {
		t.Errorf("text with no secret changed: %q", got)
	}
	var none *Set
	if none.String(plain) != plain || !none.Empty() || !New("", "ab").Empty() {
		t.Error("a nil or empty set scrubbed something")
	}
}
