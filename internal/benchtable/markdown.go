package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// writeMarkdown prints rows as one Markdown table.
func writeMarkdown(w io.Writer, rows []*row) error {
	var s strings.Builder
	s.WriteString("| package | benchmark | metric | runs | min | median | max |\n")
	s.WriteString("|---|---|---|--:|--:|--:|--:|\n")
	for _, r := range rows {
		lo, med, hi := summary(r.values)
		fmt.Fprintf(&s, "| %s | %s | %s | %d | %s | %s | %s |\n",
			cell(r.pkg), cell(r.bench), cell(r.unit), len(r.values), number(lo), number(med), number(hi))
	}
	_, err := io.WriteString(w, s.String())
	return err
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
