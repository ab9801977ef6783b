package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// runTable runs the command on args with stdin and returns its exit code
// and outputs.
func runTable(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestTableOfThreePackages reads recorded `go test -bench -count 3` output
// of three packages, with sub-benchmarks, custom metrics and -benchmem, and
// prints a table per package with every benchmark's every metric once, min,
// median and max; the ns/op of a benchmark with metrics of its own is left
// out.
func TestTableOfThreePackages(t *testing.T) {
	code, out, errOut := runTable(t, "", filepath.Join("testdata", "three-packages.txt"))
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	want := `**huddle/inbox**

| benchmark | metric | runs | min | median | max |
|---|---|--:|--:|--:|--:|
| Append | msgs/s | 3 | 55556 | 66667 | 83333 |
| Delivery | floor-p99-us | 3 | 100.0 | 126.0 | 1928 |
| Delivery | p50-us | 3 | 25.00 | 29.00 | 31.00 |
| Delivery | p99-us | 3 | 168.0 | 169.0 | 320.0 |

**huddle/tui**

| benchmark | metric | runs | min | median | max |
|---|---|--:|--:|--:|--:|
| View/spans=1000 | ns/op | 3 | 400000 | 450000 | 500000 |
| View/spans=100000 | ns/op | 3 | 30000000 | 35000000 | 40000000 |

**huddle/llm**

| benchmark | metric | runs | min | median | max |
|---|---|--:|--:|--:|--:|
| TurnOverhead | ns/op | 2 | 24000 | 25000 | 26000 |
| TurnOverhead | B/op | 2 | 4096 | 4098 | 4100 |
| TurnOverhead | allocs/op | 2 | 40.00 | 40.50 | 41.00 |
`
	if out != want {
		t.Errorf("table:\n%s\nwant:\n%s", out, want)
	}
}

// TestStdinJoinsTheFiles: "-" is standard input, read in its place among
// the files; runs of one benchmark from both are one row, and an even
// number of runs has the mean of the middle two as its median.
func TestStdinJoinsTheFiles(t *testing.T) {
	stdin := "pkg: huddle/inbox\nBenchmarkAppend-2 \t 20000 \t 13000 ns/op \t 76923 msgs/s\n"
	code, out, errOut := runTable(t, stdin, filepath.Join("testdata", "three-packages.txt"), "-")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{
		"| Append | msgs/s | 4 | 55556 | 71795 | 83333 |\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no row %q in\n%s", want, out)
		}
	}
	if n := strings.Count(out, "| Append | msgs/s |"); n != 1 {
		t.Errorf("Append msgs/s is on %d rows, want one:\n%s", n, out)
	}
}

// TestFailureFailsAfterTheTable: a failed benchmark makes the exit code 1
// and is named on stderr, and what did run is still in the table.
func TestFailureFailsAfterTheTable(t *testing.T) {
	code, out, errOut := runTable(t, "", filepath.Join("testdata", "one-failed.txt"))
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if want := "| PlanApprovalRoundTrip | p99-ms | 4.500 | 4.500 | 4.500 |\n"; !strings.Contains(out, want) {
		t.Errorf("no row %q in\n%s", want, out)
	}
	for _, want := range []string{"benchtable: failed: --- FAIL: BenchmarkThousandTeammates\n", "benchtable: failed: FAIL\thuddle/team\t9.000s\n"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr %q does not say %q", errOut, want)
		}
	}
}

// TestNoResultsIsAnError: output without a benchmark line (a run whose
// regexp matched nothing) is one error line, not an empty table.
func TestNoResultsIsAnError(t *testing.T) {
	code, out, errOut := runTable(t, "PASS\nok  \thuddle/inbox\t0.010s\n")
	if code != 1 || out != "" || errOut != "benchtable: no benchmark results in the input\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestMissingFileIsOneErrorLine(t *testing.T) {
	code, out, errOut := runTable(t, "", filepath.Join(t.TempDir(), "bench.out"))
	if code != 1 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "benchtable: read benchmark output: open ") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestMarkdownCellsStayClosed: a "|" in a sub-benchmark's name does not
// open a new column.
func TestMarkdownCellsStayClosed(t *testing.T) {
	stdin := "pkg: huddle/ipc\nBenchmarkExec/a|b-2 \t 10 \t 5 ns/op\n"
	code, out, _ := runTable(t, stdin)
	if want := "| Exec/a\\|b | ns/op | 5.000 | 5.000 | 5.000 |\n"; code != 0 || !strings.Contains(out, want) {
		t.Errorf("exit %d, no row %q in\n%s", code, want, out)
	}
}

func TestNumberKeepsFourDigits(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{0, "0"}, {123456.7, "123457"}, {999.96, "1000"}, {122.74, "122.7"}, {25, "25.00"},
		{2.4375, "2.438"}, {0.9062, "0.9062"}, {0.05, "0.05000"}, {0.001, "0.001000"}, {0.0001, "0.0001000"}, {-3.5, "-3.500"},
	} {
		if got := number(tc.v); got != tc.want {
			t.Errorf("number(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

// TestUniformRunsAreSaidOnce: when every row has as many runs, the table
// says so once instead of in a column.
func TestUniformRunsAreSaidOnce(t *testing.T) {
	stdin := "pkg: huddle/inbox\nBenchmarkAppend-2 \t 1 \t 13000 ns/op \t 7 msgs/s\nBenchmarkAppend-2 \t 1 \t 12000 ns/op \t 9 msgs/s\n"
	code, out, errOut := runTable(t, stdin)
	want := "Every row is 2 runs.\n\n**huddle/inbox**\n\n| benchmark | metric | min | median | max |\n|---|---|--:|--:|--:|\n| Append | msgs/s | 7.000 | 8.000 | 9.000 |\n"
	if code != 0 || errOut != "" || out != want {
		t.Errorf("exit %d, stderr %q, table:\n%s\nwant:\n%s", code, errOut, out, want)
	}
}

// TestTargetsBesideTheirBounds: the targets whose rows the input holds are
// tabled last, each median held to its bound (at most or at least) with
// its floor beside it; a target with no row is left out, and an input
// with none of them prints no targets table.
func TestTargetsBesideTheirBounds(t *testing.T) {
	in := `pkg: huddle/internal/cli
BenchmarkStart-2   	40	1 ns/op	4.5 version-x-hello	1.07 version-x-deps
BenchmarkStart-2   	40	1 ns/op	4.4 version-x-hello	1.02 version-x-deps
BenchmarkStart-2   	40	1 ns/op	4.6 version-x-hello	1.10 version-x-deps
BenchmarkAttachFirstFrame/demo-2   	10	1 ns/op	2.9 ratio
pkg: huddle/inbox
BenchmarkAppend-2   	20000	1 ns/op	0.12 of-floor	0.27 of-locked-floor
`
	code, out, errOut := runTable(t, in)
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	want := "\n**Targets** (medians; docs/PERFORMANCE.md)\n\n| figure | median | target | | beside |\n|---|--:|---|---|---|\n" +
		"| `huddle version` start ÷ a Go hello-world | 4.500 | ≤ 2 | not met | version-x-deps 1.070 |\n" +
		"| attach first frame, huddle init's team, ÷ `sh -c echo` | 2.900 | ≤ 4 | met |  |\n" +
		"| `Append` ÷ a plain write | 0.1200 | ≥ 0.5 | not met | of-locked-floor 0.2700 |\n"
	if !strings.HasSuffix(out, want) {
		t.Fatalf("output ends:\n%s\nwant it to end:\n%s", out, want)
	}
	if strings.Contains(out, "status") || strings.Contains(out, "delivery") {
		t.Fatalf("a target without a row was tabled:\n%s", out)
	}
	_, plain, _ := runTable(t, "pkg: huddle/tui\nBenchmarkView-2   \t10\t100 ns/op\n")
	if strings.Contains(plain, "Targets") {
		t.Fatalf("a targets table without any target's row:\n%s", plain)
	}
}
