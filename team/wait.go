package team

import (
	"context"
	"errors"

	"huddle/protocol"
	"huddle/store"
)

// WaitRequest waits until request id of the team st keeps is final and
// returns its record, or ctx's error. It reads the record again whenever
// the store's watch says it changed (store.Await), not on a timer: on a
// team directory its rewrite, its decision file and its move to
// requests/done/ all say so.
func WaitRequest(ctx context.Context, st store.Store, id string) (*protocol.Request, error) {
	if err := protocol.ValidateID(id); err != nil {
		return nil, err
	}
	var r *protocol.Request
	err := store.Await(ctx, st, store.ChangeRequest, id, func() (bool, error) {
		var err error
		r, err = st.Request(ctx, id)
		return err == nil && r.Status.IsTerminal(), err
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// WaitMember waits until member's record in st satisfies done and returns
// it, or ctx's error: it reads the record again whenever the store's watch
// says it changed (store.Await); a member with no record yet is waited
// for.
func WaitMember(ctx context.Context, st store.Store, member string, done func(*protocol.Member) bool) (*protocol.Member, error) {
	if err := protocol.ValidateName(member); err != nil {
		return nil, err
	}
	var m *protocol.Member
	err := store.Await(ctx, st, store.ChangeMember, member, func() (bool, error) {
		ms, err := st.Member(ctx, member, LostAfter)
		if errors.Is(err, store.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		m = &ms.Member
		return done(m), nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}
