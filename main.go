// Command huddle is a terminal supervisor for teams of agents. Its commands
// are in package internal/cli.
package main

import (
	"os"

	"huddle/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr)) }
