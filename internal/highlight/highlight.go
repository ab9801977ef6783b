// Package highlight finds a chroma lexer for a file by its name and holds
// the style the diff view colours code with. Its lexers are defined here
// and compile their rules on first use, where chroma's own registry and
// styles (packages lexers and styles) parse some 350 XML files in their
// package initialisers: about 10 ms that every huddle command, linked
// into one binary, would pay before main (docs/PERFORMANCE.md, "Start").
// It covers the languages a team's changes most often hold; any other file
// is left plain.
package highlight

import (
	"path/filepath"
	"strings"
	"sync"

	"github.com/alecthomas/chroma/v2"
)

// Match returns the lexer for a file named path, or nil when none
// covers it.
func Match(path string) chroma.Lexer {
	base := filepath.Base(path)
	for _, l := range langs() {
		for _, glob := range l.globs {
			if ok, _ := filepath.Match(glob, base); ok {
				return l.lexer()
			}
		}
	}
	return nil
}

// Monokai is the Monokai palette as a chroma style, built on first use.
var Monokai = sync.OnceValue(func() *chroma.Style {
	return chroma.MustNewStyle("monokai", chroma.StyleEntries{
		chroma.Background:          "#f8f8f2 bg:#272822",
		chroma.Error:               "#960050 bg:#1e0010",
		chroma.Comment:             "#75715e",
		chroma.Keyword:             "#66d9ef",
		chroma.KeywordNamespace:    "#f92672",
		chroma.Operator:            "#f92672",
		chroma.Punctuation:         "#f8f8f2",
		chroma.Name:                "#f8f8f2",
		chroma.NameAttribute:       "#a6e22e",
		chroma.NameClass:           "#a6e22e",
		chroma.NameConstant:        "#66d9ef",
		chroma.NameDecorator:       "#a6e22e",
		chroma.NameFunction:        "#a6e22e",
		chroma.NameTag:             "#f92672",
		chroma.Literal:             "#ae81ff",
		chroma.LiteralNumber:       "#ae81ff",
		chroma.LiteralString:       "#e6db74",
		chroma.LiteralStringEscape: "#ae81ff",
		chroma.GenericDeleted:      "#f92672",
		chroma.GenericInserted:     "#a6e22e",
		chroma.GenericHeading:      "bold",
		chroma.GenericSubheading:   "#75715e",
		chroma.GenericStrong:       "bold",
	})
})

// lang is one language: the file names it covers and what its lines are
// made of. The rules are built the first time its lexer is asked for.
type lang struct {
	name  string
	globs []string
	rules func() chroma.Rules
	once  sync.Once
	lx    chroma.Lexer
}

func (l *lang) lexer() chroma.Lexer {
	l.once.Do(func() {
		l.lx = chroma.MustNewLexer(&chroma.Config{Name: l.name, Filenames: l.globs}, l.rules)
	})
	return l.lx
}

// code describes a language of keywords, names, strings, numbers and
// comments, which is most of them.
type code struct {
	comment    string   // what opens a comment to the end of the line: `//`, `#`, `--`
	block      bool     // /* … */ comments
	namespace  []string // package, import, use: drawn apart from the other keywords
	keywords   []string
	types      []string
	constants  []string
	backtick   bool // `…` is a string (Go, JavaScript, shell)
	singleChar bool // '…' is a character (Go, C, Rust, Java), not a string
}

func (c code) rules() chroma.Rules {
	var r []chroma.Rule
	add := func(pattern string, t chroma.TokenType) {
		r = append(r, chroma.Rule{Pattern: pattern, Type: t})
	}
	add(`\s+`, chroma.TextWhitespace)
	if c.comment != "" {
		add(regexpQuote(c.comment)+`.*`, chroma.CommentSingle)
	}
	if c.block {
		add(`/\*.*?(\*/|$)`, chroma.CommentMultiline)
	}
	add(`"(\\.|[^"\\])*"?`, chroma.LiteralStringDouble)
	if c.singleChar {
		add(`'(\\.|[^'\\])+'`, chroma.LiteralStringChar)
	} else {
		add(`'(\\.|[^'\\])*'?`, chroma.LiteralStringSingle)
	}
	if c.backtick {
		add("`[^`]*`?", chroma.LiteralStringBacktick)
	}
	add(`(0[xX][0-9a-fA-F_]+|0[bB][01_]+|\d[\d_]*(\.\d[\d_]*)?([eE][+-]?\d+)?)\b`, chroma.LiteralNumber)
	for _, w := range []struct {
		words []string
		t     chroma.TokenType
	}{{c.namespace, chroma.KeywordNamespace}, {c.keywords, chroma.Keyword}, {c.types, chroma.KeywordType}, {c.constants, chroma.KeywordConstant}} {
		if len(w.words) > 0 {
			add(chroma.Words(`\b`, `\b`, w.words...), w.t)
		}
	}
	add(`[\p{L}_$][\p{L}\p{N}_$]*(?=\s*\()`, chroma.NameFunction)
	add(`[\p{L}_$][\p{L}\p{N}_$]*`, chroma.Name)
	add(`[-+*/%&|^!=<>~?:@]+`, chroma.Operator)
	add(`[()\[\]{},;.]`, chroma.Punctuation)
	add(`.`, chroma.Text)
	return chroma.Rules{"root": r}
}

func regexpQuote(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\.+*?()|[]{}^$#/`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func words(s string) []string { return strings.Fields(s) }

var langs = sync.OnceValue(func() []*lang {
	cFamily := words("break case continue default do else for goto if return switch while")
	return []*lang{
		{name: "Go", globs: []string{"*.go"}, rules: code{
			comment: "//", block: true, backtick: true, singleChar: true,
			namespace: words("package import"),
			keywords:  words("break case chan const continue default defer else fallthrough for func go goto if interface map range return select struct switch type var"),
			types:     words("any bool byte complex64 complex128 error float32 float64 int int8 int16 int32 int64 rune string uint uint8 uint16 uint32 uint64 uintptr"),
			constants: words("true false nil iota"),
		}.rules},
		{name: "Python", globs: []string{"*.py", "*.pyi"}, rules: code{
			comment:   "#",
			namespace: words("import from"),
			keywords:  words("and as assert async await break class continue def del elif else except finally for global if in is lambda match case nonlocal not or pass raise return try while with yield"),
			types:     words("bool bytes dict float int list object set str tuple"),
			constants: words("True False None"),
		}.rules},
		{name: "JavaScript", globs: []string{"*.js", "*.mjs", "*.cjs", "*.jsx", "*.ts", "*.mts", "*.cts", "*.tsx"}, rules: code{
			comment: "//", block: true, backtick: true,
			namespace: words("import export from"),
			keywords:  words("async await break case catch class const continue debugger default delete do else extends finally for function if in instanceof interface let new of return static super switch this throw try type typeof var void while with yield implements enum declare readonly as"),
			types:     words("any boolean never number object string symbol unknown bigint"),
			constants: words("true false null undefined NaN Infinity"),
		}.rules},
		{name: "Rust", globs: []string{"*.rs"}, rules: code{
			comment: "//", block: true, singleChar: true,
			namespace: words("use mod crate extern"),
			keywords:  words("as async await break const continue dyn else enum fn for if impl in let loop match move mut pub ref return self Self static struct super trait type unsafe where while"),
			types:     words("bool char f32 f64 i8 i16 i32 i64 i128 isize str u8 u16 u32 u64 u128 usize String Vec Option Result Box"),
			constants: words("true false None Some Ok Err"),
		}.rules},
		{name: "C", globs: []string{"*.c", "*.h", "*.cc", "*.cpp", "*.cxx", "*.hpp", "*.hh", "*.java", "*.kt", "*.kts", "*.cs", "*.swift", "*.scala"}, rules: code{
			comment: "//", block: true, singleChar: true,
			namespace: words("import package using namespace include"),
			keywords:  append(cFamily, words("auto class const enum extern final fun inline new override private protected public sizeof static struct throw throws try catch typedef union val var virtual void volatile when func let")...),
			types:     words("bool boolean byte char double float int long short signed unsigned size_t String Int Long Double Float Boolean"),
			constants: words("true false null nullptr NULL nil"),
		}.rules},
		{name: "Shell", globs: []string{"*.sh", "*.bash", "*.zsh", ".bashrc", ".profile", "Makefile", "*.mk", "Dockerfile"}, rules: code{
			comment: "#", backtick: true,
			keywords: words("if then else elif fi for in do done while until case esac function return local export readonly set unset shift exit source FROM RUN CMD COPY ADD ENV WORKDIR ENTRYPOINT ARG"),
		}.rules},
		{name: "Ruby", globs: []string{"*.rb", "Gemfile", "Rakefile"}, rules: code{
			comment:   "#",
			namespace: words("require require_relative module"),
			keywords:  words("alias and begin break case class def defined? do else elsif end ensure for if in next not or redo rescue retry return self super then undef unless until when while yield"),
			constants: words("true false nil"),
		}.rules},
		{name: "SQL", globs: []string{"*.sql"}, rules: code{
			comment: "--", block: true,
			keywords: words("SELECT FROM WHERE INSERT INTO VALUES UPDATE SET DELETE CREATE TABLE DROP ALTER INDEX JOIN LEFT RIGHT INNER OUTER ON GROUP BY ORDER HAVING LIMIT AND OR NOT NULL AS PRIMARY KEY FOREIGN REFERENCES select from where insert into values update set delete create table drop alter index join left right inner outer on group by order having limit and or not null as primary key"),
		}.rules},
		{name: "JSON", globs: []string{"*.json", "*.jsonl", "*.ndjson"}, rules: jsonRules},
		{name: "YAML", globs: []string{"*.yaml", "*.yml", "*.toml", "*.ini", "*.cfg"}, rules: yamlRules},
		{name: "Markdown", globs: []string{"*.md", "*.markdown"}, rules: markdownRules},
	}
})

func jsonRules() chroma.Rules {
	return chroma.Rules{"root": {
		{Pattern: `\s+`, Type: chroma.TextWhitespace},
		{Pattern: `"(\\.|[^"\\])*"(?=\s*:)`, Type: chroma.NameTag},
		{Pattern: `"(\\.|[^"\\])*"?`, Type: chroma.LiteralStringDouble},
		{Pattern: `-?\d+(\.\d+)?([eE][+-]?\d+)?`, Type: chroma.LiteralNumber},
		{Pattern: `\b(true|false|null)\b`, Type: chroma.KeywordConstant},
		{Pattern: `[{}\[\],:]`, Type: chroma.Punctuation},
		{Pattern: `.`, Type: chroma.Text},
	}}
}

// yamlRules colour keys, comments, strings and scalars: YAML, and TOML
// and INI files, whose lines read alike.
func yamlRules() chroma.Rules {
	return chroma.Rules{"root": {
		{Pattern: `\s+`, Type: chroma.TextWhitespace},
		{Pattern: `[#;].*`, Type: chroma.CommentSingle},
		{Pattern: `\[[^\]]*\]`, Type: chroma.NameTag},
		{Pattern: `(-\s+)?[\w.-]+(?=\s*[:=])`, Type: chroma.NameTag},
		{Pattern: `"(\\.|[^"\\])*"?`, Type: chroma.LiteralStringDouble},
		{Pattern: `'[^']*'?`, Type: chroma.LiteralStringSingle},
		{Pattern: `-?\d+(\.\d+)?\b`, Type: chroma.LiteralNumber},
		{Pattern: `\b(true|false|null|yes|no|on|off)\b`, Type: chroma.KeywordConstant},
		{Pattern: `[:=\-|>{}\[\],]`, Type: chroma.Punctuation},
		{Pattern: `[^\s:=#'"]+`, Type: chroma.LiteralString},
		{Pattern: `.`, Type: chroma.Text},
	}}
}

func markdownRules() chroma.Rules {
	return chroma.Rules{"root": {
		{Pattern: `^#{1,6}\s.*`, Type: chroma.GenericHeading},
		{Pattern: `^\s*([-*+]|\d+\.)\s`, Type: chroma.Keyword},
		{Pattern: "`[^`]*`?", Type: chroma.LiteralStringBacktick},
		{Pattern: `\*\*[^*]+\*\*|__[^_]+__`, Type: chroma.GenericStrong},
		{Pattern: `\[[^\]]*\]\([^)]*\)`, Type: chroma.NameAttribute},
		{Pattern: `[^\x60*_\[]+`, Type: chroma.Text},
		{Pattern: `.`, Type: chroma.Text},
	}}
}
