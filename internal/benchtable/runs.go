package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"

	"golang.org/x/perf/benchfmt"
)

// row is one benchmark's one metric, with a value per run in input order.
type row struct {
	pkg, bench, unit string
	values           []float64
}

type rowKey struct{ pkg, bench, unit string }

// benchRuns gathers the rows of every input, in the order they first
// appear, and the lines that tell of a failure.
type benchRuns struct {
	rows     []*row
	index    map[rowKey]*row
	failures []string
}

// read adds what the benchmark output in r holds.
func (b *benchRuns) read(r io.Reader, fileName string) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("read %s: %w", fileName, err)
	}
	b.failures = append(b.failures, failureLines(data)...)
	br := benchfmt.NewReader(bytes.NewReader(data), fileName)
	for br.Scan() {
		res, ok := br.Result().(*benchfmt.Result)
		if !ok {
			continue // unit metadata, or a line benchfmt could not read
		}
		bench := benchName(res.Name)
		for _, v := range res.Values {
			value, unit := v.Value, v.Unit
			if v.OrigUnit != "" { // the unit as the benchmark reported it, not benchfmt's tidied one
				value, unit = v.OrigValue, v.OrigUnit
			}
			b.add(rowKey{res.GetConfig("pkg"), bench, unit}, value)
		}
	}
	if err := br.Err(); err != nil {
		return fmt.Errorf("read %s: %w", fileName, err)
	}
	return nil
}

func (b *benchRuns) add(k rowKey, value float64) {
	if b.index == nil {
		b.index = make(map[rowKey]*row)
	}
	r := b.index[k]
	if r == nil {
		r = &row{pkg: k.pkg, bench: k.bench, unit: k.unit}
		b.index[k] = r
		b.rows = append(b.rows, r)
	}
	r.values = append(r.values, value)
}

// benchName is the full name without the "Benchmark" prefix and the
// GOMAXPROCS suffix: "BenchmarkView/spans=1000-2" is "View/spans=1000".
func benchName(n benchfmt.Name) string {
	base, parts := n.Parts()
	var s strings.Builder
	s.WriteString(strings.TrimPrefix(string(base), "Benchmark"))
	for _, p := range parts {
		if p[0] == '-' { // GOMAXPROCS, always the last part
			break
		}
		s.Write(p)
	}
	return s.String()
}

// failureLines are the lines of go test's output that say something failed.
func failureLines(data []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "FAIL") || strings.HasPrefix(strings.TrimSpace(line), "--- FAIL") || strings.HasPrefix(line, "panic:") {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}

// summary is the minimum, median and maximum of a row's values.
func summary(values []float64) (lo, median, hi float64) {
	s := slices.Clone(values)
	slices.Sort(s)
	n := len(s)
	median = s[n/2]
	if n%2 == 0 {
		median = (s[n/2-1] + s[n/2]) / 2
	}
	return s[0], median, s[n-1]
}
