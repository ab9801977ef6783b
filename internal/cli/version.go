package cli

import (
	"flag"
	"fmt"
	"io"
	"runtime/debug"
)

func versionFlags(fs *flag.FlagSet) runFunc {
	asJSON := fs.Bool("json", false, "print it as one JSON object: version, commit, commit_time, modified, go")
	return func(cl *Cmdline) int { return runVersion(cl, *asJSON) }
}

func runVersion(cl *Cmdline, asJSON bool) int {
	if code, ok := cl.WantArgs(0, 0, ""); !ok {
		return code
	}
	info, _ := debug.ReadBuildInfo() // nil when the binary has none
	if asJSON {
		if err := writeJSON(cl.Stdout, versionOf(info)); err != nil {
			return cl.Fail(err)
		}
		return ExitOK
	}
	printVersion(cl.Stdout, info)
	return ExitOK
}

// buildVersion is what `huddle version --json` prints: the fields the
// build recorded, empty (commit, its time) or null (modified) where it
// recorded none.
type buildVersion struct {
	Version    string `json:"version"`
	Commit     string `json:"commit"`
	CommitTime string `json:"commit_time"`
	Modified   *bool  `json:"modified"`
	Go         string `json:"go"`
}

func versionOf(info *debug.BuildInfo) buildVersion {
	if info == nil {
		return buildVersion{}
	}
	v := buildVersion{Version: info.Main.Version, Go: info.GoVersion}
	if v.Version == "" {
		v.Version = "(devel)"
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.CommitTime = s.Value
		case "vcs.modified":
			m := s.Value == "true"
			v.Modified = &m
		}
	}
	return v
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
	v := versionOf(info)
	fmt.Fprintf(w, "huddle %s\n", v.Version)
	if v.Commit != "" {
		line := "commit " + v.Commit
		if v.CommitTime != "" {
			line += " (" + v.CommitTime + ")"
		}
		switch {
		case v.Modified == nil:
		case *v.Modified:
			line += ", with uncommitted changes"
		default:
			line += ", clean"
		}
		fmt.Fprintln(w, line)
	} else {
		fmt.Fprintln(w, "commit unknown (the build recorded none: go run, -buildvcs=false, or no git checkout the go command recognised)")
	}
	fmt.Fprintf(w, "built with %s\n", v.Go)
}
