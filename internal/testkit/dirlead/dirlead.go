// Package dirlead is a team directory as the tests that act from outside
// the team reach it: its files store as a command opens it (Store), and
// the lead's operations, each of which opens that store, calls team's
// operation and closes it, as a command does. Only tests import it.
package dirlead

import (
	"context"
	"testing"

	"huddle/protocol"
	"huddle/store/filestore"
	"huddle/team"
)

// Store is the files store of the team directory dir, as a command opens
// it, closed when the test ends.
func Store(t testing.TB, dir string) *filestore.Store {
	t.Helper()
	st, err := filestore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// Decide is team.Decide on the team in dir.
func Decide(dir, id string, ev protocol.RequestEvent, feedback, by string) (*protocol.Request, error) {
	st, err := filestore.Open(dir)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return team.Decide(context.Background(), st, id, ev, feedback, by)
}

// Send is team.Send on the team in dir.
func Send(dir string, t *team.Team, from, to, text string) error {
	st, err := filestore.Open(dir)
	if err != nil {
		return err
	}
	defer st.Close()
	return team.Send(context.Background(), st, t, from, to, text)
}

// RequestShutdown is team.RequestShutdown on the team in dir.
func RequestShutdown(dir, member, reason string) (*protocol.Request, error) {
	t, err := team.Load(dir)
	if err != nil {
		return nil, err
	}
	st, err := filestore.Open(dir)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return team.RequestShutdown(context.Background(), st, t, member, reason)
}
