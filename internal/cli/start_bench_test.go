package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkStart times the light commands of the real binary from exec to
// Exit, each beside a Go hello-world built in the same run (the floor: what
// any Go program pays to start and print a line): `huddle version`,
// `status` of a team that is down, `approve` of a request that is not
// there (its store opened and searched), and `send` of one message. Every
// iteration runs the floors and each command once, alternately, so load
// on the shared machine falls on all of them alike. Per command: its
// median in ms and the ratio of its median to the floor's (x-hello).
//
// The second floor, deps-ms, is the same hello-world linking every
// third-party package huddle links (depsBinary): what the dependencies
// alone cost before main (their initialisers, the runtime's start over a
// binary their size), which no command of the one binary can go under.
// x-deps is a command's median over it.
//
//	go test -run '^$' -bench Start -benchtime 40x -count 3 ./internal/cli
func BenchmarkStart(b *testing.B) {
	hello := helloBinary(b)
	deps := depsBinary(b)
	dir := filepath.Join(b.TempDir(), ".huddle")
	if out, err := exec.Command(huddleBinary(b), "init", "--dir", dir).CombinedOutput(); err != nil {
		b.Fatalf("huddle init: %v: %s", err, out)
	}
	cmds := []struct {
		name string
		args []string
		ok   bool // whether it exits 0
	}{
		{"version", []string{"version"}, true},
		{"status", []string{"status", "--dir", dir}, true},
		{"approve", []string{"approve", "--dir", dir, "pl-000000000000"}, false},
		{"send", []string{"send", "--dir", dir, "reservas", "hello"}, true},
	}
	run := func(ok bool, bin string, args ...string) time.Duration {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "HUDDLE_DIR=", "HUDDLE_STORE=", "HUDDLE_NATS_CREDS=")
		t0 := time.Now()
		err := cmd.Run()
		d := time.Since(t0)
		if ok && err != nil {
			b.Fatalf("%s %v: %v", bin, args, err)
		}
		return d
	}
	floor := make([]time.Duration, 0, b.N)
	depsFloor := make([]time.Duration, 0, b.N)
	times := make([][]time.Duration, len(cmds))
	b.ResetTimer()
	for range b.N {
		floor = append(floor, run(true, hello))
		depsFloor = append(depsFloor, run(true, deps))
		for i, c := range cmds {
			times[i] = append(times[i], run(c.ok, huddleBinary(b), c.args...))
		}
	}
	b.StopTimer()
	f, df := median(floor), median(depsFloor)
	b.ReportMetric(ms(f), "hello-ms")
	b.ReportMetric(ms(df), "deps-ms")
	for i, c := range cmds {
		m := median(times[i])
		b.ReportMetric(ms(m), c.name+"-ms")
		b.ReportMetric(m.Seconds()/f.Seconds(), c.name+"-x-hello")
		b.ReportMetric(m.Seconds()/df.Seconds(), c.name+"-x-deps")
	}
}

// depsBinary builds a Go program that prints one line and exits, and
// imports, blank, every package outside huddle and the standard library
// that huddle links (go list -deps, less what another module keeps to
// itself: internal packages and commands), from huddle's go.mod and
// go.sum: their initialisers all run, as in huddle.
func depsBinary(b *testing.B) string {
	b.Helper()
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		b.Fatalf("go env GOMOD: %v", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	list := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}} {{.Name}}{{end}}", "huddle")
	list.Dir = root
	out, err := list.Output()
	if err != nil {
		b.Fatalf("go list -deps huddle: %v", err)
	}
	var src strings.Builder
	src.WriteString("package main\n\nimport (\n\t\"fmt\"\n")
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path, name, _ := strings.Cut(line, " ")
		if path == "huddle" || strings.HasPrefix(path, "huddle/") || name == "main" ||
			strings.Contains(path, "/internal/") || strings.HasSuffix(path, "/internal") || strings.HasPrefix(path, "vendor/") {
			continue
		}
		fmt.Fprintf(&src, "\t_ %q\n", path)
	}
	src.WriteString(")\n\nfunc main() { fmt.Println(\"hello\") }\n")
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		b.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		b.Fatal(err)
	}
	return buildProgram(b, "deps", map[string]string{
		"go.mod":  strings.Replace(string(mod), "module huddle", "module depsfloor", 1),
		"go.sum":  string(sum),
		"main.go": src.String(),
	})
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// helloBinary builds a Go program that prints one line and exits, with
// the toolchain that built huddle: the floor of a Go command's start.
func helloBinary(b *testing.B) string {
	b.Helper()
	return buildProgram(b, "hello", map[string]string{
		"go.mod":  "module hello\n\ngo 1.26\n",
		"main.go": "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello\") }\n",
	})
}

// buildProgram writes files (go.mod, main.go, …) into a directory of their
// own and builds the program there as name; it returns the binary's path.
func buildProgram(tb testing.TB, name string, files map[string]string) string {
	tb.Helper()
	src := tb.TempDir()
	for file, text := range files {
		if err := os.WriteFile(filepath.Join(src, file), []byte(text), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	bin := filepath.Join(src, name)
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // as huddle is installed
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("build %s: %v: %s", name, err, out)
	}
	return bin
}
