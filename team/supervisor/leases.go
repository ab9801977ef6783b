package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"huddle/ipc"
	"huddle/protocol"
	"huddle/store"
	"huddle/team"
	"huddle/teamdir"
)

// A runtime runs some of the team's members, each under a lease, and
// leaves the others to the runtimes of other machines: their inboxes,
// records and requests are in the store, so a message, a plan or a call
// reaches a member wherever it runs (docs/ARCHITECTURE.md, "The team
// directory and the store"). On a team directory the runtime's flock on
// runtime.lock is every member's lease.

// DefaultLeaseTTL is how long a member's lease outlives its last renewal.
const DefaultLeaseTTL = 10 * time.Second

// localStore is a store kept in a team directory (store/filestore): Dir is
// the directory.
type localStore interface {
	Dir() string
}

type warner interface {
	SetWarn(fn func(member string, err error))
}

// localFiles reports whether st is dir's own files; a files store of
// another directory cannot run the team in dir.
func localFiles(st store.Store, dir string) (bool, error) {
	ls, ok := st.(localStore)
	if !ok {
		return false, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false, err
	}
	if filepath.Clean(ls.Dir()) != filepath.Clean(abs) {
		return false, fmt.Errorf("run: the team in %s cannot run from %s", ls.Dir(), dir)
	}
	return true, nil
}

// loadTeam reads the team.json st keeps. A runtime on a remote store
// creates its local directory: its logs, transcripts and status histories
// are all under members/, which no record write makes there.
func loadTeam(ctx context.Context, st store.Store, dir string, local bool) (*team.Team, error) {
	if local {
		return team.Load(dir)
	}
	if err := os.MkdirAll(teamdir.MembersDirPath(dir), teamdir.DirMode); err != nil {
		return nil, fmt.Errorf("local directory: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, storeOpTimeout)
	defer cancel()
	return team.LoadFrom(ctx, st)
}

// runtimeBefore is what the store says of the team's runtime before this
// one starts (RuntimeOf): whether it was down, and since when. It cannot
// say when the store cannot be read: nothing is resumed then.
func runtimeBefore(ctx context.Context, st store.Store) (team.RuntimeState, error) {
	ctx, cancel := context.WithTimeout(ctx, storeOpTimeout)
	defer cancel()
	if rl, ok := st.(team.RuntimeLocker); ok {
		return rl.RuntimeLock()
	}
	states, _, err := st.Members(ctx, team.LostAfter)
	if err != nil {
		return team.RuntimeState{}, err
	}
	return team.RuntimeFromRecords(slices.Values(states), team.LostAfter), nil
}

// sweep removes the temp files a crash left in the local directory and,
// when the store sweeps its own (store.Sweeper), there.
func (rt *Runtime) sweep() {
	var err error
	if sw, ok := rt.st.(store.Sweeper); ok {
		ctx, cancel := op()
		err = sw.Sweep(ctx)
		cancel()
	}
	if !rt.local {
		err = errors.Join(err, teamdir.Sweep(rt.dir))
	}
	if err != nil {
		rt.emit(Event{"event": "error", "error": err.Error()})
	}
}

// memberLease is a member this runtime runs on a store: its lease, and the
// context its run ends with when the lease is lost.
type memberLease struct {
	name   string
	lease  store.Lease
	ctx    context.Context
	cancel context.CancelCauseFunc
	lost   atomic.Bool
}

// takeLeases takes the lease of every member this runtime runs on a store:
// those of Options.Members, else every member; and the lead's. A listed
// member's lease held elsewhere is awaited to its end, once: taken then,
// or, renewed by a holder that lives, it fails the start. Without
// Members, a member (or the lead) held elsewhere is left to its holder
// and taken as soon as its lease ends (claimLeases); with Members, the
// lead's is taken only when free now.
func (rt *Runtime) takeLeases() error {
	if rt.local {
		// On a team directory the runtime's flock is every lease: it runs
		// every member (rt.leases stays nil), and what was asked of them
		// before it started is honoured by this start.
		if len(rt.opts.Members) > 0 {
			return errors.New("a runtime on a team directory runs every member: Members are for a team in a store")
		}
		for _, name := range rt.runnable() {
			rt.dropRestartAsked(name)
		}
		return nil
	}
	listed, err := rt.listedMembers()
	if err != nil {
		return err
	}
	want := listed
	if len(rt.opts.Members) == 0 {
		want = rt.runnable()
	}
	// The lead first, and each name once: --members may name the lead
	// anywhere and a member twice, and a second take of a lease of ours
	// would read as "runs elsewhere".
	seen := map[string]bool{}
	for _, name := range append([]string{protocol.Lead}, want...) {
		if seen[name] {
			continue
		}
		seen[name] = true
		ml, err := rt.takeLease(name)
		var held *store.HeldError
		isListed := slices.Contains(listed, name)
		if errors.As(err, &held) && isListed {
			// Maybe a runtime killed a moment ago, its leases running on.
			rt.emit(Event{"event": "runs_elsewhere", "member": name, "holder": held.Holder, "until": protocol.FormatTime(held.Expires)})
			ml, err = rt.takeAtEnd(name, held)
		}
		switch {
		case errors.As(err, &held) && !isListed:
			rt.emit(Event{"event": "runs_elsewhere", "member": name, "holder": held.Holder, "until": protocol.FormatTime(held.Expires)})
			if len(rt.opts.Members) == 0 {
				rt.claims = append(rt.claims, &claim{name: name, at: held.Expires})
			}
		case errors.As(err, &held):
			return fmt.Errorf("%s runs elsewhere (holder %s, until %s)", name, held.Holder, held.Expires.UTC().Format(time.RFC3339))
		case err != nil:
			return fmt.Errorf("lease of %s: %w", name, err)
		default:
			rt.addLease(ml)
			if name != protocol.Lead {
				rt.dropRestartAsked(name)
			}
		}
	}
	return nil
}

// Lease clocks: a lease is tried again when the store says it ends; one
// that has ended by this machine's clock but is still there (the server
// removes it on its own clock) is tried again after leaseRetry, doubling
// to leaseRetryMost.
const (
	leaseRetry     = 100 * time.Millisecond
	leaseRetryMost = 2 * time.Second
)

// takeAtEnd takes name's lease, which held says another holder has, when
// it ends: a holder that lives renews it first, and the *HeldError then
// says so. The wait ends with the runtime's context.
func (rt *Runtime) takeAtEnd(name string, held *store.HeldError) (*memberLease, error) {
	c := &claim{name: name, at: held.Expires}
	giveUp := held.Expires.Add(rt.opts.LeaseTTL)
	for {
		if !pause(rt.ctx, time.Until(c.at)) {
			return nil, rt.ctx.Err()
		}
		ml, err := rt.takeLease(name)
		var again *store.HeldError
		if !errors.As(err, &again) {
			return ml, err
		}
		if again.Expires.After(time.Now()) || time.Now().After(giveUp) {
			return nil, again // renewed, or taken by another
		}
		c.retry()
	}
}

// pause waits d or until ctx ends; false when ctx ended.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// claim is a lease this runtime waits for: tried again at at.
type claim struct {
	name string
	at   time.Time
	// wait is the last retry's wait (0 when the last try found the lease
	// held with an end to wait for); failing says an error was said.
	wait    time.Duration
	failing bool
}

// retry tries again soon: the lease ended by this machine's clock, or the
// store failed.
func (c *claim) retry() {
	c.wait = min(max(2*c.wait, leaseRetry), leaseRetryMost)
	c.at = time.Now().Add(c.wait)
}

// claimLeases takes each lease takeLeases left to another holder as soon
// as it ends, and runs its member (or the lead) here: a runtime started
// again at once after a kill -9 takes its members back as the killed
// one's leases expire, and one that runs every free member stands by for
// those other machines run. A lease renewed meanwhile is tried again at
// its new end, so a holder that lives costs a try every lease TTL or so.
// It returns when ctx ends or every lease is taken.
func (rt *Runtime) claimLeases(ctx context.Context) {
	if len(rt.claims) == 0 {
		return
	}
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for len(rt.claims) > 0 {
		next := rt.claims[0]
		for _, c := range rt.claims[1:] {
			if c.at.Before(next.at) {
				next = c
			}
		}
		t.Reset(time.Until(next.at))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if rt.tryClaim(next) {
			rt.claims = slices.DeleteFunc(rt.claims, func(c *claim) bool { return c == next })
		}
	}
}

// tryClaim tries to take c's lease and reports whether it is done with:
// taken (its member runs here now), or the runtime is stopping.
func (rt *Runtime) tryClaim(c *claim) bool {
	ml, err := rt.takeLease(c.name)
	var held *store.HeldError
	switch {
	case errors.As(err, &held):
		c.failing = false
		if held.Expires.After(time.Now()) {
			c.at, c.wait = held.Expires, 0
		} else {
			c.retry() // ended: the server removes it soon
		}
		return false
	case err != nil:
		if !c.failing {
			c.failing = true
			rt.emit(Event{"event": "warning", "member": c.name, "warning": fmt.Sprintf("taking the lease of %s: %v (tried again, backing off)", c.name, err)})
		}
		c.retry()
		return false
	}
	rt.addLease(ml)
	if rt.ctx.Err() != nil {
		return true // released as the runtime stops
	}
	err = rt.runTaken(c.name)
	if err == nil {
		return true
	}
	rt.emit(Event{"event": "error", "member": c.name, "error": err.Error()})
	if c.name == protocol.Lead {
		// Its inbox is not consumed here: the lease goes back, to this
		// runtime or another, later.
		rt.dropLease(ml)
		c.retry()
		return false
	}
	return true // the member's run says how it failed
}

// dropLease gives back a lease taken that nothing runs under.
func (rt *Runtime) dropLease(ml *memberLease) {
	rt.leaseMu.Lock()
	delete(rt.leases, ml.name)
	rt.leaseMu.Unlock()
	ml.cancel(nil)
	ctx, cancel := op()
	defer cancel()
	if err := ml.lease.Release(ctx); err != nil {
		rt.emit(Event{"event": "warning", "member": ml.name, "warning": fmt.Sprintf("releasing the lease of %s: %v", ml.name, err)})
	}
}

// runTaken runs here a member (or the lead) whose lease this runtime took
// after its start, as the start runs those it took then.
func (rt *Runtime) runTaken(name string) error {
	rt.emit(Event{"event": "runs_here", "member": name, "holder": rt.opts.Holder})
	if name == protocol.Lead {
		return rt.sh.consume(protocol.Lead, rt.handleLead)
	}
	rt.dropRestartAsked(name)
	spec, _ := rt.team.Member(name)
	rt.shipLogs([]team.MemberSpec{spec})
	return rt.run(rt.ctx, spec, true)
}

// listedMembers checks Options.Members: each a member huddle runs (or the
// lead).
func (rt *Runtime) listedMembers() ([]string, error) {
	var out []string
	for _, name := range rt.opts.Members {
		if name == protocol.Lead {
			out = append(out, name)
			continue
		}
		spec, ok := rt.team.Member(name)
		if !ok {
			return nil, fmt.Errorf("no member %q in team %s", name, rt.team.Name)
		}
		if !spec.RunByHuddle() {
			return nil, fmt.Errorf("%s is not run by huddle (runtime %q)", name, spec.Runtime.Kind)
		}
		out = append(out, name)
	}
	return out, nil
}

// runnable are the members huddle runs, in the roster's order.
func (rt *Runtime) runnable() []string {
	var out []string
	for _, m := range rt.team.Members {
		if m.RunByHuddle() {
			out = append(out, m.Name)
		}
	}
	return out
}

func (rt *Runtime) takeLease(name string) (*memberLease, error) {
	ctx, cancel := op()
	defer cancel()
	l, err := rt.st.AcquireLease(ctx, name, rt.opts.Holder, rt.opts.LeaseTTL)
	if err != nil {
		return nil, err
	}
	mctx, mcancel := context.WithCancelCause(rt.ctx)
	return &memberLease{name: name, lease: l, ctx: mctx, cancel: mcancel}, nil
}

// addLease records a lease taken: its member runs here.
func (rt *Runtime) addLease(ml *memberLease) {
	rt.leaseMu.Lock()
	defer rt.leaseMu.Unlock()
	rt.leases[ml.name] = ml
}

// lease is name's lease when this runtime holds it (nil otherwise, and on
// a team directory).
func (rt *Runtime) lease(name string) *memberLease {
	rt.leaseMu.Lock()
	defer rt.leaseMu.Unlock()
	return rt.leases[name]
}

// heldLeases are the leases this runtime took, by name.
func (rt *Runtime) heldLeases() []*memberLease {
	rt.leaseMu.Lock()
	defer rt.leaseMu.Unlock()
	out := make([]*memberLease, 0, len(rt.leases))
	for _, ml := range rt.leases {
		out = append(out, ml)
	}
	slices.SortFunc(out, func(a, b *memberLease) int { return strings.Compare(a.name, b.name) })
	return out
}

// runsHere reports whether this runtime runs name: always on a team
// directory, on a store when it holds name's lease.
func (rt *Runtime) runsHere(name string) bool {
	return rt.local || rt.lease(name) != nil
}

// ours are the members of specs this runtime spawns: on a store, those it
// holds the lease of, and the members huddle does not run (a spawn only
// writes their record when they have none).
func (rt *Runtime) ours(specs []team.MemberSpec) []team.MemberSpec {
	if rt.local {
		return specs
	}
	var out []team.MemberSpec
	for _, s := range specs {
		if !s.RunByHuddle() || rt.runsHere(s.Name) {
			out = append(out, s)
		}
	}
	return out
}

// started is the team_started event; on a store it names what runs here
// (and the lease each member taken later is a runs_here event).
func (rt *Runtime) started() Event {
	e := Event{"event": "team_started", "team": rt.team.Name, "members": len(rt.team.Members)}
	if !rt.local {
		here := []string{}
		for _, ml := range rt.heldLeases() {
			here = append(here, ml.name)
		}
		e["runs"] = here
		e["holder"] = rt.opts.Holder
	}
	return e
}

// memberCtx is the context member name runs in: on a store, it ends too
// when the member's lease is lost.
func (rt *Runtime) memberCtx(ctx context.Context, name string) context.Context {
	if ml := rt.lease(name); ml != nil {
		return ml.ctx
	}
	return ctx
}

// leaseLost reports whether name's lease was lost: its runtime writes
// nothing more of it, as another holder runs it now.
func (rt *Runtime) leaseLost(name string) bool {
	ml := rt.lease(name)
	return ml != nil && ml.lost.Load()
}

// keepLeases renews the leases every third of their TTL and heartbeats
// the members run here every third of LostAfter, until the returned
// function is called (it waits for the keeper to stop). It starts before
// the leases are taken: a start that awaits one keeps those it took.
func (rt *Runtime) keepLeases() (stop func()) {
	if rt.local {
		return func() {} // a team directory's: its flock is every lease
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		renew := time.NewTicker(rt.opts.LeaseTTL / 3)
		defer renew.Stop()
		beat := time.NewTicker(team.LostAfter / 3)
		defer beat.Stop()
		for {
			select {
			case <-done:
				return
			case <-renew.C:
				rt.renewLeases()
			case <-beat.C:
				rt.heartbeat()
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

func (rt *Runtime) renewLeases() {
	for _, ml := range rt.heldLeases() {
		if ml.lost.Load() {
			continue
		}
		ctx, cancel := op()
		err := ml.lease.Renew(ctx)
		cancel()
		switch {
		case errors.Is(err, store.ErrLeaseLost):
			rt.loseLease(ml, err)
		case err != nil:
			rt.emit(Event{"event": "warning", "member": ml.name, "warning": fmt.Sprintf("renewing the lease of %s: %v", ml.name, err)})
		}
	}
}

// loseLease stops a member whose lease another runtime took: its inbox is
// no longer consumed here, its run ends, and nothing more of it is written.
func (rt *Runtime) loseLease(ml *memberLease, err error) {
	ml.lost.Store(true)
	rt.emit(Event{"event": "error", "member": ml.name, "error": fmt.Sprintf("the lease of %s is lost (%v): it stops here", ml.name, err)})
	ml.cancel(fmt.Errorf("lease of %s lost: %w", ml.name, err))
	if err := rt.sh.stopConsuming(ml.name); err != nil {
		rt.emit(Event{"event": "error", "member": ml.name, "error": err.Error()})
	}
}

// heartbeat says every member run here is alive, so that no reader takes
// it for lost while it waits; one not spawned yet has no record to say it
// of.
func (rt *Runtime) heartbeat() {
	for _, ml := range rt.heldLeases() {
		name := ml.name
		if name == protocol.Lead || ml.lost.Load() || rt.mate(name) == nil {
			continue // the lead has no member record
		}
		ctx, cancel := op()
		err := rt.st.Heartbeat(ctx, name)
		cancel()
		if err != nil {
			rt.emit(Event{"event": "warning", "member": name, "warning": fmt.Sprintf("heartbeat of %s: %v", name, err)})
		}
	}
}

// releaseLeases gives up every lease still held, so another runtime may
// run those members at once.
func (rt *Runtime) releaseLeases() {
	for _, ml := range rt.heldLeases() {
		ml.cancel(nil)
		if ml.lost.Load() {
			continue
		}
		ctx, cancel := op()
		if err := ml.lease.Release(ctx); err != nil {
			rt.emit(Event{"event": "warning", "member": ml.name, "warning": fmt.Sprintf("releasing the lease of %s: %v", ml.name, err)})
		}
		cancel()
	}
}

// storePolicy is member's policy from the store the team runs on; found
// is false when the store holds none.
func (rt *Runtime) storePolicy(member string) (p *ipc.Policy, found bool, err error) {
	ctx, cancel := op()
	defer cancel()
	p, err = PolicyFrom(ctx, rt.st, store.MemberPolicyConfig(member))
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, fmt.Errorf("IPC_ERROR: %s: %w", member, err)
	}
	return p, true, nil
}

// PolicyFrom reads and parses the IPC policy a store keeps as name (a
// store.ConfigName); store.ErrNotFound when it holds none.
func PolicyFrom(ctx context.Context, st store.Store, name string) (*ipc.Policy, error) {
	b, err := st.Config(ctx, name)
	if err != nil {
		return nil, err
	}
	p, err := ipc.ParsePolicy(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return p, nil
}

// resumeDeadlines gives pending requests back the time they spent while
// no runtime ran the team: a deadline counts only while a runtime can act
// on it, so a countdown the UI showed as paused resumes where it stopped.
// A request that was pending when the clock stopped at pausedAt (or was
// created later, while the team was down) gets deadline + (now − pausedAt)
// (or now + its whole span); a decision made meanwhile stays the truth
// (store.Store.Reschedule). Only the runtime that takes the lead's lease
// of a team that was down does this, as the lease is one holder's, so two
// runtimes starting together do not both extend a deadline.
func (rt *Runtime) resumeDeadlines(pausedAt, now time.Time) {
	ctx, cancel := op()
	defer cancel()
	live, _, err := rt.st.LiveRequests(ctx)
	if err != nil {
		rt.emit(Event{"event": "error", "error": err.Error()})
		return
	}
	for i := range live {
		r := &live[i]
		if d, ok := resumedDeadline(r, pausedAt, now); ok {
			nr, err := rt.st.Reschedule(ctx, r.ID, d)
			if err != nil {
				rt.emit(Event{"event": "error", "id": r.ID, "error": err.Error()})
				continue
			}
			if nr.Status == protocol.RequestPending && nr.Deadline.Equal(d) {
				rt.emit(Event{"event": "deadline_resumed", "id": r.ID, "deadline": protocol.FormatTime(d)})
			}
		}
	}
}

// watchStore starts the store's watch of requests and restart asks: a
// record another process or machine wrote, or a restart asked there,
// wakes the loop (storeKick), which takes the asks told and looks at the
// requests told. Nothing is polled: an idle team sends no request to its
// store but its heartbeats and leases.
func (rt *Runtime) watchStore(ctx context.Context) (store.Subscription, error) {
	sub, err := rt.st.Watch(ctx, func(c store.Change) {
		rt.toldMu.Lock()
		told := &rt.told
		if c.Kind == store.ChangeRequest {
			told = &rt.reqTold
		}
		if *told == nil {
			*told = map[string]bool{}
		}
		(*told)[c.Name] = true
		rt.toldMu.Unlock()
		select {
		case rt.storeKick <- struct{}{}:
		default:
		}
	}, store.ChangeRequest, store.ChangeRestart)
	if err != nil {
		return nil, fmt.Errorf("watch the store: %w", err)
	}
	return sub, nil
}

// restartsTold takes the members whose restart the watch told of since
// the last call, and whether it told of a change that names none (all:
// any member's may have been missed).
func (rt *Runtime) restartsTold() (names map[string]bool, all bool) {
	rt.toldMu.Lock()
	defer rt.toldMu.Unlock()
	names, rt.told = rt.told, nil
	return names, names[""]
}

// requestsTold takes the requests the watch told of since the last call
// ("" among them: any may have changed unseen).
func (rt *Runtime) requestsTold() map[string]bool {
	rt.toldMu.Lock()
	defer rt.toldMu.Unlock()
	ids := rt.reqTold
	rt.reqTold = nil
	return ids
}

// requestsChanged acts on requests that changed: the teammate awaiting one
// is woken (its decision may be there, or its record repaired), a pending
// one arms the alarm at its deadline, and the records are looked at within
// Tick (the alarm), which applies decisions, settles exec teammates and
// archives final records. A change that names none wakes every awaiting
// teammate and has the records looked at now.
func (rt *Runtime) requestsChanged(ids map[string]bool, al *alarm) {
	if len(ids) == 0 {
		return
	}
	if ids[""] {
		rt.wakeAwaiting("")
		al.arm(time.Now())
		return
	}
	for id := range ids {
		if r, err := rt.sh.loadLiveRequest(id); err == nil && r.Status == protocol.RequestPending {
			al.arm(r.Deadline)
		}
		rt.wakeAwaiting(id)
	}
	al.arm(time.Now().Add(rt.opts.Tick))
}
