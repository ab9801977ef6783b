// Package teamkit is a team kept in a store of each kind, for the tests
// that run on both (only tests import it).
package teamkit

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"huddle/internal/testkit/files"
	"huddle/ipc/trace"
	"huddle/protocol"
	"huddle/store"
	"huddle/store/storekinds"
	"huddle/team"
)

// Kept is a team under test, kept in a store of one kind: the runtime and
// every check go through St, and Dir is the runtime's local directory (its
// logs, histories, executions.jsonl); on a team directory Dir is the
// store's own.
type Kept struct {
	Kind string
	St   store.Store
	Dir  string
	Tm   *team.Team
}

// OnEachStore runs f once for each kind of store huddle has
// (store/storekinds), with tm put in a fresh one: "files", a team
// directory, and "nats", an embedded NATS server with a local directory of
// its own.
func OnEachStore(t *testing.T, tm team.Team, f func(t *testing.T, k *Kept)) {
	t.Helper()
	OnEachStoreWith(t, tm, nil, f)
}

// OnEachStoreWith is OnEachStore with members' IPC policies (member →
// .puruto-ipc.json), put in the store's configuration as huddle init
// puts them (on a team directory, ipc/<member>.puruto-ipc.json).
func OnEachStoreWith(t *testing.T, tm team.Team, policies map[string]string, f func(t *testing.T, k *Kept)) {
	t.Helper()
	for _, kind := range slices.Sorted(maps.Keys(storekinds.Open)) {
		t.Run(kind, func(t *testing.T) {
			k := &Kept{Kind: kind, St: storekinds.Open[kind](t)}
			if d, ok := k.St.(interface{ Dir() string }); ok {
				k.Dir = d.Dir()
			} else {
				k.Dir = t.TempDir()
			}
			ctx := t.Context()
			b, _ := json.Marshal(tm)
			if err := k.St.PutConfig(ctx, store.ConfigTeam, b); err != nil {
				t.Fatal(err)
			}
			for member, p := range policies {
				if err := k.St.PutConfig(ctx, store.MemberPolicyConfig(member), []byte(p)); err != nil {
					t.Fatal(err)
				}
			}
			parsed, err := team.LoadFrom(ctx, k.St)
			if err != nil {
				t.Fatal(err)
			}
			k.Tm = parsed
			f(t, k)
		})
	}
}

// FilesKept is the team directory dir as a kept team: its files store.
func FilesKept(t *testing.T, dir string) *Kept {
	t.Helper()
	return &Kept{Kind: "files", St: files.Open(t, dir), Dir: dir}
}

func (k *Kept) Requests() []protocol.Request {
	all, _, _ := k.St.Requests(context.Background())
	return all
}

func (k *Kept) Request(id string) *protocol.Request {
	r, err := k.St.Request(context.Background(), id)
	if err != nil {
		return nil
	}
	return r
}

func (k *Kept) PendingPlan(from string) *protocol.Request {
	for _, r := range k.Requests() {
		if r.Kind == protocol.KindPlan && r.From == from && r.Status == protocol.RequestPending {
			return &r
		}
	}
	return nil
}

func (k *Kept) Member(name string) *protocol.Member {
	ms, err := k.St.Member(context.Background(), name, team.LostAfter)
	if err != nil {
		return nil
	}
	return &ms.Member
}

func (k *Kept) Status(name string) protocol.MemberStatus {
	if m := k.Member(name); m != nil {
		return m.Status
	}
	return ""
}

func (k *Kept) Decide(id string, ev protocol.RequestEvent, feedback string) (*protocol.Request, error) {
	return team.Decide(context.Background(), k.St, id, ev, feedback, "")
}

func (k *Kept) RequestShutdown(member, reason string) (*protocol.Request, error) {
	return team.RequestShutdown(context.Background(), k.St, k.Tm, member, reason)
}

func (k *Kept) Send(from, to, text string) error {
	return team.Send(context.Background(), k.St, k.Tm, from, to, text)
}

// appendTo writes m to member's inbox, as a foreign writer would.
func (k *Kept) AppendTo(t *testing.T, member string, m *protocol.Message) {
	t.Helper()
	if err := k.St.Append(context.Background(), member, m); err != nil {
		t.Fatal(err)
	}
}

// deadLetters is every dead letter, one JSON line each, for a test to
// look for its source, reason or raw input in.
func (k *Kept) DeadLetters() string {
	dls, _, err := k.St.DeadLetters(context.Background())
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
func (k *Kept) MessagesTo(t *testing.T, member string) []protocol.Message {
	t.Helper()
	mr, ok := k.St.(store.MessageReader)
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
func (k *Kept) Chains(t *testing.T) []trace.Chain {
	t.Helper()
	sr, ok := k.St.(store.SpanReader)
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
func (k *Kept) LeadMessages(t *testing.T) string {
	t.Helper()
	var seen []string
	for _, m := range k.MessagesTo(t, protocol.Lead) {
		seen = append(seen, m.From+":"+m.Content)
	}
	return strings.Join(seen, "|")
}

// WriteTeam writes tm as dir's team.json, making dir.
func WriteTeam(t testing.TB, dir string, tm team.Team) {
	t.Helper()
	b, _ := json.Marshal(tm)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(team.ConfigPath(dir), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// Scripted is a script teammate that runs steps and answers a shutdown
// request as onShutdown says.
func Scripted(name string, onShutdown string, steps ...team.Step) team.MemberSpec {
	return team.MemberSpec{Name: name, Role: "test", Runtime: team.RuntimeSpec{Kind: team.RuntimeScript, OnShutdown: onShutdown, Steps: steps}}
}

// Run runs run (a runtime) until the test ends, which cancels its context
// and fails the test when run returns an error or has not returned 20 s
// later.
func Run(t *testing.T, run func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
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
}
