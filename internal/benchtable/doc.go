// Command benchtable reads the output of `go test -bench` (the standard
// benchmark format, parsed with golang.org/x/perf/benchfmt), for any number
// of packages and with -count N, and prints a Markdown table per package:
// for every benchmark and every metric it reported (ns/op, B/op, each
// b.ReportMetric unit), the number of runs and their minimum, median and
// maximum. The ns/op of a benchmark that reports metrics of its own is
// the time of its loop, not what it measures: it is left out. Last comes
// the table of huddle's targets (targets.go) whose rows the input holds:
// each median beside its bound, met or not, and the floor it stands beside.
//
//	go test -run '^$' -bench . -count 3 ./inbox | go run ./internal/benchtable
//	go run ./internal/benchtable bench.out
//
// It exits 1 when the output holds a failure (a FAIL or panic line), after
// printing the table of what did run, and when it holds no result at all:
// `make bench` pipes every package's run through it, so a failed benchmark
// fails the target. It imports nothing of huddle.
package main
