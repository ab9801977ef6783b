// Package dirrecords is a team directory's member and request records as
// the tests that act on them from outside the team read and write them:
// each function opens the directory's files store, does one operation and
// closes it, as a command does. Only tests import it.
package dirrecords

import (
	"context"

	"huddle/protocol"
	"huddle/store"
	"huddle/store/filestore"
	"huddle/team"
)

// CreateRequest stores r, a new pending request (store.ErrExists when its
// record is there already).
func CreateRequest(dir string, r *protocol.Request) error {
	st, err := filestore.Open(dir)
	if err != nil {
		return err
	}
	defer st.Close()
	return st.CreateRequest(context.Background(), r)
}

// LoadRequest reads request id, live or archived, its decision applied.
func LoadRequest(dir, id string) (*protocol.Request, error) {
	st, err := filestore.Open(dir)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return st.Request(context.Background(), id)
}

// ListRequests reads every request, live and archived, oldest first; the
// records that do not read are left out (ReadLiveRequests names them).
func ListRequests(dir string) ([]protocol.Request, error) {
	st, err := filestore.Open(dir)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	all, _, err := st.Requests(context.Background())
	return all, err
}

// ReadLiveRequests reads the requests not archived, oldest first, and
// names the records that do not read.
func ReadLiveRequests(dir string) ([]protocol.Request, []store.CorruptError, error) {
	st, err := filestore.Open(dir)
	if err != nil {
		return nil, nil, err
	}
	defer st.Close()
	return st.LiveRequests(context.Background())
}

// ReadHistory reads the newest limit archived requests (0: all), newest
// resolution first, and names the records that do not read.
func ReadHistory(dir string, limit int) ([]protocol.Request, []store.CorruptError, error) {
	st, err := filestore.Open(dir)
	if err != nil {
		return nil, nil, err
	}
	defer st.Close()
	return st.History(context.Background(), limit)
}

// Resolve decides request id as res says (team.Settle): the first
// resolver wins, every later one gets a *store.AlreadyError.
func Resolve(dir, id string, res team.Resolution) (*protocol.Request, error) {
	st, err := filestore.Open(dir)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return team.Settle(context.Background(), st, id, res)
}

// Archive moves the final request id to requests/done/, as the runtime
// does.
func Archive(dir, id string) error {
	st, err := filestore.Open(dir)
	if err != nil {
		return err
	}
	defer st.Close()
	return st.Archive(context.Background(), id)
}

// WriteMember rewrites m's status record.
func WriteMember(dir string, m *protocol.Member) error {
	st, err := filestore.Open(dir)
	if err != nil {
		return err
	}
	defer st.Close()
	return st.PutMember(context.Background(), m)
}

// LoadMember reads member name's status record.
func LoadMember(dir, name string) (*protocol.Member, error) {
	st, err := filestore.Open(dir)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	ms, err := st.Member(context.Background(), name, team.LostAfter)
	if err != nil {
		return nil, err
	}
	return &ms.Member, nil
}
