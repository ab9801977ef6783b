package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"huddle/internal/redact"
	"huddle/ipc"
	"huddle/protocol"
	"huddle/store"
	"huddle/team"
	"huddle/teamdir"
)

// Event is one line of the headless event stream: {"ts","event",...}.
type Event map[string]any

// Options tune a runtime.
type Options struct {
	// AutoApprove approves every plan as it arrives. Off by default: nothing
	// is approved unless a human (or this flag) says so.
	AutoApprove bool
	// OnEvent receives every event; it is called from many goroutines.
	OnEvent func(Event)
	// Executable replaces a command's first word "huddle" for exec members,
	// so the demo's built-in agent runs from any build.
	Executable string
	// Tick is how soon after a change of the requests the runtime looks at
	// the records (applies decisions, settles exec teammates, archives);
	// default 500ms. Deadlines and restarts need no tick: a timer and the
	// store's watch wake the runtime (team/supervisor/watch.go).
	Tick time.Duration
	// Members are the members this runtime runs, each under a lease; a
	// listed member whose lease another runtime holds is awaited to the
	// lease's end, and fails the start when its holder renews it. Empty:
	// every member, each held elsewhere as soon as its lease ends. The
	// lead runs here when its lease is free (without Members, as soon as
	// it is). (On a team directory the runtime's flock is every lease: one
	// runtime runs them all.)
	Members []string
	// Holder names this runtime in its leases (default "hostname:pid");
	// LeaseTTL is how long a lease outlives its last renewal (default 10 s;
	// renewed every third of it).
	Holder   string
	LeaseTTL time.Duration
	// Secrets are what huddle knows besides the keys team.json names (a
	// store URL's token, NATS credentials): with those keys, they are
	// scrubbed from transcripts, shipped log lines, records' log lines and
	// events, and from what an llm teammate's tools return to its model.
	Secrets []string
	// newThinker builds an llm teammate's loop (nil: the real llm.Agent);
	// tests give a fake.
	newThinker thinkerFactory
}

// Runtime runs a team: the lead's inbox and one goroutine per teammate.
type Runtime struct {
	// dir is this machine's directory of the team: its logs, transcripts,
	// status histories, executions.jsonl and runtime.lock; st keeps what
	// the team shares (docs/ARCHITECTURE.md, "The team directory and the
	// store"), through sh. local says st is dir's own files (store/filestore):
	// the logs are already where the store reads them.
	dir   string
	st    store.Store
	sh    *shared
	local bool
	team  *team.Team
	opts  Options
	// storeKick wakes the loop when the store's watch tells of a request
	// or a restart asked; told holds the members whose restart was asked
	// since the loop last looked, reqTold the requests that changed (""
	// in either: any may have been missed).
	storeKick chan struct{}
	toldMu    sync.Mutex
	told      map[string]bool
	reqTold   map[string]bool

	done chan struct{}
	err  error
	ctx  context.Context
	inv  invocations

	mu    sync.Mutex
	mates map[string]*mate
	// arch archives the final records pending finds, in the background.
	arch    *archiver
	corrupt map[string]string
	// listMu makes one listing of the requests at a time, with the
	// queueing of the final ones it found for the archive (pending).
	listMu sync.Mutex
	// awaiting are the teammates awaiting a plan decision, by request id.
	awaiting map[string]*mate
	// leases are the members this runtime runs on a store, by name (the
	// lead's included when it runs here), under leaseMu; nil on a team
	// directory. claims are those it waits for (claimLeases's alone once
	// the start is over).
	leaseMu sync.Mutex
	leases  map[string]*memberLease
	claims  []*claim
	// slots bound the teammates' record writes in flight (takeSlot).
	slots chan struct{}
	// lastRecs are the member records the start found (settleLastRun),
	// by name, for each member's first spawn instead of a read of its
	// own; nil once the start is over (a restart reads the record).
	lastRecs map[string]*protocol.Member
	wg       sync.WaitGroup
	evMu     sync.Mutex
	// secrets is every secret the runtime knows (Options.Secrets, the keys
	// team.json names), in every form it is scrubbed in.
	secrets *redact.Set
}

// Run loads the team st keeps and runs it, with dir as this machine's
// directory of it, until ctx ends; then it stops every teammate and
// returns. Only one runtime may run a member at a time.
func Run(ctx context.Context, st store.Store, dir string, opts Options) error {
	rt, err := Start(ctx, st, dir, opts)
	if err != nil {
		return err
	}
	return rt.Wait()
}

// Start loads the team st keeps and starts running it, with dir as this
// machine's directory of it (for a team directory, the store's own): it
// returns once the lead and every teammate are running, or with the error
// that stopped them from starting. The team runs until ctx ends; Wait
// waits for that.
func Start(ctx context.Context, st store.Store, dir string, opts Options) (*Runtime, error) {
	if st == nil {
		return nil, errors.New("run: no store keeps the team")
	}
	local, err := localFiles(st, dir)
	if err != nil {
		return nil, err
	}
	t, err := loadTeam(ctx, st, dir, local)
	if err != nil {
		return nil, err
	}
	// Whether the team was down is read before this runtime holds
	// anything or writes a record of its own.
	last, lastErr := runtimeBefore(ctx, st)
	// One runtime per team directory: its flock is every member's lease
	// (takeLeases). The runtimes of a team in a store share the lock of
	// the directory they keep this machine's files in, as each runs the
	// members it holds the leases of, and keep a team directory's runtime
	// out of it.
	lock := teamdir.LockRuntime
	if !local {
		lock = teamdir.ShareRuntime
	}
	unlock, err := lock(dir)
	if err != nil {
		return nil, err
	}
	if opts.Tick <= 0 {
		opts.Tick = 500 * time.Millisecond
	}
	if !local {
		if opts.Holder == "" {
			host, _ := os.Hostname()
			opts.Holder = host + ":" + strconv.Itoa(os.Getpid())
		}
		if opts.LeaseTTL <= 0 {
			opts.LeaseTTL = DefaultLeaseTTL
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	rt := &Runtime{dir: dir, st: st, local: local, team: t, opts: opts, secrets: knownSecrets(t, opts.Secrets), sh: newShared(ctx, st), mates: map[string]*mate{}, awaiting: map[string]*mate{}, slots: make(chan struct{}, writeSlots), arch: newArchiver(), corrupt: map[string]string{}, done: make(chan struct{}), ctx: ctx, storeKick: make(chan struct{}, 1)}
	// What a consumer recovers from on its own (a damaged cursor journal,
	// pulls or commits failing while NATS is away) becomes an event.
	if w, ok := st.(warner); ok {
		w.SetWarn(func(member string, err error) {
			rt.emit(Event{"event": "warning", "member": member, "warning": err.Error()})
		})
	}
	if !local {
		rt.leases = map[string]*memberLease{}
	}
	rt.inv = invocations{router: ipc.NewRouter(dir), callers: map[string]*ipc.Caller{}}
	rt.inv.router.AppendSpan = rt.sh.appendSpan
	if lastErr != nil {
		rt.emit(Event{"event": "warning", "warning": "deadlines not resumed: " + lastErr.Error()})
	}
	// What a crash left goes: a temp file older than a minute is no
	// writer's, another runtime's sharing the directory included.
	rt.sweep()
	var spawned []spawnedMate
	var watch store.Subscription
	keeper := func() {}
	fail := func(err error) (*Runtime, error) {
		cancel()
		if watch != nil {
			_ = watch.Stop() // the start failed: its error is the one said
		}
		for _, sm := range spawned {
			rt.launch(ctx, sm) // its goroutine sees ctx ended and cleans up
		}
		rt.wg.Wait()
		_ = rt.sh.stopConsumers() // as above
		keeper()
		rt.releaseLeases()
		unlock()
		return nil, err
	}
	// The store's watch starts before anything is read: a request or a
	// restart asked from here on is told, and one that cannot start fails
	// the start while nothing runs.
	if watch, err = rt.watchStore(ctx); err != nil {
		return fail(err)
	}
	// The leases are kept from the first one taken: the start may await
	// one (takeLeases) while it holds others.
	keeper = rt.keepLeases()
	if err := rt.takeLeases(); err != nil {
		return fail(err)
	}
	rt.settleLastRun()
	if team.Down(last) && rt.runsHere(protocol.Lead) {
		rt.resumeDeadlines(team.PausedSince(last), time.Now())
	}
	if rt.runsHere(protocol.Lead) {
		if err := rt.sh.consume(protocol.Lead, rt.handleLead); err != nil {
			return fail(err)
		}
	}
	// Every teammate is spawned (record, process, inbox consumer) before
	// any begins its run: the first ones' work does not slow the spawning
	// of the rest, and team_started comes as soon as all are there.
	// The logs' shippers start before the processes: their first lines
	// are shipped too.
	rt.shipLogs(rt.ours(t.Members))
	sms, err := rt.spawnAll(ctx, rt.ours(t.Members))
	for _, sm := range sms {
		if sm.mt != nil {
			spawned = append(spawned, sm)
		}
	}
	if err != nil {
		return fail(err)
	}
	rt.mu.Lock()
	rt.lastRecs = nil
	rt.mu.Unlock()
	for _, sm := range spawned {
		rt.launch(ctx, sm)
	}
	rt.emit(rt.started())
	rt.wg.Add(2)
	go func() {
		defer rt.wg.Done()
		rt.archiveLoop(ctx)
	}()
	go func() {
		defer rt.wg.Done()
		rt.claimLeases(ctx)
	}()
	go func() {
		defer close(rt.done)
		defer unlock()
		defer cancel()
		rt.loop(ctx)
		rt.wg.Wait() // teammates see ctx and stop
		rt.err = rt.sh.stopConsumers()
		if watch != nil {
			_ = watch.Stop() // ends with the runtime: nothing left to report
		}
		keeper()
		rt.releaseLeases()
		rt.emit(Event{"event": "team_stopped", "team": t.Name})
	}()
	return rt, nil
}

// spawnAll spawns every member, writeSlots at a time: a spawn is mostly
// waiting on the kernel (records, the inbox's cursor), and the waits of a
// few overlap. It returns what it spawned, in the roster's order, and the
// first error.
func (rt *Runtime) spawnAll(ctx context.Context, specs []team.MemberSpec) ([]spawnedMate, error) {
	out := make([]spawnedMate, len(specs))
	var g errgroup.Group
	g.SetLimit(writeSlots)
	for i, spec := range specs {
		g.Go(func() error {
			sm, err := rt.spawn(ctx, spec, true)
			out[i] = sm
			return err
		})
	}
	return out, g.Wait()
}

// loop is the runtime's own goroutine until ctx ends. It wakes only when
// something is due: a restart asked or a request changed (the watch), the
// next deadline (the alarm), the heartbeat of runtime.lock (a team
// directory's; on a store the leases and the members' records say the
// runtime is alive).
func (rt *Runtime) loop(ctx context.Context) {
	al := newAlarm()
	defer al.t.Stop()
	hb := newHeartbeat()
	defer hb.t.Stop()
	beat := hb.t.C
	if !rt.local {
		beat = nil
	}
	look := func() {
		next := rt.expire()
		al.arm(next)
		hb.counting(!next.IsZero())
	}
	rt.restartsAsked(nil, true) // asked before the watch started
	look()                      // decisions made and deadlines passed while no runtime ran
	for {
		select {
		case <-ctx.Done():
			return
		case <-al.t.C:
			al.fired()
			look()
		case <-rt.storeKick:
			// The store's watch told of a request or a restart asked,
			// maybe on another machine (watchStore).
			rt.restartsAsked(rt.restartsTold())
			rt.requestsChanged(rt.requestsTold(), al)
		case <-beat:
			if err := teamdir.Heartbeat(rt.dir); err != nil {
				rt.emit(Event{"event": "error", "error": err.Error()})
			}
			hb.beaten()
		}
	}
}

// settleLastRun corrects what a runtime that stopped without cleaning up
// (kill -9, a power loss) left saying it is alive: a member huddle ran that
// is no longer in team.json keeps the status it had, so it is recorded as
// stopped. (Members still in team.json are rewritten as they start.) It
// also says which member records are corrupt.
func (rt *Runtime) settleLastRun() {
	recs, bad, err := rt.sh.readMembers()
	if err != nil {
		rt.emit(Event{"event": "error", "error": err.Error()})
		return
	}
	for i := range bad {
		rt.reportCorrupt(&bad[i])
	}
	last := make(map[string]*protocol.Member, len(recs))
	for i := range recs {
		last[recs[i].Name] = &recs[i]
	}
	rt.mu.Lock()
	rt.lastRecs = last
	rt.mu.Unlock()
	for i := range recs {
		rec := &recs[i]
		if rt.known(rec.Name) || !team.StaleWhenDown(rec) {
			continue
		}
		was := rec.Status
		rec.Status, rec.Activity, rec.Since = protocol.MemberStopped, fmt.Sprintf("not in team.json; was %s when the last runtime ended", was), time.Now().UTC()
		if err := rt.sh.writeMember(rec); err != nil {
			rt.emit(Event{"event": "error", "member": rec.Name, "error": err.Error()})
			continue
		}
		rt.recordMove(rec)
		rt.emit(Event{"event": "member_status", "member": rec.Name, "status": string(rec.Status), "activity": rec.Activity})
		// As when a member stops (finish): what was pending from or to it
		// can no longer be answered.
		rt.cancelPending(rec.Name, rec.Name+" is no longer in team.json")
	}
}

// resumedDeadline is r's deadline given back the time from pausedAt (or
// its creation, if later) to now; false when r keeps its deadline: it is
// not pending, was overdue when the clock stopped, or no time passed.
func resumedDeadline(r *protocol.Request, pausedAt, now time.Time) (time.Time, bool) {
	from := pausedAt
	if r.Created.After(from) {
		from = r.Created
	}
	if r.Status != protocol.RequestPending || !r.Deadline.After(from) || !now.After(from) {
		return time.Time{}, false
	}
	return now.Add(r.Deadline.Sub(from)).UTC(), true
}

// Wait waits until the team has stopped (its context ended) and returns
// what went wrong in stopping, if anything.
func (rt *Runtime) Wait() error {
	<-rt.done
	return rt.err
}

func (rt *Runtime) emit(e Event) {
	if rt.opts.OnEvent == nil {
		return
	}
	if !rt.secrets.Empty() {
		for k, v := range e {
			switch v := v.(type) {
			case string:
				e[k] = rt.secrets.String(v)
			case error:
				e[k] = rt.secrets.String(v.Error())
			}
		}
	}
	e["ts"] = protocol.FormatTime(time.Now())
	rt.evMu.Lock()
	defer rt.evMu.Unlock()
	rt.opts.OnEvent(e)
}

// knownSecrets are the secrets given and the values of the keys team.json
// names: an llm member's api_key_env, an http target's.
func knownSecrets(t *team.Team, given []string) *redact.Set {
	all := slices.Clone(given)
	for _, m := range t.Members {
		if m.Runtime.Kind == team.RuntimeLLM && m.Runtime.APIKeyEnv != "" {
			all = append(all, os.Getenv(m.Runtime.APIKeyEnv))
		}
		if m.Target != nil && m.Target.APIKeyEnv != "" {
			all = append(all, os.Getenv(m.Target.APIKeyEnv))
		}
	}
	return redact.New(all...)
}

// deadLetter records refused input from an inbox and says so in the events.
func (rt *Runtime) deadLetter(member string, d store.Delivery, reason string) {
	if err := rt.sh.deadLetterMsg(member, d, reason); err != nil {
		rt.emit(Event{"event": "error", "member": member, "error": err.Error()})
	}
	rt.emit(Event{"event": "dead_letter", "member": member, "id": d.Msg.ID, "reason": reason})
}

func (rt *Runtime) delivered(member string, d store.Delivery) {
	e := Event{"event": "message_delivered", "member": member, "id": d.Msg.ID, "type": string(d.Msg.Type), "from": d.Msg.From, "to": d.Msg.To}
	if d.Redelivery {
		e["redelivery"] = true
	}
	rt.emit(e)
}

// handleLead handles the lead's inbox.
func (rt *Runtime) handleLead(_ context.Context, d store.Delivery) error {
	m := d.Msg
	rt.delivered(protocol.Lead, d)
	switch m.Type {
	case protocol.TypePlanApprovalRequest:
		return rt.planArrived(d)
	case protocol.TypeShutdownResponse:
		return rt.shutdownAnswered(d)
	case protocol.TypeStatus:
		return rt.statusReported(d)
	case protocol.TypePermissionRequest:
		return rt.permissionArrived(d)
	case protocol.TypePlanApprovalResponse, protocol.TypeShutdownRequest, protocol.TypePermissionResponse:
		rt.deadLetter(protocol.Lead, d, fmt.Sprintf("%s is sent by the lead, not to it", m.Type))
	}
	return nil
}

func (rt *Runtime) known(name string) bool {
	_, ok := rt.team.Member(name)
	return ok
}

// planArrived opens (or finds) the record of a plan request, cancels the
// member's older pending plans, and auto-approves when asked to.
func (rt *Runtime) planArrived(d store.Delivery) error {
	m := d.Msg
	if !rt.known(m.From) {
		rt.deadLetter(protocol.Lead, d, fmt.Sprintf("plan from %q, who is not in the team", m.From))
		return nil
	}
	r, err := rt.recordFor(m, protocol.KindPlan, m.From, protocol.Lead)
	if err != nil {
		return err
	}
	if r.Kind != protocol.KindPlan || r.From != m.From {
		rt.deadLetter(protocol.Lead, d, fmt.Sprintf("request %s is not a plan of %s", r.ID, m.From))
		return nil
	}
	rt.emit(Event{"event": "request_opened", "id": r.ID, "kind": string(r.Kind), "from": r.From, "to": r.To})
	rt.supersede(r)
	if rt.opts.AutoApprove && r.Status == protocol.RequestPending {
		if _, err := rt.sh.decide(r.ID, protocol.EventApprove, "", "lead (auto-approve)"); err != nil {
			var already *store.AlreadyError
			if !errors.As(err, &already) {
				return err
			}
		}
		rt.emit(Event{"event": "request_resolved", "id": r.ID, "status": string(protocol.RequestApproved), "by": "lead (auto-approve)"})
	}
	return nil
}

// supersede cancels the member's pending plan requests older than r.
func (rt *Runtime) supersede(r *protocol.Request) {
	all, err := rt.pending()
	if err != nil {
		return
	}
	for _, old := range all {
		if old.ID == r.ID || old.Kind != protocol.KindPlan || old.From != r.From || old.Created.After(r.Created) {
			continue
		}
		if nr, err := rt.sh.resolveID(old.ID, team.Resolution{Event: protocol.EventCancel, By: "huddle", Text: "superseded by " + r.ID}); err == nil {
			rt.emit(Event{"event": "request_resolved", "id": old.ID, "status": string(protocol.RequestCancelled), "by": "huddle"})
			rt.tellPlanEnded(nr)
		}
	}
}

// shutdownAnswered checks a teammate's answer against its request record.
func (rt *Runtime) shutdownAnswered(d store.Delivery) error {
	m := d.Msg
	r, err := rt.sh.loadRequest(m.RequestID)
	if errors.Is(err, os.ErrNotExist) {
		rt.deadLetter(protocol.Lead, d, "shutdown_response for unknown request "+m.RequestID)
		return nil
	}
	if err != nil {
		return err
	}
	if r.Kind != protocol.KindShutdown {
		rt.deadLetter(protocol.Lead, d, fmt.Sprintf("shutdown_response for %s, a %s request", r.ID, r.Kind))
		return nil
	}
	if r.To != m.From {
		rt.deadLetter(protocol.Lead, d, fmt.Sprintf("shutdown_response for %s from %s; only %s answers it", r.ID, m.From, r.To))
		return nil
	}
	if r, err = rt.sh.settle(r, team.Resolution{Event: m.Event(), By: m.From, Text: m.Reason}); err != nil {
		rt.deadLetter(protocol.Lead, d, fmt.Sprintf("%s: %v", m.Type, err))
		return nil
	}
	rt.emit(Event{"event": "request_resolved", "id": r.ID, "status": string(r.Status), "by": r.ResolvedBy, "reason": r.ResponseReason})
	return nil
}

// statusReported records what an external member says it is doing.
func (rt *Runtime) statusReported(d store.Delivery) error {
	m := d.Msg
	spec, ok := rt.team.Member(m.From)
	if !ok || spec.Runtime.Kind != team.RuntimeExternal {
		// huddle keeps the status of the members it runs itself.
		rt.deadLetter(protocol.Lead, d, fmt.Sprintf("status from %q, which huddle does not take reports from", m.From))
		return nil
	}
	rec, err := rt.sh.loadMember(m.From)
	if err != nil {
		rec = &protocol.Member{Name: m.From, Role: spec.Role, Runtime: team.RuntimeExternal}
	}
	moved := rec.Status != m.Status
	if moved {
		rec.Since = time.Now().UTC()
	}
	if moved || rec.Activity != m.Content {
		rec.ActivitySince = time.Now().UTC()
	}
	rec.Status, rec.Activity = m.Status, m.Content
	if err := rt.sh.writeMember(rec); err != nil {
		return err
	}
	if moved {
		rt.recordMove(rec)
	}
	rt.emit(Event{"event": "member_status", "member": m.From, "status": string(m.Status), "activity": m.Content})
	return nil
}

// expire moves pending requests past their deadline to expired, applies
// the decisions made elsewhere and settles the exec teammates awaiting
// them. It returns when it should run next: the earliest deadline still
// pending (zero: none), or within Tick when a record could not be read or
// resolved.
func (rt *Runtime) expire() (next time.Time) {
	soon := time.Now().Add(rt.opts.Tick)
	earliest := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	all, err := rt.pending()
	if err != nil {
		earliest(soon)
		return next
	}
	now := time.Now()
	for _, r := range all {
		if nr, err := rt.sh.apply(&r); err != nil || nr.Status.IsTerminal() {
			if err != nil {
				earliest(soon)
			}
			continue // decided elsewhere, and now written down
		}
		if now.Before(r.Deadline) {
			earliest(r.Deadline)
			continue
		}
		var nr *protocol.Request
		if r.Kind == protocol.KindReview {
			nr, err = rt.expireReview(r.ID)
		} else {
			nr, err = rt.sh.resolveID(r.ID, team.Resolution{Event: protocol.EventDeadline, By: "huddle", Text: "no answer before the deadline"})
		}
		var already *store.AlreadyError
		switch {
		case err == nil:
			rt.emit(Event{"event": "request_resolved", "id": nr.ID, "status": string(nr.Status), "by": "huddle"})
			if mt := rt.mate(nr.From); mt != nil {
				mt.poke()
			}
			rt.tellPlanEnded(nr)
			rt.tellPermissionEnded(nr)
		case !errors.As(err, &already):
			earliest(soon) // try again
		}
	}
	rt.settleAwaited()
	return next
}

// settleAwaited moves each exec teammate whose awaited plan is final out of
// awaiting_approval, so the roster follows a decision that no line
// announced (docs/ARCHITECTURE.md, "Wake-ups"): the deciding process died before its
// append, or a resolver wrote only the decision file.
func (rt *Runtime) settleAwaited() {
	rt.mu.Lock()
	mates := make([]*mate, 0, len(rt.mates))
	for _, mt := range rt.mates {
		mates = append(mates, mt)
	}
	rt.mu.Unlock()
	for _, mt := range mates {
		mt.mu.Lock()
		id := mt.rec.RequestID
		awaiting := mt.proc != nil && mt.rec.Status == protocol.MemberAwaitingApproval && id != ""
		mt.mu.Unlock()
		if !awaiting {
			continue
		}
		r, err := rt.sh.applyID(id)
		if err != nil || !r.Status.IsTerminal() {
			continue
		}
		if err := mt.planSettled(r); err != nil {
			rt.emit(Event{"event": "error", "member": mt.spec.Name, "error": err.Error()})
		}
	}
}

// tellPlanEnded tells the member whose plan huddle ended (expired, or
// cancelled by a newer plan) with a plan_approval_response from the lead:
// approve false, reason "expired" or "cancelled", and why as feedback. An
// exec agent learns from it that its plan is over (docs/ARCHITECTURE.md, "Messages");
// a scripted teammate's wait wakes and it submits again. A plan cancelled
// because its member is gone is told to nobody.
func (rt *Runtime) tellPlanEnded(r *protocol.Request) {
	if r.Kind != protocol.KindPlan || !rt.known(r.From) {
		return
	}
	m := protocol.NewMessage(protocol.TypePlanApprovalResponse, protocol.Lead, r.From)
	m.RequestID, m.Approve, m.Reason, m.Feedback = r.ID, protocol.Bool(false), string(r.Status), r.ResponseReason
	if err := rt.sh.appendTo(r.From, &m); err != nil {
		rt.emit(Event{"event": "error", "member": r.From, "error": fmt.Sprintf("telling %s that plan %s is %s: %v", r.From, r.ID, r.Status, err)})
	}
}

func (rt *Runtime) mate(name string) *mate {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.mates[name]
}

// cancelPending cancels every pending request from or to a member that is
// gone, but its reviews: the change is on its branch, not in its process,
// and waits for the lead across stops and restarts.
func (rt *Runtime) cancelPending(member, why string) {
	rt.cancelWhere(why, func(r *protocol.Request) bool {
		return (r.From == member || r.To == member) && r.Kind != protocol.KindReview
	})
}

// cancelWhere cancels every pending request which picks, saying why.
func (rt *Runtime) cancelWhere(why string, which func(r *protocol.Request) bool) {
	all, err := rt.pending()
	if err != nil {
		return
	}
	for _, r := range all {
		if !which(&r) {
			continue
		}
		if nr, err := rt.sh.resolveID(r.ID, team.Resolution{Event: protocol.EventCancel, By: "huddle", Text: why}); err == nil {
			rt.emit(Event{"event": "request_resolved", "id": nr.ID, "status": string(nr.Status), "by": "huddle", "reason": why})
		}
	}
}

// recordFor returns the record of the request message m names, creating it
// from m when there is none: a foreign agent may write the line alone, and
// the receiver creates the record (docs/ARCHITECTURE.md, "Messages").
func (rt *Runtime) recordFor(m protocol.Message, kind protocol.RequestKind, from, to string) (*protocol.Request, error) {
	r, err := rt.sh.loadRequest(m.RequestID)
	if !errors.Is(err, os.ErrNotExist) {
		return r, err
	}
	ttl := rt.team.Settings.Approval()
	if kind == protocol.KindShutdown {
		ttl = rt.team.Settings.Shutdown()
	}
	// The deadline counts from now, when huddle received the request, not
	// from the line's ts: a foreign clock can be wrong by years.
	nr := protocol.NewRequest(kind, m.RequestID, from, to, time.Now(), ttl)
	nr.Plan, nr.Reason = m.Plan, m.Reason
	if err := rt.sh.createRequest(&nr); err != nil && !errors.Is(err, store.ErrExists) {
		return nil, err
	}
	return rt.sh.loadRequest(m.RequestID)
}

// pending reads the live request records (requests/ itself, never the
// archive) and returns the pending ones, oldest first. The final ones it
// finds are queued for the archiver (archiveLoop), which moves them to
// requests/done/ in the background: history costs nothing per tick, and
// never delays the start. A corrupt record is reported once.
func (rt *Runtime) pending() ([]protocol.Request, error) {
	rt.listMu.Lock()
	defer rt.listMu.Unlock()
	all, bad, err := rt.sh.liveRequests()
	if err != nil {
		return nil, err
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for i := range bad {
		rt.reportCorruptLocked(&bad[i])
	}
	out := all[:0]
	for _, r := range all {
		if r.Status.IsTerminal() {
			rt.arch.add(r.ID)
			continue
		}
		out = append(out, r)
	}
	return out, nil
}

// reportCorrupt says once, in an event, that a record cannot be read.
func (rt *Runtime) reportCorrupt(ce *store.CorruptError) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.reportCorruptLocked(ce)
}

func (rt *Runtime) reportCorruptLocked(ce *store.CorruptError) {
	if rt.corrupt[ce.File] == ce.Err {
		return
	}
	rt.corrupt[ce.File] = ce.Err
	rt.emit(Event{"event": "corrupt_record", "file": ce.File, "error": ce.Err})
}
