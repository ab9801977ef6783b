package filestore

import (
	"context"
	"fmt"
	"path/filepath"

	"huddle/ipc/trace"
	"huddle/store"
	"huddle/teamdir"
)

// AppendSpan appends one line to traces.jsonl (trace.AppendSpan).
func (s *Store) AppendSpan(ctx context.Context, sp trace.Span) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	line, err := trace.Line(sp)
	if err != nil {
		return err
	}
	if err := s.traces.Append(line); err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	return nil
}

// WatchSpans follows traces.jsonl with a trace.TraceReader, woken by a
// watch on the team directory.
func (s *Store) WatchSpans(ctx context.Context, fromStart bool, fn func(trace.Span)) (store.Subscription, error) {
	r := trace.NewTraceReader(s.dir)
	if !fromStart {
		if _, err := r.Read(); err != nil { // skip what is there
			return nil, err
		}
	}
	drain := func(context.Context) error {
		spans, err := r.Read()
		for _, sp := range spans {
			fn(sp)
		}
		return err
	}
	sub, err := s.follow(ctx, s.dir, filepath.Base(teamdir.TracesPath(s.dir)), drainFunc(drain), 0)
	if err != nil {
		return nil, err
	}
	return sub, nil
}

// Spans reads every span traces.jsonl holds now, oldest first, and how many
// lines were not valid spans (natsstore.Store.Spans's twin).
func (s *Store) Spans(ctx context.Context) ([]trace.Span, int64, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, 0, err
	}
	r := trace.NewTraceReader(s.dir)
	spans, err := r.Read()
	if err != nil {
		return nil, 0, err
	}
	return spans, r.Skipped(), nil
}
