package cli

import (
	"flag"
	"fmt"
	"io"
	"runtime/debug"
)

func versionFlags(fs *flag.FlagSet) runFunc {
	return runVersion // no flags of its own
}

func runVersion(cl *cmdline) int {
	if code, ok := cl.wantArgs(0, 0, ""); !ok {
		return code
	}
	info, _ := debug.ReadBuildInfo() // nil when the binary has none
	printVersion(cl.stdout, info)
	return exitOK
}

// printVersion says what this binary was built from, as the Go toolchain
// recorded it (runtime/debug.ReadBuildInfo): the module version ("(devel)"
// for a build from a checkout), the commit, its time and whether the tree
// had changes, and the Go version. What was not recorded (go run records no
// commit) is said to be unknown rather than guessed.
func printVersion(w io.Writer, info *debug.BuildInfo) {
	if info == nil {
		fmt.Fprintln(w, "huddle (unknown version: built without module information)")
		return
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	version := info.Main.Version
	if version == "" {
		version = "(devel)"
	}
	fmt.Fprintf(w, "huddle %s\n", version)
	if rev := settings["vcs.revision"]; rev != "" {
		line := "commit " + rev
		if t := settings["vcs.time"]; t != "" {
			line += " (" + t + ")"
		}
		switch settings["vcs.modified"] {
		case "true":
			line += ", with uncommitted changes"
		case "false":
			line += ", clean"
		}
		fmt.Fprintln(w, line)
	} else {
		fmt.Fprintln(w, "commit unknown (the build recorded none: go run, -buildvcs=false, or no git checkout the go command recognised)")
	}
	fmt.Fprintf(w, "built with %s\n", info.GoVersion)
}
