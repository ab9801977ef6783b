package team

import (
	"context"

	"huddle/protocol"
	"huddle/store/filestore"
)

// The lead's operations on a team directory, as a command runs them: on
// the directory's files store (internal/testkit/dirlead for the other
// packages' tests, which this package's cannot import).

func dirDecide(dir, id string, ev protocol.RequestEvent, feedback, by string) (*protocol.Request, error) {
	st, err := filestore.Open(dir)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return Decide(context.Background(), st, id, ev, feedback, by)
}

func dirRequestShutdown(dir, member, reason string) (*protocol.Request, error) {
	t, err := Load(dir)
	if err != nil {
		return nil, err
	}
	st, err := filestore.Open(dir)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return RequestShutdown(context.Background(), st, t, member, reason)
}

func dirWaitRequest(ctx context.Context, dir, id string) (*protocol.Request, error) {
	st, err := filestore.Open(dir)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return WaitRequest(ctx, st, id)
}

func dirDeadLetters(dir string) ([]DeadLetter, int, error) {
	st, err := filestore.Open(dir)
	if err != nil {
		return nil, 0, err
	}
	defer st.Close()
	return DeadLetters(context.Background(), st)
}
