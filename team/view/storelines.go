package view

import (
	"context"
	"io"
	"sync"

	"huddle/store"
	"huddle/team"
)

// LineSource is where a member view reads a member's log or transcript,
// whole lines at a time: a file (Follower), or a store's copy of it
// (StoreLines, docs/ARCHITECTURE.md, "The team directory and the store" "Logs on a store").
type LineSource interface {
	// Next returns the lines that came since the last call, waiting for
	// some when there are none: io.EOF once closed, ctx's error once ctx
	// ends.
	Next(ctx context.Context) ([][]byte, error)
	Close() error
}

var _ LineSource = (*team.Follower)(nil)

// StoreLines follows a member's log or transcript in a store: what it
// holds, then what is appended.
type StoreLines struct {
	cancel context.CancelFunc
	done   chan struct{}
	wake   chan struct{}
	keep   int

	mu  sync.Mutex
	buf [][]byte
	err error // why the read ended, once it has; io.EOF once closed
}

// FollowStore starts following member's log of kind in st. Of the lines
// not yet taken by Next it keeps the newest keep: a view that shows the
// last few hundred lines does not hold a long log in memory.
func FollowStore(st store.Store, member string, kind store.LogKind, keep int) *StoreLines {
	ctx, cancel := context.WithCancel(context.Background())
	s := &StoreLines{cancel: cancel, done: make(chan struct{}), wake: make(chan struct{}, 1), keep: max(keep, 1)}
	go func() {
		defer close(s.done)
		err := st.ReadLog(ctx, member, kind, true, func(line []byte) {
			s.mu.Lock()
			s.buf = append(s.buf, append([]byte(nil), line...))
			if len(s.buf) >= 2*s.keep {
				// The oldest go keep at a time, not one copy per line
				// (Next hands out the newest keep).
				s.buf = append(s.buf[:0:0], s.buf[len(s.buf)-s.keep:]...)
			}
			s.mu.Unlock()
			s.notify()
		})
		s.mu.Lock()
		s.err = err
		if err == nil || ctx.Err() != nil {
			s.err = io.EOF
		}
		s.mu.Unlock()
		s.notify()
	}()
	return s
}

func (s *StoreLines) notify() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Next returns the lines read since the last call.
func (s *StoreLines) Next(ctx context.Context) ([][]byte, error) {
	for {
		s.mu.Lock()
		lines, err := s.buf, s.err
		s.buf = nil
		s.mu.Unlock()
		if len(lines) > 0 {
			return lines[max(len(lines)-s.keep, 0):], nil
		}
		if err != nil {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.wake:
		}
	}
}

// Close stops the read without waiting for it to end (a UI closes it in
// its update, which must not wait on the network); a Next waiting
// returns io.EOF once it has.
func (s *StoreLines) Close() error {
	s.cancel()
	return nil
}

// Done is closed once the read has ended after Close.
func (s *StoreLines) Done() <-chan struct{} { return s.done }
