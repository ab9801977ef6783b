package team

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"huddle/inbox"
	"huddle/ipc/trace"
	"huddle/protocol"
	"huddle/store"
	"huddle/teamdir"
)

// shared is the team's state that a runtime shares with the other
// processes of the team (docs/ARCHITECTURE.md, "The team directory and the store", "What is wired"): the inboxes,
// the request records, the member records, the dead letters and the spans.
// The team directory (dirShared) and a store (storeShared, team/storeshared.go)
// implement it; everything else the runtime writes (logs, transcripts,
// histories, executions.jsonl, restart/, the archive) stays in the local
// directory whatever the state is kept in.
type shared interface {
	// appendTo writes m to member's inbox.
	appendTo(member string, m *protocol.Message) error
	// consume hands member's inbox to h, from what was last committed on;
	// stopConsuming stops every consumer and waits for them.
	consume(member string, h inbox.Handler) error
	stopConsuming(member string) error
	stopConsumers() error
	// decide, send and broadcast are the lead's Decide, Send and Broadcast
	// (lead.go) on this state.
	decide(id string, ev protocol.RequestEvent, feedback, by string) (*protocol.Request, error)
	send(t *Team, from, to, text string) error
	broadcast(t *Team, from, text string) (int, error)
	// deadLetter records refused input: source is where it came from.
	deadLetter(source string, off int64, reason string, raw []byte) error

	// createRequest writes a new pending record (store.ErrExists when there is one).
	createRequest(r *protocol.Request) error
	// loadRequest reads a record (an error wrapping os.ErrNotExist when
	// there is none, a *store.CorruptError when it cannot be read).
	loadRequest(id string) (*protocol.Request, error)
	// resolve decides a pending request: the first resolver wins, a later
	// one gets an *store.AlreadyError.
	resolve(r *protocol.Request, res Resolution) (*protocol.Request, error)
	// apply brings r in line with its decision, when it has one.
	apply(r *protocol.Request) (*protocol.Request, error)
	// decided is id's record as its decision makes it, without a write.
	decided(id string) (*protocol.Request, error)
	// fromDecision is what id's decision alone says (false: none).
	fromDecision(id string) (*protocol.Request, bool)
	// liveRequests lists the records not archived, oldest first, and names
	// those it could not read.
	liveRequests() ([]protocol.Request, []store.CorruptError, error)
	// archive files a final record away; a store keeps its records.
	archive(r *protocol.Request) error

	// writeMember rewrites a member's status record.
	writeMember(m *protocol.Member) error
	loadMember(name string) (*protocol.Member, error)
	readMembers() ([]protocol.Member, []store.CorruptError, error)
	// held reads the messages member's inbox still holds, committed ones
	// included while they are kept (a directory's previous generations; a
	// store's until its retention takes them), oldest first, without
	// taking any: where a restarted exec teammate's open invocations are
	// found again (replay.go).
	held(member string) ([]protocol.Message, error)

	// appendSpan records one span of a call.
	appendSpan(s trace.Span) error
}

// dirShared is the team directory: exactly the files of docs/ARCHITECTURE.md, "The team directory and the store",
// through inbox, teamdir and ipc/trace.
type dirShared struct {
	dir string
	w   *inbox.Watcher // nil for a lead's one-off operation (lead.go)

	mu sync.Mutex
	// live is the last listing of requests/, reused while it holds.
	live liveListing
}

func (d *dirShared) appendTo(member string, m *protocol.Message) error {
	return inbox.Append(d.dir, member, m)
}

func (d *dirShared) consume(member string, h inbox.Handler) error {
	return d.w.Consume(member, h)
}

// stopConsuming is not needed on one machine: the team directory's
// runtime lock is the runtime's, and its consumers stop with it.
func (d *dirShared) stopConsuming(string) error { return nil }

func (d *dirShared) stopConsumers() error { return d.w.Close() }

// decide is the lead's Decide on the directory's own records.
func (d *dirShared) decide(id string, ev protocol.RequestEvent, feedback, by string) (*protocol.Request, error) {
	by, err := checkDecision(id, ev, feedback, by)
	if err != nil {
		return nil, err
	}
	r, err := LoadRequest(d.dir, id)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no request %s", id)
		}
		return nil, err
	}
	if err := checkPlan(r); err != nil {
		return nil, err
	}
	r, err = resolve(d.dir, r, Resolution{Event: ev, By: by, Text: feedback})
	if err != nil {
		return nil, err
	}
	if err := inbox.Append(d.dir, r.From, decisionMessage(r, ev, feedback)); err != nil {
		return r, toldFailed(r, err)
	}
	return r, nil
}

func (d *dirShared) send(t *Team, from, to, text string) error {
	m, err := plainMessage(t, from, to, text)
	if err != nil {
		return err
	}
	return inbox.Append(d.dir, to, m)
}

func (d *dirShared) broadcast(t *Team, from, text string) (int, error) {
	msgs, err := broadcastMessages(t, from, text)
	if err != nil {
		return 0, err
	}
	for i, m := range msgs {
		if err := inbox.Append(d.dir, m.To, m); err != nil {
			return i, err
		}
	}
	return len(msgs), nil
}

func (d *dirShared) deadLetter(source string, off int64, reason string, raw []byte) error {
	return inbox.WriteDeadLetter(d.dir, source, off, reason, raw)
}

func (d *dirShared) createRequest(r *protocol.Request) error { return CreateRequest(d.dir, r) }

func (d *dirShared) loadRequest(id string) (*protocol.Request, error) { return LoadRequest(d.dir, id) }

func (d *dirShared) resolve(r *protocol.Request, res Resolution) (*protocol.Request, error) {
	return resolve(d.dir, r, res)
}

func (d *dirShared) apply(r *protocol.Request) (*protocol.Request, error) {
	return applyDecision(d.dir, r, nil)
}

func (d *dirShared) decided(id string) (*protocol.Request, error) { return decidedRequest(d.dir, id) }

func (d *dirShared) fromDecision(id string) (*protocol.Request, bool) { return FromDecision(d.dir, id) }

// liveRequests reuses the last listing of requests/ while it holds
// (liveListing), else lists again.
func (d *dirShared) liveRequests() ([]protocol.Request, []store.CorruptError, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if reqs, ok := d.live.reuse(d.dir); ok {
		return reqs, nil, nil
	}
	mod := dirModTime(teamdir.RequestsDirPath(d.dir)) // before the listing: a change during it lists again
	all, bad, err := ReadLiveRequests(d.dir)
	if err != nil {
		return nil, nil, err
	}
	d.live.keep(mod, all)
	return all, bad, nil
}

// relist makes the next liveRequests list requests/ again.
func (d *dirShared) relist() {
	d.mu.Lock()
	d.live.listed = time.Time{}
	d.mu.Unlock()
}

func (d *dirShared) archive(r *protocol.Request) error { return Archive(d.dir, r) }

func (d *dirShared) writeMember(m *protocol.Member) error { return WriteMember(d.dir, m) }

func (d *dirShared) loadMember(name string) (*protocol.Member, error) { return LoadMember(d.dir, name) }

func (d *dirShared) readMembers() ([]protocol.Member, []store.CorruptError, error) {
	return ReadMembers(d.dir)
}

func (d *dirShared) held(member string) ([]protocol.Message, error) {
	var out []protocol.Message
	o, err := inbox.NewObserver(d.dir, member, true, func(dl inbox.Delivery) { out = append(out, dl.Msg) })
	if err != nil {
		return nil, err
	}
	if err := o.Drain(); err != nil {
		return nil, err
	}
	return out, nil
}

func (d *dirShared) appendSpan(s trace.Span) error { return trace.AppendSpan(d.dir, s) }

// settleOn brings r in line with an answer that arrived as an inbox line.
// A pending request is resolved by it (a peer that writes lines alone,
// with no decision); a final one must already say the same, or the answer
// is stale.
func settleOn(sh shared, r *protocol.Request, answer Resolution) (*protocol.Request, error) {
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
	if want, _ := protocol.RequestPending.Next(answer.Event); r.Status != want {
		return nil, fmt.Errorf("stale answer: request %s already %s by %s", r.ID, r.Status, r.ResolvedBy)
	}
	return r, nil
}

// resolveID is Resolve through sh: it reads id's record first.
func resolveID(sh shared, id string, res Resolution) (*protocol.Request, error) {
	r, err := sh.loadRequest(id)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no request %s", id)
		}
		return nil, err
	}
	return sh.resolve(r, res)
}

// applyID is ApplyDecision through sh.
func applyID(sh shared, id string) (*protocol.Request, error) {
	r, err := sh.loadRequest(id)
	if err != nil {
		return nil, err
	}
	return sh.apply(r)
}

// deadLetterMsg dead-letters an inbox delivery through sh.
func deadLetterMsg(sh shared, member string, d inbox.Delivery, reason string) error {
	raw, _ := json.Marshal(d.Msg)
	return sh.deadLetter(teamdir.InboxRel(member), d.Offset, reason, raw)
}
