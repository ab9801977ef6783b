package supervisor

import (
	"context"
	"fmt"
	"strings"
	"time"

	"huddle/protocol"
)

// A runtime that dies (kill -9, a crash) leaves an exec teammate's requests
// pending that its process was given and never answered: a shutdown request
// (its record is still pending) and invocations (their ids are in the
// member's record, Open). The inbox lines that carried them are committed,
// so the new process would never see them. collectReplay finds them and
// runExec gives them to the new process before any inbox message
// (docs/ARCHITECTURE.md, "Delivery").

// collectReplay gathers what the previous run's process had yet to answer;
// it runs before the member's inbox is consumed.
func (mt *mate) collectReplay(prev *protocol.Member) {
	mt.replayed = map[string]bool{}
	if prev != nil && len(prev.Open) > 0 {
		mt.replay = append(mt.replay, mt.openInvocations(prev.Open)...)
	}
	pending, err := mt.rt.pending()
	if err != nil {
		mt.rt.emit(Event{"event": "error", "member": mt.spec.Name, "error": fmt.Sprintf("finding its pending requests: %v", err)})
	}
	for _, r := range pending {
		if r.Kind != protocol.KindShutdown || r.To != mt.spec.Name {
			continue
		}
		m := protocol.NewMessage(protocol.TypeShutdownRequest, protocol.Lead, mt.spec.Name)
		m.RequestID, m.Reason = r.ID, r.Reason
		mt.replay = append(mt.replay, m)
		mt.replayed[r.ID] = true
	}
}

// openInvocations finds the invocation requests named by ids among the
// messages the member's inbox still holds (shared.held: a directory's kept
// generations included, a store's until its retention takes them), drops
// those past their deadline, and remembers the rest as open again.
func (mt *mate) openInvocations(ids []string) []protocol.Message {
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	found := map[string]protocol.Message{}
	held, err := mt.rt.sh.held(mt.spec.Name)
	for _, m := range held {
		if inv := m.Invocation; m.Type == protocol.TypeInvocationRequest && inv != nil && want[inv.RequestID] {
			found[inv.RequestID] = m
		}
	}
	if err != nil {
		mt.rt.emit(Event{"event": "error", "member": mt.spec.Name, "error": fmt.Sprintf("finding its open invocations: %v", err)})
	}
	var out []protocol.Message
	var lost []string
	now := time.Now()
	for _, id := range ids {
		m, ok := found[id]
		switch {
		case !ok:
			lost = append(lost, id)
		case now.After(m.TS.Add(time.Duration(m.Invocation.TimeoutSec) * time.Second)):
			// Past its deadline: its caller has its TIMEOUT already.
		default:
			out = append(out, m)
			mt.replayed[id] = true
			mt.remember(*m.Invocation)
		}
	}
	if len(lost) > 0 {
		mt.rt.emit(Event{"event": "error", "member": mt.spec.Name,
			"error": "open invocations no longer in its inbox, not given again: " + strings.Join(lost, ", ")})
	}
	return out
}

// sendReplay gives the new process what its predecessor had yet to answer,
// then lets the inbox's messages through.
func (mt *mate) sendReplay(ctx context.Context) {
	defer mt.endReplay()
	for i := range mt.replay {
		m := &mt.replay[i]
		if err := mt.proc.send(ctx, m); err != nil {
			return // the process is gone or the runtime stops: nothing more goes
		}
		mt.rt.emit(Event{"event": "message_replayed", "member": mt.spec.Name, "id": m.ID, "type": string(m.Type), "request_id": replayID(*m)})
	}
}

func (mt *mate) endReplay() { mt.replayOnce.Do(func() { close(mt.replayDone) }) }

// alreadyReplayed reports whether m is the inbox's copy of a request the
// new process was given at its start; each is skipped once.
func (mt *mate) alreadyReplayed(m protocol.Message) bool {
	id := replayID(m)
	mt.mu.Lock()
	defer mt.mu.Unlock()
	if id == "" || !mt.replayed[id] {
		return false
	}
	delete(mt.replayed, id)
	return true
}

// replayID is the request id a replayed message is known by.
func replayID(m protocol.Message) string {
	switch {
	case m.Type == protocol.TypeShutdownRequest:
		return m.RequestID
	case m.Type == protocol.TypeInvocationRequest && m.Invocation != nil:
		return m.Invocation.RequestID
	}
	return ""
}
