package team

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/internal/testkit/files"
	"huddle/ipc/trace"
	"huddle/protocol"
	"huddle/store"
	"huddle/store/storekinds"
)

// A team under test, kept in a store of one kind: the runtime and every
// check go through st, and dir is the runtime's local directory (its
// logs, histories, executions.jsonl); on a team directory dir is the
// store's own.
type kept struct {
	kind string
	st   store.Store
	dir  string
	tm   *Team
}

// onEachStore runs f once for each kind of store huddle has
// (store/storekinds), with tm put in a fresh one: "files", a team
// directory, and "nats", an embedded NATS server with a local directory of
// its own.
func onEachStore(t *testing.T, tm Team, f func(t *testing.T, k *kept)) {
	t.Helper()
	onEachStoreWith(t, tm, nil, f)
}

// onEachStoreWith is onEachStore with members' IPC policies (member →
// .puruto-ipc.json), put in the store's configuration as huddle init
// puts them (on a team directory, ipc/<member>.puruto-ipc.json).
func onEachStoreWith(t *testing.T, tm Team, policies map[string]string, f func(t *testing.T, k *kept)) {
	t.Helper()
	for _, kind := range slices.Sorted(maps.Keys(storekinds.Open)) {
		t.Run(kind, func(t *testing.T) {
			k := &kept{kind: kind, st: storekinds.Open[kind](t)}
			if d, ok := k.st.(interface{ Dir() string }); ok {
				k.dir = d.Dir()
			} else {
				k.dir = t.TempDir()
			}
			ctx := t.Context()
			b, _ := json.Marshal(tm)
			if err := k.st.PutConfig(ctx, store.ConfigTeam, b); err != nil {
				t.Fatal(err)
			}
			for member, p := range policies {
				if err := k.st.PutConfig(ctx, store.MemberPolicyConfig(member), []byte(p)); err != nil {
					t.Fatal(err)
				}
			}
			parsed, err := LoadFrom(ctx, k.st)
			if err != nil {
				t.Fatal(err)
			}
			k.tm = parsed
			f(t, k)
		})
	}
}

// filesKept is the team directory dir as a kept team: its files store.
func filesKept(t *testing.T, dir string) *kept {
	t.Helper()
	return &kept{kind: "files", st: files.Open(t, dir), dir: dir}
}

// start runs the team until the test ends; Tick is 20 ms unless opts says.
func (k *kept) start(t *testing.T, opts Options) *events {
	t.Helper()
	if opts.Tick == 0 {
		opts.Tick = 20 * time.Millisecond
	}
	ev := &events{}
	opts.OnEvent = ev.add
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, k.st, k.dir, opts) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("Run did not stop")
		}
	})
	testkit.WaitFor(t, 10*time.Second, "team_started", func() bool { return ev.has(func(e Event) bool { return e["event"] == "team_started" }) })
	return ev
}

func (k *kept) requests() []protocol.Request {
	all, _, _ := k.st.Requests(context.Background())
	return all
}

func (k *kept) request(id string) *protocol.Request {
	r, err := k.st.Request(context.Background(), id)
	if err != nil {
		return nil
	}
	return r
}

func (k *kept) pendingPlan(from string) *protocol.Request {
	for _, r := range k.requests() {
		if r.Kind == protocol.KindPlan && r.From == from && r.Status == protocol.RequestPending {
			return &r
		}
	}
	return nil
}

func (k *kept) member(name string) *protocol.Member {
	ms, err := k.st.Member(context.Background(), name, LostAfter)
	if err != nil {
		return nil
	}
	return &ms.Member
}

func (k *kept) status(name string) protocol.MemberStatus {
	if m := k.member(name); m != nil {
		return m.Status
	}
	return ""
}

func (k *kept) decide(id string, ev protocol.RequestEvent, feedback string) (*protocol.Request, error) {
	return Decide(context.Background(), k.st, id, ev, feedback, "")
}

func (k *kept) requestShutdown(member, reason string) (*protocol.Request, error) {
	return RequestShutdown(context.Background(), k.st, k.tm, member, reason)
}

func (k *kept) send(from, to, text string) error {
	return Send(context.Background(), k.st, k.tm, from, to, text)
}

// appendTo writes m to member's inbox, as a foreign writer would.
func (k *kept) appendTo(t *testing.T, member string, m *protocol.Message) {
	t.Helper()
	if err := k.st.Append(context.Background(), member, m); err != nil {
		t.Fatal(err)
	}
}

// deadLetters is every dead letter, one JSON line each, for a test to
// look for its source, reason or raw input in.
func (k *kept) deadLetters() string {
	dls, _, err := k.st.DeadLetters(context.Background())
	if err != nil {
		return ""
	}
	var b strings.Builder
	for _, dl := range dls {
		line, _ := json.Marshal(dl)
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// messagesTo is every message the store holds for member, read without
// consuming any.
func (k *kept) messagesTo(t *testing.T, member string) []protocol.Message {
	t.Helper()
	mr, ok := k.st.(store.MessageReader)
	if !ok {
		t.Fatal(errors.New("the store cannot read its messages"))
	}
	ds, err := mr.Messages(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []protocol.Message
	for _, d := range ds {
		if d.Msg.To == member {
			out = append(out, d.Msg)
		}
	}
	return out
}

// chains folds the spans the store holds into call chains.
func (k *kept) chains(t *testing.T) []trace.Chain {
	t.Helper()
	sr, ok := k.st.(store.SpanReader)
	if !ok {
		t.Fatal(errors.New("the store cannot read its spans"))
	}
	spans, _, err := sr.Spans(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tr := trace.NewTraces()
	for _, s := range spans {
		tr.Add(s)
	}
	return tr.Chains()
}

// leadMessages is every message the lead's inbox holds, "from:content"
// joined by "|".
func (k *kept) leadMessages(t *testing.T) string {
	t.Helper()
	var seen []string
	for _, m := range k.messagesTo(t, protocol.Lead) {
		seen = append(seen, m.From+":"+m.Content)
	}
	return strings.Join(seen, "|")
}
