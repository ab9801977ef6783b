// Package dirlead is the lead's operations on a team directory, as the
// tests that act from outside the team run them: each opens the
// directory's files store, calls team's operation and closes it, as a
// command does. Only tests import it.
package dirlead

import (
	"context"

	"huddle/protocol"
	"huddle/store/filestore"
	"huddle/team"
)

// Decide is team.Decide on the team in dir.
func Decide(dir, id string, ev protocol.RequestEvent, feedback, by string) (*protocol.Request, error) {
	st, err := filestore.Open(dir)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return team.Decide(context.Background(), st, id, ev, feedback, by)
}

// AllowForSession is team.AllowForSession on the team in dir.
func AllowForSession(dir, id, by string) (*protocol.Request, error) {
	st, err := filestore.Open(dir)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return team.AllowForSession(context.Background(), st, id, by)
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

// RequestRestart is team.RequestRestart on the team in dir.
func RequestRestart(dir, member string) (*protocol.Member, error) {
	st, err := filestore.Open(dir)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return team.RequestRestart(context.Background(), st, member)
}
