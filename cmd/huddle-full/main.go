// Command huddle-full is every command of huddle, those that link the
// runtime, the screen, the model SDKs and the servers included. huddle
// runs it (from beside itself) for those commands, with the same
// arguments; it can be run by its own name too.
package main

import (
	"os"

	"huddle/internal/cli/full"
)

func main() { os.Exit(full.Main(os.Args[1:], os.Stdout, os.Stderr)) }
