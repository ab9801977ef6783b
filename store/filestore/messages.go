package filestore

import (
	"context"
	"fmt"

	"huddle/inbox"
	"huddle/protocol"
	"huddle/store"
)

// Messages reads every message the inbox files hold now, consumed or not
// (natsstore.Store.Messages's twin), as a read-only observer reads them:
// each inbox from the previous generation on, the inboxes by name. Msg.To
// is the inbox; Seq the logical offset. Nothing is consumed.
func (s *Store) Messages(ctx context.Context) ([]store.Delivery, error) {
	names, err := inbox.Names(s.dir)
	if err != nil {
		return nil, fmt.Errorf("messages: %w", err)
	}
	var out []store.Delivery
	for _, name := range names {
		if err := ctxErr(ctx); err != nil {
			return nil, err
		}
		if err := inbox.ReadAll(s.dir, name, func(d inbox.Delivery) {
			out = append(out, store.Delivery{Msg: d.Msg, Seq: d.Offset})
		}); err != nil {
			return nil, fmt.Errorf("messages: %w", err)
		}
	}
	return out, nil
}

// Unread counts the messages of member's inbox its consumer has not
// committed, as the directory observer counts them: the valid lines at or
// past the committed offset (inbox.Unread, which reads from there); an
// inbox with no file has none.
func (s *Store) Unread(ctx context.Context, member string) (int, error) {
	if err := ctxErr(ctx); err != nil {
		return 0, err
	}
	if err := protocol.ValidateName(member); err != nil {
		return 0, err
	}
	n, err := inbox.Unread(s.dir, member)
	if err != nil {
		return 0, fmt.Errorf("unread of %s: %w", member, err)
	}
	return n, nil
}
