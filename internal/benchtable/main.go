package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run reads the files named in args (standard input when there are none, or
// for "-"), writes the table to stdout and returns the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		args = []string{"-"}
	}
	var runs benchRuns
	for _, name := range args {
		if err := readInput(&runs, name, stdin); err != nil {
			fmt.Fprintf(stderr, "benchtable: %v\n", err)
			return 1
		}
	}
	if len(runs.rows) == 0 {
		fmt.Fprintln(stderr, "benchtable: no benchmark results in the input")
		for _, f := range runs.failures {
			fmt.Fprintf(stderr, "benchtable: failed: %s\n", f)
		}
		return 1
	}
	if err := writeMarkdown(stdout, runs.rows); err != nil {
		fmt.Fprintf(stderr, "benchtable: %v\n", err)
		return 1
	}
	if err := writeTargets(stdout, runs.rows); err != nil {
		fmt.Fprintf(stderr, "benchtable: %v\n", err)
		return 1
	}
	if len(runs.failures) > 0 {
		for _, f := range runs.failures {
			fmt.Fprintf(stderr, "benchtable: failed: %s\n", f)
		}
		return 1
	}
	return 0
}

func readInput(runs *benchRuns, name string, stdin io.Reader) error {
	if name == "-" {
		return runs.read(stdin, "stdin")
	}
	f, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("read benchmark output: %w", err)
	}
	defer f.Close()
	return runs.read(f, name)
}
