package team

import (
	"context"
	"testing"

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

func dirSend(dir string, t *Team, from, to, text string) error {
	st, err := filestore.Open(dir)
	if err != nil {
		return err
	}
	defer st.Close()
	return Send(context.Background(), st, t, from, to, text)
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

func dirRequestRestart(dir, member string) (*protocol.Member, error) {
	st, err := filestore.Open(dir)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return RequestRestart(context.Background(), st, member)
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

// dirStore is the files store of the team directory dir, closed when the
// test ends; opts are its consumers' and watches' options.
func dirStore(t *testing.T, dir string, opts ...filestore.Options) *filestore.Store {
	t.Helper()
	var o filestore.Options
	if len(opts) > 0 {
		o = opts[0]
	}
	st, err := filestore.OpenWith(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}
