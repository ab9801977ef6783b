package main

import (
	"fmt"
	"io"
	"strconv"
)

// target is a figure huddle aims at: the median of one row (a package's
// benchmark's metric) held to a bound, and, where it has one, the row of
// the floor it stands beside.
type target struct {
	figure           string
	pkg, bench, unit string
	atMost           bool // the median must be at most bound; else at least
	bound            float64
	floor            string // the floor row's unit, same benchmark; "" if none
}

// targets are the figures docs/PERFORMANCE.md holds huddle to ("The
// floors, and where huddle stands"), each a ratio to its floor or a bound
// the issues set.
var targets = []target{
	{"`huddle version` start ÷ a Go hello-world", "huddle/internal/cli", "Start", "version-x-hello", true, 2, "version-x-deps"},
	{"`huddle status` start ÷ a Go hello-world", "huddle/internal/cli", "Start", "status-x-hello", true, 2, "status-x-deps"},
	{"`huddle approve` start ÷ a Go hello-world", "huddle/internal/cli", "Start", "approve-x-hello", true, 2, "approve-x-deps"},
	{"`huddle send` start ÷ a Go hello-world", "huddle/internal/cli", "Start", "send-x-hello", true, 2, "send-x-deps"},
	{"attach first frame, huddle init's team, ÷ `sh -c echo`", "huddle/internal/cli", "AttachFirstFrame/demo", "ratio", true, 4, ""},
	{"attach first frame, 5,000 members (ms)", "huddle/internal/cli", "AttachFirstFrame/members=5000", "first-frame-ms", true, 300, ""},
	{"attach idle ÷ a bare ticker at the frame rate", "huddle/internal/cli", "AttachIdle", "cpu-ratio", true, 1.2, "wakeups/s"},
	{"runtime idle, 5,000 teammates (% of a core)", "huddle/team/supervisor", "IdleRuntime/members=5000", "cpu-%", true, 0.1, ""},
	{"UI ÷ runtime CPU per message, 200 a second", "huddle/internal/cli", "AttachUnderLoad/rate=200", "ui/runtime", true, 1, ""},
	{"UI ÷ runtime CPU per message, 1,000 a second", "huddle/internal/cli", "AttachUnderLoad/rate=1000", "ui/runtime", true, 1, ""},
	{"`Append` ÷ a plain write", "huddle/inbox", "Append", "of-floor", false, 0.5, "of-locked-floor"},
	{"delivery p50 across processes ÷ its floor", "huddle/inbox", "DeliveryAcrossProcesses", "p50-ratio", true, 1.3, ""},
	{"delivery p99 across processes ÷ its floor", "huddle/inbox", "DeliveryAcrossProcesses", "p99-ratio", true, 1.5, ""},
}

// writeTargets writes the table of the targets whose rows the input holds,
// their medians beside their bounds; nothing when it holds none.
func writeTargets(w io.Writer, rows []*row) error {
	byKey := make(map[rowKey]*row, len(rows))
	for _, r := range rows {
		byKey[rowKey{r.pkg, r.bench, r.unit}] = r
	}
	median := func(pkg, bench, unit string) (float64, bool) {
		r := byKey[rowKey{pkg, bench, unit}]
		if r == nil {
			return 0, false
		}
		_, m, _ := summary(r.values)
		return m, true
	}
	var lines []string
	for _, t := range targets {
		m, ok := median(t.pkg, t.bench, t.unit)
		if !ok {
			continue
		}
		b := strconv.FormatFloat(t.bound, 'g', -1, 64)
		bound, met := "≥ "+b, m >= t.bound
		if t.atMost {
			bound, met = "≤ "+b, m <= t.bound
		}
		verdict := "not met"
		if met {
			verdict = "met"
		}
		floor := ""
		if f, ok := median(t.pkg, t.bench, t.floor); ok {
			floor = fmt.Sprintf("%s %s", cell(t.floor), number(f))
		}
		lines = append(lines, fmt.Sprintf("| %s | %s | %s | %s | %s |\n", cell(t.figure), number(m), bound, verdict, floor))
	}
	if len(lines) == 0 {
		return nil
	}
	if _, err := fmt.Fprint(w, "\n**Targets** (medians; docs/PERFORMANCE.md)\n\n| figure | median | target | | beside |\n|---|--:|---|---|---|\n"); err != nil {
		return err
	}
	for _, l := range lines {
		if _, err := io.WriteString(w, l); err != nil {
			return err
		}
	}
	return nil
}
