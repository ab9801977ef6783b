package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"huddle/ipc/trace"
	"huddle/protocol"
	"huddle/store"
	"huddle/team"
	"huddle/teamdir"
)

// storeOpTimeout bounds one operation on the store: a connection that is
// down holds an operation this long at the most (a reconnect within it
// goes on unnoticed).
const storeOpTimeout = 30 * time.Second

// shared is the runtime's way to the team's shared state in a store.Store
// (docs/ARCHITECTURE.md, "The team directory and the store"): the inboxes,
// the request and member records, the dead letters and the spans, each
// operation bounded by storeOpTimeout. What a runtime on one machine writes
// there, the runtimes on the others read; everything else it writes (logs,
// transcripts, histories, executions.jsonl) stays in its local directory.
type shared struct {
	st store.Store
	// ctx is the consumers' context: the runtime's.
	ctx context.Context

	mu   sync.Mutex
	subs map[string]store.Subscription
}

func newShared(ctx context.Context, st store.Store) *shared {
	return &shared{st: st, ctx: ctx, subs: map[string]store.Subscription{}}
}

// op is the context of one operation: not the runtime's, which has ended
// when the last records (stopped) are written.
func op() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), storeOpTimeout)
}

func (s *shared) appendTo(member string, m *protocol.Message) error {
	ctx, cancel := op()
	defer cancel()
	return s.st.Append(ctx, member, m)
}

// consume starts member's durable consumer; its deliveries reach h as the
// team directory's do, the stream's sequence as the offset.
func (s *shared) consume(member string, h store.Handler) error {
	sub, err := s.st.Consume(s.ctx, member, func(ctx context.Context, d store.Delivery) error {
		return h(ctx, store.Delivery{Msg: d.Msg, Seq: d.Seq, Redelivery: d.Redelivery})
	})
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.subs[member] = sub
	s.mu.Unlock()
	return nil
}

// stopConsuming stops member's consumer: its lease is lost, and whoever
// holds it now consumes its inbox.
func (s *shared) stopConsuming(member string) error {
	s.mu.Lock()
	sub := s.subs[member]
	delete(s.subs, member)
	s.mu.Unlock()
	if sub == nil {
		return nil
	}
	return sub.Stop()
}

func (s *shared) stopConsumers() error {
	s.mu.Lock()
	subs := s.subs
	s.subs = map[string]store.Subscription{}
	s.mu.Unlock()
	var errs []error
	for _, sub := range subs {
		errs = append(errs, sub.Stop())
	}
	return errors.Join(errs...)
}

func (s *shared) decide(id string, ev protocol.RequestEvent, feedback, by string) (*protocol.Request, error) {
	ctx, cancel := op()
	defer cancel()
	return team.Decide(ctx, s.st, id, ev, feedback, by)
}

func (s *shared) send(t *team.Team, from, to, text string) error {
	ctx, cancel := op()
	defer cancel()
	return team.Send(ctx, s.st, t, from, to, text)
}

func (s *shared) broadcast(t *team.Team, from, text string) (int, error) {
	ctx, cancel := op()
	defer cancel()
	return team.Broadcast(ctx, s.st, t, from, text)
}

func (s *shared) deadLetter(source string, off int64, reason string, raw []byte) error {
	ctx, cancel := op()
	defer cancel()
	return s.st.DeadLetter(ctx, protocol.DeadLetterLine{TS: protocol.FormatTime(time.Now()), Source: source, Offset: off, Reason: reason, Raw: string(raw)})
}

func (s *shared) createRequest(r *protocol.Request) error {
	ctx, cancel := op()
	defer cancel()
	return s.st.CreateRequest(ctx, r)
}

// loadRequest reads a record, its decision applied; none is os.ErrNotExist,
// as on a team directory.
func (s *shared) loadRequest(id string) (*protocol.Request, error) {
	ctx, cancel := op()
	defer cancel()
	read := s.st.Request
	if p, ok := s.st.(store.Peeker); ok {
		read = p.Peek // the record's rewrite is its resolver's
	}
	r, err := read(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("request %s: %w", id, os.ErrNotExist)
	}
	return r, err
}

// loadLiveRequest is loadRequest of a request that can still change (a
// store that archives reads no archived record for it).
func (s *shared) loadLiveRequest(id string) (*protocol.Request, error) {
	p, ok := s.st.(store.Peeker)
	if !ok {
		return s.loadRequest(id)
	}
	ctx, cancel := op()
	defer cancel()
	return p.PeekLive(ctx, id)
}

func (s *shared) resolve(r *protocol.Request, res team.Resolution) (*protocol.Request, error) {
	ctx, cancel := op()
	defer cancel()
	return team.Settle(ctx, s.st, r.ID, res)
}

// apply reads r again: the store applies a decision on every read.
func (s *shared) apply(r *protocol.Request) (*protocol.Request, error) {
	if r.Status.IsTerminal() {
		return r, nil
	}
	return s.loadRequest(r.ID)
}

func (s *shared) decided(id string) (*protocol.Request, error) { return s.loadRequest(id) }

// fromDecision is what a corrupt record's decision alone says: the store
// gives it with the record's *store.CorruptError.
func (s *shared) fromDecision(id string) (*protocol.Request, bool) {
	r, err := s.loadRequest(id)
	var ce *store.CorruptError
	if errors.As(err, &ce) && r != nil {
		return r, true
	}
	return nil, false
}

func (s *shared) liveRequests() ([]protocol.Request, []store.CorruptError, error) {
	ctx, cancel := op()
	defer cancel()
	return s.st.LiveRequests(ctx)
}

// archive takes final records out of the store's live ones
// (store.Store.Archive), so the next tick does not list them.
func (s *shared) archive(ids []string) error {
	ctx, cancel := op()
	defer cancel()
	return s.st.Archive(ctx, ids...)
}

func (s *shared) writeMember(m *protocol.Member) error {
	ctx, cancel := op()
	defer cancel()
	return s.st.PutMember(ctx, m)
}

func (s *shared) loadMember(name string) (*protocol.Member, error) {
	ctx, cancel := op()
	defer cancel()
	ms, err := s.st.Member(ctx, name, store.RecordOnly) // the runtime knows who runs
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("member %s: %w", name, os.ErrNotExist)
	}
	if err != nil {
		return nil, err
	}
	return &ms.Member, nil
}

func (s *shared) readMembers() ([]protocol.Member, []store.CorruptError, error) {
	ctx, cancel := op()
	defer cancel()
	states, bad, err := s.st.Members(ctx, team.LostAfter)
	if err != nil {
		return nil, nil, err
	}
	out := make([]protocol.Member, len(states))
	for i := range states {
		out[i] = states[i].Member
	}
	return out, bad, nil
}

// held reads every message the store holds and keeps member's: on NATS
// what its consumer has not committed, and what it has until retention
// purges it (one to two PurgeIntervals, docs/ARCHITECTURE.md, "The team directory and the store").
func (s *shared) held(member string) ([]protocol.Message, error) {
	hr, ok := s.st.(store.MessageReader)
	if !ok {
		return nil, fmt.Errorf("this store cannot read %s's inbox without consuming it", member)
	}
	ctx, cancel := op()
	defer cancel()
	ds, err := hr.Messages(ctx)
	if err != nil {
		return nil, err
	}
	var out []protocol.Message
	for _, d := range ds {
		if d.Msg.To == member {
			out = append(out, d.Msg)
		}
	}
	return out, nil
}

func (s *shared) appendSpan(sp trace.Span) error {
	ctx, cancel := op()
	defer cancel()
	return s.st.AppendSpan(ctx, sp)
}

// settle brings r in line with an answer that arrived as an inbox line.
// A pending request is resolved by it (a peer that writes lines alone,
// with no decision); a final one must already say the same, or the answer
// is stale.
func (sh *shared) settle(r *protocol.Request, answer team.Resolution) (*protocol.Request, error) {
	if r.Status == protocol.RequestPending {
		nr, err := sh.resolve(r, answer)
		if err == nil {
			return nr, nil
		}
		var already *store.AlreadyError
		if !errors.As(err, &already) {
			return nil, err
		}
		if r, err = sh.loadRequest(r.ID); err != nil {
			return nil, err
		}
	}
	if want, _ := protocol.RequestPending.Next(r.Kind, answer.Event); r.Status != want {
		return nil, fmt.Errorf("stale answer: request %s already %s by %s", r.ID, r.Status, r.ResolvedBy)
	}
	return r, nil
}

// resolveID is Resolve through sh: it reads id's record first.
func (sh *shared) resolveID(id string, res team.Resolution) (*protocol.Request, error) {
	r, err := sh.loadRequest(id)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no request %s", id)
		}
		return nil, err
	}
	return sh.resolve(r, res)
}

// applyID brings id's record in line with its decision.
func (sh *shared) applyID(id string) (*protocol.Request, error) {
	r, err := sh.loadRequest(id)
	if err != nil {
		return nil, err
	}
	return sh.apply(r)
}

// deadLetterMsg dead-letters an inbox delivery.
func (sh *shared) deadLetterMsg(member string, d store.Delivery, reason string) error {
	raw, _ := json.Marshal(d.Msg)
	return sh.deadLetter(teamdir.InboxRel(member), d.Seq, reason, raw)
}
