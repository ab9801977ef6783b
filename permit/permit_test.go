package permit_test

import (
	"encoding/json"
	"strings"
	"testing"

	"huddle/permit"
)

func bash(cmd string) permit.Use {
	b, _ := json.Marshal(map[string]string{"command": cmd})
	return permit.Use{Tool: "Bash", Input: b, Cwd: "/w", Home: "/home/u"}
}

func file(tool, path string) permit.Use {
	b, _ := json.Marshal(map[string]string{"file_path": path, "old_string": "a\nb", "new_string": "c", "content": "x\ny\n"})
	return permit.Use{Tool: tool, Input: b, Cwd: "/w", Home: "/home/u"}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"Bash", "Bash", ""},
		{" Bash(go test:*) ", "Bash(go test:*)", ""},
		{"Edit(src/**)", "Edit(src/**)", ""},
		{"mcp__github", "mcp__github", ""},
		{"", "", "empty"},
		{"Bash(go test", "", "no closing parenthesis"},
		{"Bash)", "", "no opening parenthesis"},
		{"Bash()", "", "empty specifier"},
		{"(x)", "", "is not a tool name"},
		{"Ba sh", "", "is not a tool name"},
	} {
		r, err := permit.Parse(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Parse(%q) = %v, %v; want an error with %q", tc.in, r, err, tc.err)
		case tc.err == "" && (err != nil || r.String() != tc.want):
			t.Errorf("Parse(%q) = %q, %v; want %q", tc.in, r.String(), err, tc.want)
		}
	}
}

func TestDecide(t *testing.T) {
	rules := permit.Rules{
		Allow: []string{"Bash(go test:*)", "Bash(ls)", "Bash(echo *)", "Edit(src/**)", "Read(//etc/hosts)", "Read(~/notes/**)", "WebFetch(domain:example.com)", "mcp__docs"},
		Ask:   []string{"Bash(go test ./secret/...)"},
		Deny:  []string{"Bash(rm:*)", "Edit(src/vendor/**)"},
	}
	web := func(u string) permit.Use {
		b, _ := json.Marshal(map[string]string{"url": u})
		return permit.Use{Tool: "WebFetch", Input: b}
	}
	for _, tc := range []struct {
		name string
		use  permit.Use
		want permit.Verdict
		rule string
	}{
		{"prefix", bash("go test ./..."), permit.Allow, "Bash(go test:*)"},
		{"prefix alone", bash("go test"), permit.Allow, "Bash(go test:*)"},
		{"word boundary", bash("go testing"), permit.Ask, ""},
		{"exact", bash("ls"), permit.Allow, "Bash(ls)"},
		{"exact, more", bash("ls -la"), permit.Ask, ""},
		{"wildcard", bash("echo hi there"), permit.Allow, "Bash(echo *)"},
		{"compound allowed part by part", bash("go test ./a && ls"), permit.Allow, "Bash(go test:*), Bash(ls)"},
		{"compound, one part not allowed", bash("go test ./a && curl x"), permit.Ask, ""},
		{"compound, one part denied", bash("go test ./a; rm -rf /"), permit.Deny, "Bash(rm:*)"},
		{"pipe", bash("go test ./a | tee out"), permit.Ask, ""},
		{"quoted operator is one command", bash(`echo "a && rm b"`), permit.Allow, "Bash(echo *)"},
		{"substitution never allowed", bash("echo $(rm -rf /)"), permit.Ask, ""},
		{"backticks never allowed", bash("echo `id`"), permit.Ask, ""},
		{"redirection never allowed", bash("echo hi > /etc/passwd"), permit.Ask, ""},
		{"deny wins", bash("rm -rf build"), permit.Deny, "Bash(rm:*)"},
		{"ask over allow", bash("go test ./secret/..."), permit.Ask, "Bash(go test ./secret/...)"},
		{"edit in src", file("Edit", "src/a/b.go"), permit.Allow, "Edit(src/**)"},
		{"write is an edit", file("Write", "/w/src/new.go"), permit.Allow, "Edit(src/**)"},
		{"edit denied under vendor", file("MultiEdit", "src/vendor/x.go"), permit.Deny, "Edit(src/vendor/**)"},
		{"dot-dot cannot leave src", file("Edit", "src/../secret.txt"), permit.Ask, ""},
		{"outside cwd", file("Edit", "/etc/src/a"), permit.Ask, ""},
		{"absolute read", file("Read", "/etc/hosts"), permit.Allow, "Read(//etc/hosts)"},
		{"home read", file("Read", "/home/u/notes/a.md"), permit.Allow, "Read(~/notes/**)"},
		{"read rule is no edit rule", file("Edit", "/etc/hosts"), permit.Ask, ""},
		{"domain", web("https://example.com/a"), permit.Allow, "WebFetch(domain:example.com)"},
		{"subdomain", web("https://docs.example.com/a"), permit.Allow, "WebFetch(domain:example.com)"},
		{"other domain", web("https://example.com.evil.net/"), permit.Ask, ""},
		{"mcp server", permit.Use{Tool: "mcp__docs__search"}, permit.Allow, "mcp__docs"},
		{"other mcp server", permit.Use{Tool: "mcp__docsx__search"}, permit.Ask, ""},
		{"no rule", permit.Use{Tool: "WebSearch"}, permit.Ask, ""},
		{"input no object", permit.Use{Tool: "Bash", Input: json.RawMessage(`42`)}, permit.Ask, ""},
	} {
		got, rule := rules.Decide(tc.use)
		if got != tc.want || rule != tc.rule {
			t.Errorf("%s: Decide = %s %q; want %s %q", tc.name, got, rule, tc.want, tc.rule)
		}
	}
	if (permit.Rules{Allow: []string{"Bash"}}).Validate() != nil {
		t.Error("a good rule list is refused")
	}
	if err := (permit.Rules{Deny: []string{"Bash("}}).Validate(); err == nil || !strings.HasPrefix(err.Error(), "deny: ") {
		t.Errorf("Validate of a bad deny rule = %v; want an error naming deny", err)
	}
}

func TestDescribeAndSessionRule(t *testing.T) {
	for _, tc := range []struct {
		use           permit.Use
		describe, sum string
		rule          string
	}{
		{bash("go test ./..."), "$ go test ./...", "$ go test ./...", "Bash(go test:*)"},
		{bash("ls -la && rm x"), "$ ls -la && rm x", "$ ls -la && rm x", "Bash(ls -la && rm x)"},
		{bash("pytest -q"), "$ pytest -q", "$ pytest -q", "Bash(pytest:*)"},
		{file("Edit", "/w/src/a.go"), "edit src/a.go\n- a\n- b\n+ c", "edit src/a.go", "Edit(src/**)"},
		{file("Write", "top.go"), "write top.go\n+ x\n+ y", "write top.go", "Edit(./**)"},
		{file("Read", "/etc/hosts"), "read /etc/hosts", "read /etc/hosts", "Read(//etc/**)"},
		{permit.Use{Tool: "WebFetch", Input: json.RawMessage(`{"url":"https://go.dev/doc"}`)}, "fetch https://go.dev/doc", "fetch https://go.dev/doc", "WebFetch(domain:go.dev)"},
		{permit.Use{Tool: "Frob", Input: json.RawMessage(`{ "a" : 1 }`)}, `Frob {"a":1}`, `Frob {"a":1}`, "Frob"},
		{permit.Use{Tool: "Frob", Input: json.RawMessage(`nul`)}, "Frob nul", "Frob nul", "Frob"},
	} {
		if got := permit.Describe(tc.use); got != tc.describe {
			t.Errorf("Describe(%s %s) = %q, want %q", tc.use.Tool, tc.use.Input, got, tc.describe)
		}
		if got := permit.Summary(tc.use, 80); got != tc.sum {
			t.Errorf("Summary(%s %s) = %q, want %q", tc.use.Tool, tc.use.Input, got, tc.sum)
		}
		if got := permit.SessionRule(tc.use); got != tc.rule {
			t.Errorf("SessionRule(%s %s) = %q, want %q", tc.use.Tool, tc.use.Input, got, tc.rule)
		}
		if r, err := permit.Parse(permit.SessionRule(tc.use)); err != nil || !r.Match(tc.use) {
			t.Errorf("SessionRule(%s %s) = %q does not parse and cover the use: %v", tc.use.Tool, tc.use.Input, permit.SessionRule(tc.use), err)
		}
	}
	if got := permit.Summary(bash(strings.Repeat("x", 200)), 10); got != "$ xxxxxxx…" {
		t.Errorf("Summary cut to 10 = %q", got)
	}
}

func TestReadOnly(t *testing.T) {
	for tool, want := range map[string]bool{"Read": true, "Grep": true, "WebFetch": true, "TodoWrite": true, "Edit": false, "Write": false, "Bash": false, "": false} {
		if got := permit.ReadOnly(tool); got != want {
			t.Errorf("ReadOnly(%q) = %v, want %v", tool, got, want)
		}
	}
}

func FuzzDecide(f *testing.F) {
	f.Add("Bash(go test:*)", "Bash", `{"command":"go test ./... && rm x"}`)
	f.Add("Edit(src/**)", "Edit", `{"file_path":"src/../x"}`)
	f.Add("WebFetch(domain:a.b)", "WebFetch", `{"url":"://"}`)
	f.Fuzz(func(t *testing.T, rule, tool, input string) {
		u := permit.Use{Tool: tool, Input: json.RawMessage(input), Cwd: "/w", Home: "/h"}
		rs := permit.Rules{Allow: []string{rule}, Deny: []string{rule + "x"}}
		_, _ = rs.Decide(u)
		_ = permit.Describe(u)
		_ = permit.Summary(u, 20)
		_ = permit.SessionRule(u)
	})
}
