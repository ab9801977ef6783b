package highlight

import (
	"strings"
	"testing"

	"github.com/alecthomas/chroma/v2"
)

// tokens lexes one line with the lexer of path.
func tokens(t *testing.T, path, line string) []chroma.Token {
	t.Helper()
	lx := Match(path)
	if lx == nil {
		t.Fatalf("no lexer for %s", path)
	}
	it, err := lx.Tokenise(nil, line)
	if err != nil {
		t.Fatal(err)
	}
	var out []chroma.Token
	for tok := it(); tok != chroma.EOF; tok = it() {
		out = append(out, tok)
	}
	return out
}

func typeOf(toks []chroma.Token, value string) chroma.TokenType {
	for _, tok := range toks {
		if strings.TrimSpace(tok.Value) == value {
			return tok.Type
		}
	}
	return chroma.Error
}

// TestLexersTellTokensApart: in each language a keyword, a string, a
// number and a comment come out as tokens of their own kinds, and every
// byte of the line comes back.
func TestLexersTellTokensApart(t *testing.T) {
	for _, c := range []struct {
		path, line string
		want       map[string]chroma.TokenType
	}{
		{"cmd/main.go", `	return fmt.Errorf("no %d", 42) // why`, map[string]chroma.TokenType{
			"return": chroma.Keyword, `"no %d"`: chroma.LiteralStringDouble, "42": chroma.LiteralNumber, "// why": chroma.CommentSingle, "Errorf": chroma.NameFunction}},
		{"a/b.py", `def f(x): return "s" # c`, map[string]chroma.TokenType{
			"def": chroma.Keyword, `"s"`: chroma.LiteralStringDouble, "# c": chroma.CommentSingle}},
		{"web/app.tsx", "const s = `t`; // c", map[string]chroma.TokenType{
			"const": chroma.Keyword, "`t`": chroma.LiteralStringBacktick, "// c": chroma.CommentSingle}},
		{"run.sh", `if [ -f x ]; then echo "y"; fi # c`, map[string]chroma.TokenType{
			"if": chroma.Keyword, `"y"`: chroma.LiteralStringDouble, "# c": chroma.CommentSingle}},
		{"team.json", `{"name": "demo", "n": 3, "on": true}`, map[string]chroma.TokenType{
			`"name"`: chroma.NameTag, `"demo"`: chroma.LiteralStringDouble, "3": chroma.LiteralNumber, "true": chroma.KeywordConstant}},
		{"ci.yml", `  runs-on: ubuntu # c`, map[string]chroma.TokenType{
			"runs-on": chroma.NameTag, "# c": chroma.CommentSingle}},
		{"README.md", "## Quickstart", map[string]chroma.TokenType{"## Quickstart": chroma.GenericHeading}},
	} {
		toks := tokens(t, c.path, c.line)
		var all strings.Builder
		for _, tok := range toks {
			all.WriteString(tok.Value)
		}
		if strings.TrimSuffix(all.String(), "\n") != c.line {
			t.Errorf("%s: tokens give back %q, not %q", c.path, all.String(), c.line)
		}
		for value, want := range c.want {
			if got := typeOf(toks, value); got != want {
				t.Errorf("%s: %q is %v, want %v (tokens %v)", c.path, value, got, want, toks)
			}
		}
	}
}

// TestUnknownFilesArePlain: a file no lexer covers has none.
func TestUnknownFilesArePlain(t *testing.T) {
	for _, path := range []string{"data.unknownext", "LICENSE", "a/b/c.bin"} {
		if lx := Match(path); lx != nil {
			t.Errorf("%s: lexer %s", path, lx.Config().Name)
		}
	}
}

// TestMonokaiColours: the style gives keywords, strings, numbers and
// comments colours of their own.
func TestMonokaiColours(t *testing.T) {
	st := Monokai()
	seen := map[string]chroma.TokenType{}
	for _, tt := range []chroma.TokenType{chroma.Keyword, chroma.LiteralStringDouble, chroma.LiteralNumber, chroma.CommentSingle, chroma.NameFunction} {
		c := st.Get(tt).Colour
		if !c.IsSet() {
			t.Fatalf("%v has no colour", tt)
		}
		if other, ok := seen[c.String()]; ok {
			t.Errorf("%v and %v share %s", tt, other, c)
		}
		seen[c.String()] = tt
	}
}
