// Package files opens the files store of a team directory for a test, as
// internal/cli opens it for a command. Only tests import it.
package files

import (
	"testing"

	"huddle/inbox"
	"huddle/store/filestore"
)

// Open is the files store of the team directory dir, with the consumers'
// inbox options in when given, closed when the test ends.
func Open(tb testing.TB, dir string, in ...inbox.Options) *filestore.Store {
	tb.Helper()
	var opts filestore.Options
	if len(in) > 0 {
		opts.Inbox = in[0]
	}
	st, err := filestore.OpenWith(dir, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	return st
}
