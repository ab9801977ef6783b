package supervisor

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"huddle/internal/testkit"
	"huddle/internal/testkit/teamkit"
	"huddle/ipc/trace"
	"huddle/protocol"
	"huddle/store"
	"huddle/store/natsserver"
	"huddle/store/natsstore"
	"huddle/team"
	"huddle/teamdir"
)

// natsTeam starts an embedded NATS server, puts tm's team.json and the
// given policies (member → .puruto-ipc.json) in team "crew", and returns a
// function that opens one more connection to that team: each runtime, and
// the test, has its own, as processes on different machines would.
func natsTeam(t *testing.T, tm team.Team, policies map[string]string) func() store.Store {
	t.Helper()
	srv, err := natsserver.Start(natsserver.Options{Addr: "127.0.0.1:0", DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	open := func() store.Store {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		st, err := natsstore.Open(ctx, srv.URL("crew"), natsstore.Options{AckWait: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	st := open()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	b, _ := json.Marshal(tm)
	if err := st.PutConfig(ctx, store.ConfigTeam, b); err != nil {
		t.Fatal(err)
	}
	for member, p := range policies {
		if err := st.PutConfig(ctx, store.MemberPolicyConfig(member), []byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	return open
}

// storeRuntime is a runtime on a store, run by a test.
type storeRuntime struct {
	ev     *events
	cancel context.CancelFunc
	rt     *Runtime
	once   sync.Once
	err    error
	// gone is set for a runtime whose connection was closed under it: its
	// last writes fail, as a dead process's would.
	gone bool
}

// stop stops the runtime and waits for it.
func (s *storeRuntime) stop(t *testing.T) {
	t.Helper()
	s.once.Do(func() {
		s.cancel()
		done := make(chan error, 1)
		go func() { done <- s.rt.Wait() }()
		select {
		case s.err = <-done:
		case <-time.After(30 * time.Second):
			s.err = errors.New("the runtime did not stop")
		}
	})
	if s.err != nil && !s.gone {
		t.Errorf("runtime: %v", s.err)
	}
}

// startOn starts a runtime on st that runs members (empty: every free
// one), with a local directory of its own, until the test ends.
func startOn(t *testing.T, st store.Store, members ...string) (*storeRuntime, error) {
	t.Helper()
	ev := &events{}
	ctx, cancel := context.WithCancel(context.Background())
	rt, err := Start(ctx, st, t.TempDir(), Options{Members: members, OnEvent: ev.add, Tick: 100 * time.Millisecond, LeaseTTL: 2 * time.Second})
	if err != nil {
		cancel()
		return nil, err
	}
	s := &storeRuntime{ev: ev, cancel: cancel, rt: rt}
	t.Cleanup(func() { s.stop(t) })
	return s, nil
}

// takeOver starts members in a runtime of its own on st as soon as the
// leases another runtime holds have expired, trying on the one
// connection.
func takeOver(t *testing.T, st store.Store, members ...string) *storeRuntime {
	t.Helper()
	var s *storeRuntime
	testkit.WaitFor(t, 30*time.Second, fmt.Sprintf("another runtime to take %v over", members), func() bool {
		var err error
		s, err = startOn(t, st, members...)
		if err != nil && !strings.Contains(err.Error(), " runs elsewhere (holder ") {
			t.Fatal(err)
		}
		return err == nil
	})
	return s
}

func mustStartOn(t *testing.T, st store.Store, members ...string) *storeRuntime {
	t.Helper()
	s, err := startOn(t, st, members...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func runsHere(s *storeRuntime, name string) bool {
	return s.ev.has(func(e Event) bool {
		if e["event"] != "team_started" {
			return false
		}
		runs, _ := e["runs"].([]string)
		for _, r := range runs {
			if r == name {
				return true
			}
		}
		return false
	})
}

func plansOn(t *testing.T, st store.Store, from string, status protocol.RequestStatus) []protocol.Request {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	all, _, err := st.Requests(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []protocol.Request
	for _, r := range all {
		if r.Kind == protocol.KindPlan && r.From == from && r.Status == status {
			out = append(out, r)
		}
	}
	return out
}

func statusOn(st store.Store, name string) protocol.MemberStatus {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	states, _, err := st.Members(ctx, team.LostAfter)
	if err != nil {
		return ""
	}
	for _, s := range states {
		if s.Name == name {
			return s.Status
		}
	}
	return ""
}

func saidToLead(s *storeRuntime, from, text string) bool {
	return s.ev.has(func(e Event) bool {
		return e["event"] == "message_delivered" && e["member"] == protocol.Lead && e["from"] == from && e["type"] == string(protocol.TypeMessage)
	})
}

// TestStoreRuntimesSplitAPlanApprovedFromAThird: two runtimes share one
// team on NATS, the lead in the second; a plan of alice (run by the
// first) reaches the lead, is approved through DecideOn from a third
// connection, and alice goes on.
func TestStoreRuntimesSplitAPlanApprovedFromAThird(t *testing.T) {
	open := natsTeam(t, team.Team{Name: "crew", Members: []team.MemberSpec{
		teamkit.Scripted("alice", "", team.Step{Plan: "paint the hall"}, team.Step{Say: "lead", Text: "painted"}, team.Step{Wait: team.Duration(time.Hour)}),
		teamkit.Scripted("bob", "", team.Step{Wait: team.Duration(time.Hour)}),
	}}, nil)
	second := mustStartOn(t, open(), "bob") // takes the lead's lease first
	first := mustStartOn(t, open(), "alice")
	if !runsHere(second, protocol.Lead) || runsHere(first, protocol.Lead) || !runsHere(first, "alice") || runsHere(first, "bob") {
		t.Fatal("the first runtime does not run alice alone, or the second not bob and the lead")
	}
	third := open()
	testkit.WaitFor(t, 15*time.Second, "alice's pending plan", func() bool { return len(plansOn(t, third, "alice", protocol.RequestPending)) == 1 })
	testkit.WaitFor(t, 15*time.Second, "the lead's runtime to open it", func() bool {
		return second.ev.has(func(e Event) bool { return e["event"] == "request_opened" && e["from"] == "alice" })
	})
	if saidToLead(second, "alice", "painted") {
		t.Fatal("alice went on before her plan was approved")
	}
	plan := plansOn(t, third, "alice", protocol.RequestPending)[0]
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if _, err := team.Decide(ctx, third, plan.ID, protocol.EventApprove, "", "ops"); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 15*time.Second, "alice's message to the lead, in the other runtime", func() bool { return saidToLead(second, "alice", "painted") })
	if st := statusOn(third, "alice"); st == protocol.MemberAwaitingApproval || st == "" {
		t.Fatalf("alice's record in the store says %q after the approval", st)
	}
	if r, err := third.Request(ctx, plan.ID); err != nil || r.Status != protocol.RequestApproved || r.ResolvedBy != "ops" {
		t.Fatalf("the plan in the store: %+v, %v", r, err)
	}
	// A runtime archives the final plan, so no tick lists it again.
	testkit.WaitFor(t, 15*time.Second, "the approved plan archived", func() bool {
		live, _, err := third.LiveRequests(ctx)
		return err == nil && len(live) == 0
	})
	if all, _, err := third.Requests(ctx); err != nil || len(all) != 1 || all[0].Status != protocol.RequestApproved {
		t.Fatalf("the requests after the archive: %+v, %v", all, err)
	}
}

// TestStoreCallAcrossRuntimesIsOneChain: reservas (first runtime) calls
// finanzas (second), whose action calls data (first again); the spans
// each runtime writes are one chain in the store's traces.
func TestStoreCallAcrossRuntimesIsOneChain(t *testing.T) {
	reservas := teamkit.Scripted("reservas", "", team.Step{Call: "finanzas", Action: "pagar", Prompt: "invoice #7", TimeoutSec: 20}, team.Step{Wait: team.Duration(time.Hour)})
	finanzas := teamkit.Scripted("finanzas", "", team.Step{Wait: team.Duration(time.Hour)})
	finanzas.Actions = map[string]team.ActionSpec{"pagar": {Reply: "paid", Call: &team.CallSpec{Target: "data", Action: "escribir", Prompt: "record it"}}}
	data := teamkit.Scripted("data", "", team.Step{Wait: team.Duration(time.Hour)})
	data.Actions = map[string]team.ActionSpec{"escribir": {Reply: "written"}}
	open := natsTeam(t, team.Team{Name: "crew", Members: []team.MemberSpec{reservas, finanzas, data}}, map[string]string{
		"reservas": `{"allowed_targets":["finanzas"]}`,
		"finanzas": `{"allowed_targets":["data"]}`,
	})
	second := mustStartOn(t, open(), "finanzas")
	first := mustStartOn(t, open(), "reservas", "data")
	testkit.WaitFor(t, 30*time.Second, "reservas's call to end", func() bool {
		return first.ev.has(func(e Event) bool { return e["event"] == "call" && e["member"] == "reservas" })
	})
	if !first.ev.has(func(e Event) bool { return e["event"] == "call" && e["member"] == "reservas" && e["status"] == "ok" }) {
		t.Fatalf("reservas's call did not succeed: %v", first.ev.es)
	}
	if !second.ev.has(func(e Event) bool { return e["event"] == "call" && e["member"] == "finanzas" && e["status"] == "ok" }) {
		t.Fatal("finanzas's onward call, in the second runtime, did not succeed")
	}
	third := open()
	var mu sync.Mutex
	tr := trace.NewTraces()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	sub, err := third.WatchSpans(ctx, true, func(s trace.Span) { mu.Lock(); tr.Add(s); mu.Unlock() })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	testkit.WaitFor(t, 15*time.Second, "one chain of two ended calls", func() bool {
		mu.Lock()
		defer mu.Unlock()
		cs := tr.Chains()
		if len(cs) != 1 || len(cs[0].Rows) != 2 {
			return false
		}
		for _, r := range cs[0].Rows {
			if r.Call.Status != trace.CallOK {
				return false
			}
		}
		return true
	})
	mu.Lock()
	rows := tr.Chains()[0].Rows
	mu.Unlock()
	if c0, c1 := rows[0].Call, rows[1].Call; c0.Caller != "reservas" || c0.Target != "finanzas" || c1.Caller != "finanzas" || c1.Target != "data" || c1.Hop != 1 || c1.ParentRequestID != c0.RequestID {
		t.Fatalf("the chain: %+v", rows)
	}
}

// TestStoreRuntimeRestartedResumesAPendingPlan: a runtime whose connection
// dies under it (as its process would) leaves alice's plan pending and her
// lease to expire; the next runtime takes the lease over and alice waits
// on the same plan, which an approval then lets through.
func TestStoreRuntimeRestartedResumesAPendingPlan(t *testing.T) {
	open := natsTeam(t, team.Team{Name: "crew", Members: []team.MemberSpec{
		teamkit.Scripted("alice", "", team.Step{Plan: "paint the hall"}, team.Step{Say: "lead", Text: "painted"}, team.Step{Wait: team.Duration(time.Hour)}),
	}}, nil)
	third := open()
	st := &severable{Store: open()}
	gone := mustStartOn(t, st)
	testkit.WaitFor(t, 15*time.Second, "alice's pending plan", func() bool { return len(plansOn(t, third, "alice", protocol.RequestPending)) == 1 })
	testkit.WaitFor(t, 15*time.Second, "alice awaiting approval", func() bool { return statusOn(third, "alice") == protocol.MemberAwaitingApproval })
	plan := plansOn(t, third, "alice", protocol.RequestPending)[0]
	gone.gone = true
	st.dead.Store(true) // the process is gone: nothing it writes from now on lands
	gone.stop(t)

	again := takeOver(t, open(), protocol.Lead, "alice")
	testkit.WaitFor(t, 15*time.Second, "alice awaiting the same plan", func() bool {
		return again.ev.has(func(e Event) bool {
			return e["event"] == "member_status" && e["member"] == "alice" && e["status"] == string(protocol.MemberAwaitingApproval)
		})
	})
	if saidToLead(again, "alice", "painted") {
		t.Fatal("alice went on before her plan was approved")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if _, err := team.Decide(ctx, third, plan.ID, protocol.EventApprove, "", ""); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 15*time.Second, "alice's message after the approval", func() bool { return saidToLead(again, "alice", "painted") })
	if ps := plansOn(t, third, "alice", protocol.RequestPending); len(ps) != 0 {
		t.Fatalf("alice planned again instead of resuming: %+v", ps)
	}
	if ps := plansOn(t, third, "alice", protocol.RequestApproved); len(ps) != 1 || ps[0].ID != plan.ID {
		t.Fatalf("approved plans: %+v, want %s", ps, plan.ID)
	}
}

// severable is a store connection that a test cuts, as the death of the
// process that holds it would: from then on every write fails, and a
// handler handed a message never returns it committed.
type severable struct {
	store.Store
	dead atomic.Bool
	// noRenewal fails only the leases' renewals, as a network partition
	// that outlasts their TTL would.
	noRenewal atomic.Bool
}

var errSevered = errors.New("severed")

func (s *severable) write(err func() error) error {
	if s.dead.Load() {
		return errSevered
	}
	return err()
}

func (s *severable) Append(ctx context.Context, member string, msgs ...*protocol.Message) error {
	return s.write(func() error { return s.Store.Append(ctx, member, msgs...) })
}

func (s *severable) Consume(ctx context.Context, member string, h store.Handler) (store.Subscription, error) {
	return s.Store.Consume(ctx, member, func(ctx context.Context, d store.Delivery) error {
		if s.dead.Load() {
			<-ctx.Done()
			return ctx.Err()
		}
		return h(ctx, d)
	})
}

func (s *severable) DeadLetter(ctx context.Context, dl protocol.DeadLetterLine) error {
	return s.write(func() error { return s.Store.DeadLetter(ctx, dl) })
}

func (s *severable) CreateRequest(ctx context.Context, r *protocol.Request) error {
	return s.write(func() error { return s.Store.CreateRequest(ctx, r) })
}

func (s *severable) Decide(ctx context.Context, id string, d store.Decision) (*protocol.Request, error) {
	if s.dead.Load() {
		return nil, errSevered
	}
	return s.Store.Decide(ctx, id, d)
}

func (s *severable) PutMember(ctx context.Context, m *protocol.Member) error {
	return s.write(func() error { return s.Store.PutMember(ctx, m) })
}

func (s *severable) Heartbeat(ctx context.Context, member string) error {
	return s.write(func() error { return s.Store.Heartbeat(ctx, member) })
}

func (s *severable) AcquireLease(ctx context.Context, member, holder string, ttl time.Duration) (store.Lease, error) {
	if s.dead.Load() {
		return nil, errSevered
	}
	l, err := s.Store.AcquireLease(ctx, member, holder, ttl)
	if err != nil {
		return nil, err
	}
	return severableLease{l, s}, nil
}

func (s *severable) AppendSpan(ctx context.Context, sp trace.Span) error {
	return s.write(func() error { return s.Store.AppendSpan(ctx, sp) })
}

type severableLease struct {
	store.Lease
	s *severable
}

func (l severableLease) Renew(ctx context.Context) error {
	if l.s.noRenewal.Load() {
		return errSevered
	}
	return l.s.write(func() error { return l.Lease.Renew(ctx) })
}

func (l severableLease) Release(ctx context.Context) error {
	return l.s.write(func() error { return l.Lease.Release(ctx) })
}

// TestStoreMemberListedTwiceIsRefused: a member that one runtime runs is
// refused to the second, in one line that names the holder.
func TestStoreMemberListedTwiceIsRefused(t *testing.T) {
	open := natsTeam(t, team.Team{Name: "crew", Members: []team.MemberSpec{
		teamkit.Scripted("alice", "", team.Step{Wait: team.Duration(time.Hour)}),
		teamkit.Scripted("bob", "", team.Step{Wait: team.Duration(time.Hour)}),
	}}, nil)
	first := mustStartOn(t, open(), "alice")
	_, err := startOn(t, open(), "bob", "alice")
	if err == nil || !strings.HasPrefix(err.Error(), "alice runs elsewhere (holder ") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("second runtime: %v", err)
	}
	// Refused whole: bob's lease was given back, so a third runtime runs him.
	third := mustStartOn(t, open())
	if !runsHere(third, "bob") || runsHere(third, "alice") || runsHere(third, protocol.Lead) {
		t.Fatal("the third runtime does not run bob alone")
	}
	if !runsHere(first, "alice") {
		t.Fatal("the first runtime does not run alice")
	}
}

// TestStoreListedMembersTakenOnceADeadHoldersLeasesEnd: the runtime that
// runs the lead and alice dies (its connection severed: its leases are
// neither renewed nor released), and one started at once for the same
// members waits for their leases to end and runs them, rather than
// refusing them as running elsewhere.
func TestStoreListedMembersTakenOnceADeadHoldersLeasesEnd(t *testing.T) {
	open := natsTeam(t, team.Team{Name: "crew", Members: []team.MemberSpec{
		teamkit.Scripted("alice", "", team.Step{Wait: team.Duration(time.Hour)}),
	}}, nil)
	st := &severable{Store: open()}
	gone := mustStartOn(t, st, protocol.Lead, "alice")
	gone.gone = true
	st.dead.Store(true)
	gone.stop(t)
	again, err := startOn(t, open(), protocol.Lead, "alice")
	if err != nil {
		t.Fatalf("started again at once: %v", err)
	}
	if !runsHere(again, "alice") || !runsHere(again, protocol.Lead) {
		t.Fatal("the runtime started again does not run the lead and alice")
	}
	third := open()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := team.Send(ctx, third, &team.Team{Name: "crew", Members: []team.MemberSpec{{Name: "alice"}}}, protocol.Lead, "alice", "back?"); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 15*time.Second, "the message delivered by the runtime started again", func() bool {
		return again.ev.has(func(e Event) bool {
			return e["event"] == "message_delivered" && e["member"] == "alice" && e["type"] == string(protocol.TypeMessage)
		})
	})
}

// TestStoreMembersNamingTheLeadAnywhere: --members may list the lead, and
// a name twice, in any order: each lease is taken once (a second take of
// one's own lease would read as "runs elsewhere").
func TestStoreMembersNamingTheLeadAnywhere(t *testing.T) {
	open := natsTeam(t, team.Team{Name: "crew", Members: []team.MemberSpec{
		teamkit.Scripted("alice", "", team.Step{Wait: team.Duration(time.Hour)}),
		teamkit.Scripted("bob", "", team.Step{Wait: team.Duration(time.Hour)}),
	}}, nil)
	s := mustStartOn(t, open(), "bob", protocol.Lead, "bob")
	if !runsHere(s, "bob") || !runsHere(s, protocol.Lead) || runsHere(s, "alice") {
		t.Fatal("the runtime does not run bob and the lead alone")
	}
}

// TestStoreLostLeaseStopsTheMember: a runtime that could not renew alice's
// lease in time finds, once it can again, that another runtime took her
// over: alice stops there with an error event, and her messages reach the
// new runtime.
func TestStoreLostLeaseStopsTheMember(t *testing.T) {
	open := natsTeam(t, team.Team{Name: "crew", Members: []team.MemberSpec{
		teamkit.Scripted("alice", "", team.Step{Wait: team.Duration(time.Hour)}),
	}}, nil)
	st := &severable{Store: open()}
	old := mustStartOn(t, st, "alice")
	st.noRenewal.Store(true)
	now := takeOver(t, open(), "alice")
	st.noRenewal.Store(false)
	testkit.WaitFor(t, 15*time.Second, "the old runtime to say alice's lease is lost", func() bool {
		return old.ev.has(func(e Event) bool {
			msg, _ := e["error"].(string)
			return e["event"] == "error" && e["member"] == "alice" && strings.Contains(msg, "the lease of alice is lost")
		})
	})
	testkit.WaitFor(t, 15*time.Second, "alice stopped in the old runtime", func() bool {
		return old.ev.has(func(e Event) bool {
			return e["event"] == "member_status" && e["member"] == "alice" && e["status"] == string(protocol.MemberStopped)
		})
	})
	third := open()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := team.Send(ctx, third, &team.Team{Name: "crew", Members: []team.MemberSpec{{Name: "alice"}}}, protocol.Lead, "alice", "still there?"); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 15*time.Second, "the message delivered by the new runtime", func() bool {
		return now.ev.has(func(e Event) bool {
			return e["event"] == "message_delivered" && e["member"] == "alice" && e["type"] == string(protocol.TypeMessage)
		})
	})
	if old.ev.has(func(e Event) bool {
		return e["event"] == "message_delivered" && e["member"] == "alice" && e["type"] == string(protocol.TypeMessage)
	}) {
		t.Fatal("the old runtime still consumes alice's inbox")
	}
	if st := statusOn(third, "alice"); st == protocol.MemberStopped || st == "" {
		t.Fatalf("alice's record says %q: the old runtime wrote over the new one's", st)
	}
}

// TestStoreRuntimeMakesItsLocalDirectory: `huddle up --store` in a fresh
// --dir, as the README's two-machine steps run it. The records are in the
// store, so no record write makes members/ here; the runtime makes it, and
// an exec teammate's log and every status history land there without an
// error.
func TestStoreRuntimeMakesItsLocalDirectory(t *testing.T) {
	exe, _ := os.Executable()
	open := natsTeam(t, team.Team{Name: "crew", Members: []team.MemberSpec{
		teamkit.Scripted("alice", "", team.Step{Say: "lead", Text: "hello"}, team.Step{Wait: team.Duration(time.Hour)}),
		{Name: "echo", Runtime: team.RuntimeSpec{Kind: team.RuntimeExec, Command: []string{"/usr/bin/env", teamkit.RoleEnv + "=echo", exe}}},
	}}, nil)
	st := open()
	dir := filepath.Join(t.TempDir(), "fresh", ".huddle")
	ev := &events{}
	ctx, cancel := context.WithCancel(context.Background())
	rt, err := Start(ctx, st, dir, Options{OnEvent: ev.add, Tick: 100 * time.Millisecond, LeaseTTL: 2 * time.Second})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	s := &storeRuntime{ev: ev, cancel: cancel, rt: rt}
	t.Cleanup(func() { s.stop(t) })
	testkit.WaitFor(t, 15*time.Second, "alice's message to the lead", func() bool { return saidToLead(s, "alice", "hello") })
	testkit.WaitFor(t, 15*time.Second, "echo started", func() bool {
		s := statusOn(st, "echo")
		return s == protocol.MemberWorking || s == protocol.MemberIdle
	})
	for _, name := range []string{"alice", "echo"} {
		p, _ := teamdir.StatusHistoryPath(dir, name)
		testkit.WaitFor(t, 10*time.Second, name+"'s status history", func() bool { _, err := os.Stat(p); return err == nil })
	}
	if p, _ := teamdir.MemberLogPath(dir, "echo"); !fileExists(p) {
		t.Errorf("no log for echo at %s", p)
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	for _, e := range ev.es {
		if e["event"] == "error" {
			t.Errorf("error event: %v", e)
		}
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// TestStoreDeadlinePausedWhileTeamDown: a shutdown asked while the team's
// only runtime is stopped stays pending with its countdown paused (the
// store says the team is down since its last member was seen), and the
// next runtime, taking the lead's lease, gives it its whole span from the
// restart (the store's resumeDeadlines). (A plan pending when a runtime
// stops cleanly is cancelled with its member; one left by a crash is
// found after LostAfter, which this test does not wait for.)
func TestStoreDeadlinePausedWhileTeamDown(t *testing.T) {
	open := natsTeam(t, team.Team{Name: "crew", Members: []team.MemberSpec{
		teamkit.Scripted("alice", "", team.Step{Wait: team.Duration(time.Hour)}),
		teamkit.Scripted("bob", "", team.Step{Wait: team.Duration(time.Hour)}), // runs on when alice has agreed to stop
	}}, nil)
	third := open()
	first := mustStartOn(t, open())
	testkit.WaitFor(t, 15*time.Second, "alice running", func() bool { return store.IsLive(statusOn(third, "alice")) })
	stopBegan := time.Now()
	first.stop(t)
	stopped := time.Now()

	rt := runtimeSeenIn(t, third)
	if !team.Down(rt) || team.PausedSince(rt).Before(stopBegan) || team.PausedSince(rt).After(stopped) {
		t.Fatalf("the store's runtime state after the stop: %+v (stopped between %v and %v)", rt, stopBegan, stopped)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	tm, err := team.LoadFrom(ctx, third)
	if err != nil {
		t.Fatal(err)
	}
	asked, err := team.RequestShutdown(ctx, third, tm, "alice", "done for today")
	if err != nil {
		t.Fatal(err)
	}
	if asked.Status != protocol.RequestPending {
		t.Fatalf("a shutdown asked while the team is down: %s, want pending", asked.Status)
	}
	if left, want := team.LeftWhenPaused(asked, runtimeSeenIn(t, third)), asked.Deadline.Sub(asked.Created); left != want {
		t.Fatalf("paused with %v left, want its whole span %v", left, want)
	}

	restarted := time.Now()
	again := mustStartOn(t, open())
	var resumed time.Time
	testkit.WaitFor(t, 15*time.Second, "the shutdown's deadline resumed", func() bool {
		return again.ev.has(func(e Event) bool {
			if e["event"] != "deadline_resumed" || e["id"] != asked.ID {
				return false
			}
			resumed, err = time.Parse(time.RFC3339Nano, e["deadline"].(string))
			return err == nil
		})
	})
	seen := time.Now()
	// Its whole span, counted from the restart.
	gained := resumed.Sub(asked.Deadline)
	if gained < restarted.Sub(asked.Created) || gained > seen.Sub(asked.Created) {
		t.Fatalf("the deadline moved by %v, want between %v and %v", gained, restarted.Sub(asked.Created), seen.Sub(asked.Created))
	}
	// The resume comes before the members are spawned: their records say
	// the team runs a moment later.
	testkit.WaitFor(t, 15*time.Second, "the store to say the team runs", func() bool { return !team.Down(runtimeSeenIn(t, third)) })
}

func runtimeSeenIn(t *testing.T, st store.Store) team.RuntimeState {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	states, _, err := st.Members(ctx, team.LostAfter)
	if err != nil {
		t.Fatal(err)
	}
	return team.RuntimeFromRecords(slices.Values(states), team.LostAfter)
}

func init() {
	// tallyuntil is tally until the file $ANSWER exists, echo from then on:
	// a member whose next run answers what this one only took.
	// stderrsay writes each message's content to its stderr, its log.
	testRoles["stderrsay"] = func() int {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			if m, err := protocol.Decode(sc.Bytes(), protocol.Fallback{}); err == nil && m.Type == protocol.TypeMessage {
				fmt.Fprintln(os.Stderr, m.Content)
			}
		}
		return 0
	}
	testRoles["tallyuntil"] = func() int {
		if _, err := os.Stat(os.Getenv("ANSWER")); err == nil {
			return echoProcess(false)
		}
		return runTally()
	}
}

// TestStoreExecInvocationGivenAgainAfterACrash: an exec teammate on a
// store was given an invocation and had not answered it when its runtime
// died (the line committed, the member record's open naming it). The next
// runtime to take the member over finds the request among the messages
// the store still holds and gives it to the new process, which answers:
// the caller, in another runtime and still waiting, gets the answer.
func TestStoreExecInvocationGivenAgainAfterACrash(t *testing.T) {
	tally, answer := filepath.Join(t.TempDir(), "tally"), filepath.Join(t.TempDir(), "answer")
	caller := teamkit.Scripted("reservas", "", team.Step{Call: "x", Action: "audit", Prompt: "invoice 9", TimeoutSec: 60}, team.Step{Wait: team.Duration(time.Hour)})
	tm := team.Team{Name: "crew", Members: []team.MemberSpec{caller, roleSpec("x", "tallyuntil", "TALLY="+tally, "ANSWER="+answer)}}
	open := natsTeam(t, tm, map[string]string{"reservas": `{"allowed_targets":["x"]}`})
	callers := mustStartOn(t, open(), protocol.Lead, "reservas")
	st := &severable{Store: open()}
	gone := mustStartOn(t, st, "x")
	testkit.WaitFor(t, 15*time.Second, "x given the invocation", func() bool {
		return len(tallied(tally, protocol.TypeInvocationRequest)) == 1
	})
	gone.gone = true
	st.dead.Store(true) // the process is gone: nothing it writes from now on lands
	gone.stop(t)

	// The next run's process answers what it is given.
	if err := os.WriteFile(answer, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	again := takeOver(t, open(), "x")
	testkit.WaitFor(t, 20*time.Second, "reservas's call answered", func() bool {
		return callers.ev.has(func(e Event) bool { return e["event"] == "call" && e["member"] == "reservas" })
	})
	if !callers.ev.has(func(e Event) bool { return e["event"] == "call" && e["member"] == "reservas" && e["status"] == "ok" }) {
		t.Fatalf("reservas's call did not succeed: %v", callers.ev.es)
	}
	if !again.ev.has(func(e Event) bool {
		return e["event"] == "message_replayed" && e["member"] == "x" && e["type"] == string(protocol.TypeInvocationRequest)
	}) {
		t.Fatalf("the invocation was not given again: %v", again.ev.es)
	}
}

// logsAway is a store whose AppendLog fails while away is set, as a
// server out of reach would make it.
type logsAway struct {
	store.Store
	away atomic.Bool
}

func (s *logsAway) AppendLog(ctx context.Context, member string, kind store.LogKind, lines [][]byte) error {
	if s.away.Load() {
		return errSevered
	}
	return s.Store.AppendLog(ctx, member, kind, lines)
}

// TestStoreLogLinesHeldWhileTheStoreIsAway: lines an exec teammate writes
// to its log while the store refuses them are not lost: the shipper
// offers them again from the file, and once the store takes them again
// another machine reads them, in order, before the lines written after.
func TestStoreLogLinesHeldWhileTheStoreIsAway(t *testing.T) {
	// Put back after the runtime's cleanup has stopped it (cleanups run
	// last first), not before as a defer would.
	every := retryLogsEvery
	t.Cleanup(func() { retryLogsEvery = every })
	retryLogsEvery = 50 * time.Millisecond
	open := natsTeam(t, team.Team{Name: "crew", Members: []team.MemberSpec{roleSpec("x", "stderrsay")}}, nil)
	st := &logsAway{Store: open()}
	rt := mustStartOn(t, st, protocol.Lead, "x")
	testkit.WaitFor(t, 15*time.Second, "x running", func() bool { return runsHere(rt, "x") })
	reader := open()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	var got []string
	go func() {
		_ = reader.ReadLog(ctx, "x", store.LogStderr, true, func(line []byte) {
			mu.Lock()
			got = append(got, string(line))
			mu.Unlock()
		})
	}()
	say := func(text string) {
		m := protocol.NewMessage(protocol.TypeMessage, protocol.Lead, "x")
		m.Content = text
		if err := reader.Append(ctx, "x", &m); err != nil {
			t.Fatal(err)
		}
	}
	logged := func(texts ...string) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			i := 0
			for _, l := range got {
				if i < len(texts) && strings.Contains(l, texts[i]) {
					i++
				}
			}
			return i == len(texts)
		}
	}
	say("before")
	testkit.WaitFor(t, 15*time.Second, "the line written before", logged("before"))
	st.away.Store(true)
	say("while away 1")
	say("while away 2")
	testkit.WaitFor(t, 15*time.Second, "the store to refuse the lines", func() bool {
		return rt.ev.has(func(e Event) bool {
			w, _ := e["warning"].(string)
			return e["event"] == "warning" && e["member"] == "x" && strings.Contains(w, "not stored yet")
		})
	})
	st.away.Store(false)
	say("after")
	testkit.WaitFor(t, 15*time.Second, "every line, in order", logged("before", "while away 1", "while away 2", "after"))
}

// noWatch is a store whose Watch cannot start (a server gone, no inotify
// instance left).
type noWatch struct{ store.Store }

var errNoWatch = errors.New("no watch")

func (noWatch) Watch(context.Context, func(store.Change), ...store.ChangeKind) (store.Subscription, error) {
	return nil, errNoWatch
}

// TestStoreWatchThatCannotStartFailsTheStart: a runtime whose store watch
// cannot start returns that error before any teammate runs, and leaves
// its members free: another runtime starts them at once.
func TestStoreWatchThatCannotStartFailsTheStart(t *testing.T) {
	open := natsTeam(t, team.Team{Name: "crew", Members: []team.MemberSpec{
		teamkit.Scripted("alice", "", team.Step{Wait: team.Duration(time.Hour)}),
	}}, nil)
	_, err := startOn(t, noWatch{open()}, "alice")
	if !errors.Is(err, errNoWatch) {
		t.Fatalf("start with a watch that cannot start: %v", err)
	}
	s := mustStartOn(t, open(), "alice")
	if !runsHere(s, "alice") {
		t.Fatal("alice was left to the failed start")
	}
}
