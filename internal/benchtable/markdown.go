package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// writeMarkdown prints rows as one Markdown table per package, in the
// order the packages first appear. A benchmark that reports a metric of
// its own (b.ReportMetric) says what it measures: its ns/op, the time of
// its loop, is left out. Runs get a column only when rows differ in them.
func writeMarkdown(w io.Writer, rows []*row) error {
	own := map[rowKey]bool{} // {pkg, bench, ""}: the benchmark reports its own metric
	var pkgs []string
	for _, r := range rows {
		if !slices.Contains(pkgs, r.pkg) {
			pkgs = append(pkgs, r.pkg)
		}
		if !standardUnit(r.unit) {
			own[rowKey{r.pkg, r.bench, ""}] = true
		}
	}
	// Runs get a column only when they differ between rows.
	runs := len(rows[0].values)
	for _, r := range rows {
		if len(r.values) != runs {
			runs = 0
		}
	}
	var s strings.Builder
	switch {
	case runs == 1:
		s.WriteString("Every row is one run.\n\n")
	case runs > 1:
		fmt.Fprintf(&s, "Every row is %d runs.\n\n", runs)
	}
	for i, pkg := range pkgs {
		if i > 0 {
			s.WriteString("\n")
		}
		fmt.Fprintf(&s, "**%s**\n\n", cell(pkg))
		if runs > 0 {
			s.WriteString("| benchmark | metric | min | median | max |\n|---|---|--:|--:|--:|\n")
		} else {
			s.WriteString("| benchmark | metric | runs | min | median | max |\n|---|---|--:|--:|--:|--:|\n")
		}
		for _, r := range rows {
			if r.pkg != pkg || r.unit == "ns/op" && own[rowKey{r.pkg, r.bench, ""}] {
				continue
			}
			lo, med, hi := summary(r.values)
			fmt.Fprintf(&s, "| %s | %s | ", cell(r.bench), cell(r.unit))
			if runs == 0 {
				fmt.Fprintf(&s, "%d | ", len(r.values))
			}
			fmt.Fprintf(&s, "%s | %s | %s |\n", number(lo), number(med), number(hi))
		}
	}
	_, err := io.WriteString(w, s.String())
	return err
}

// standardUnit says whether go test reports unit itself.
func standardUnit(unit string) bool {
	switch unit {
	case "ns/op", "B/op", "allocs/op", "MB/s":
		return true
	}
	return false
}

// cell keeps a value from closing its table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// number prints v with about four significant digits, the way go test
// prints a benchmark's values.
func number(v float64) string {
	digits := 7
	switch y := math.Abs(v); {
	case y == 0 || y >= 999.95:
		digits = 0
	case y >= 99.995:
		digits = 1
	case y >= 9.9995:
		digits = 2
	case y >= 0.99995:
		digits = 3
	case y >= 0.099995:
		digits = 4
	case y >= 0.0099995:
		digits = 5
	case y >= 0.00099995:
		digits = 6
	}
	return strconv.FormatFloat(v, 'f', digits, 64)
}
