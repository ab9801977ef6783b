package teamkit

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"huddle/internal/testkit/dirrecords"
	"huddle/protocol"
	"huddle/store"
	"huddle/team"
)

// RoleEnv names the role a test binary re-executed by its tests plays
// (Main).
const RoleEnv = "HUDDLE_TEAM_TEST_ROLE"

// Main runs the tests, or, when RoleEnv names a role, plays it and exits
// with its code: roles are the tests' exec teammates and racing
// processes. "resolver" is always one (RunResolver).
func Main(m *testing.M, roles map[string]func() int) {
	if role := os.Getenv(RoleEnv); role != "" {
		run, ok := roles[role]
		if role == "resolver" && !ok {
			run, ok = RunResolver, true
		}
		if !ok {
			fmt.Fprintf(os.Stderr, "unknown test role %q\n", role)
			os.Exit(2)
		}
		os.Exit(run())
	}
	os.Exit(m.Run())
}

// RunResolver reads request ids from stdin, one a line, and races to
// resolve each in the team directory $DIR, through its files store, as $ME
// with $EVENT. For each it prints one line: "won <status>", or
// "lost <status> <by> <error text>", or "err <error text>".
func RunResolver() int {
	dir, me := os.Getenv("DIR"), os.Getenv("ME")
	ev := protocol.RequestEvent(os.Getenv("EVENT"))
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		id := in.Text()
		r, err := dirrecords.Resolve(dir, id, team.Resolution{Event: ev, By: me, Text: "from " + me})
		var already *store.AlreadyError
		switch {
		case err == nil:
			fmt.Printf("won %s\n", r.Status)
		case errors.As(err, &already):
			fmt.Printf("lost %s %s %s\n", already.Status, already.By, err)
		default:
			fmt.Printf("err %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		}
	}
	return 0
}
