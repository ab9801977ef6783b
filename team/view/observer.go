package view

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
	"time"

	"huddle/ipc/trace"
	"huddle/protocol"
	"huddle/store"
	"huddle/team"
)

// ObserveOptions tune an Observer. Zero values take the defaults.
type ObserveOptions struct {
	// Frame is the least time between two sends: changes that come faster
	// are coalesced into one snapshot. Default 16ms.
	Frame time.Duration
	// Rescan, when set, is how often the records, team.json, the dead
	// letters and the runtime are read again, for a store whose watches
	// miss changes (a file system that does not report them). Zero (the
	// default) reads them again only when the store says changes may have
	// been missed (a Change with no Name: a watcher's queue overflowed, a
	// directory was recreated), and an idle observer does nothing.
	Rescan time.Duration
	// Probe is how often runtime.lock is probed while the last probe found
	// a runtime running, on a store kept in a team directory: a runtime
	// killed with kill -9 changes no file, so only a probe sees it.
	// Default 2s. No probe runs while the team is down: a runtime starting
	// writes runtime.lock.
	Probe time.Duration
	// LostAfter is the deadline past which a member that should be running
	// and was not seen shows StatusLost, where its heartbeats say whether
	// it runs (no runtime.lock). Default LostAfter.
	LostAfter time.Duration
	// NoRuntime says no runtime runs the team, a desk (team.Team.Desk):
	// its members are sessions whose hooks write their records, so none is
	// judged lost by its heartbeats and the team is never shown down; its
	// requests' deadlines run, as the hooks keep them.
	NoRuntime bool
}

// Defaults for ObserveOptions.
const (
	DefaultFrame = 16 * time.Millisecond
	DefaultProbe = 2 * time.Second
)

func (o ObserveOptions) withDefaults() ObserveOptions {
	if o.Frame <= 0 {
		o.Frame = DefaultFrame
	}
	if o.Rescan < 0 {
		o.Rescan = 0
	}
	if o.Probe <= 0 {
		o.Probe = DefaultProbe
	}
	if o.LostAfter <= 0 {
		o.LostAfter = team.LostAfter
	}
	return o
}

// refreshEvery is how often an observer reads again what its store does
// not watch: the dead letters (no store.DeadLetterWatcher) and the unread
// counts of inboxes whose consumer it cannot follow (no
// store.CommitWatcher), as on NATS (docs/ARCHITECTURE.md, "The team
// directory and the store"). A variable for a test that must tell a count
// refreshed by a change from one refreshed by this clock.
var refreshEvery = 10 * time.Second

// observeOpTimeout bounds each read of an observer.
const observeOpTimeout = 15 * time.Second

// runtimeWatcher is a store kept in a team directory whose runtime.lock
// it can follow (store/filestore): a runtime starting or stopping writes
// it.
type runtimeWatcher interface {
	WatchRuntime(ctx context.Context, fn func()) (store.Subscription, error)
}

// Observer folds a team kept in a store into Snapshots, live: the store's
// Watch says which request or member changed and it reads only that
// record; the spans come from WatchSpans; the messages from what the store
// holds (Messages) and then WatchInbox; the unread counts from where each
// consumer stands (WatchCommits) or, where the store cannot tell it, from
// Unread; the dead letters and team.json are read when the store says
// they changed (WatchDeadLetters, WatchConfig). On a team directory,
// runtime.lock says whether a runtime runs the team, probed when it
// changes and while a runtime runs (ObserveOptions.Probe); elsewhere the
// members' heartbeats say it. The store's callbacks only note what
// changed: the reads and the sends run on the observer's goroutines. It
// only reads (docs/ARCHITECTURE.md, "The team directory and the store"):
// any number of observers, in any number of processes, watch one team.
type Observer struct {
	st   store.Store
	opts ObserveOptions
	send func(Snapshot)
	// lock is the store's runtime.lock, nil on a store without one.
	lock team.RuntimeLocker

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	subs   []store.Subscription
	// watchesDead and watchesConfig: the store tells those changes, so no
	// clock reads them.
	watchesDead, watchesConfig bool
	// refresh is refreshEvery when the observer was made.
	refresh time.Duration

	// Changes told by the store and not read yet, with all set when every
	// record of a kind is to be read again.
	pmu     sync.Mutex
	pending map[store.Change]bool
	// unreadDue are the inboxes whose unread count is to be asked again.
	unreadDue map[string]bool
	// What else is due to be read: team.json, the dead letters,
	// runtime.lock.
	teamDue, deadDue, runtimeDue bool
	kick                         chan struct{}

	mu     sync.Mutex
	m      model
	states map[string]store.MemberState // the records as the store has them
	// inboxes are the inboxes followed, by name (followInboxes); toSeed
	// counts those not seeded yet, so a loop that waits asks no map.
	inboxes map[string]*followed
	toSeed  int
}

// followed is what an observer keeps of one inbox it follows, to fold the
// messages the store held when it began (the seed) and those its watch
// delivers into one list, each once. The watch starts first: a message
// appended between the two can come from both.
type followed struct {
	seeded bool
	// watched are the sequences the watch delivered before the seed was
	// read: the seed skips them.
	watched map[int64]bool
	// seeds are the seed's sequences past the last one the watch had
	// delivered then, ascending: the watch, whose sequences only grow,
	// may still deliver them, and skips them. Emptied as it passes them.
	seeds []int64
}

// Observe folds the team kept in st and calls send with a new Snapshot
// after each change, at most once per opts.Frame; the first change after a
// quiet spell goes out at once and the last change is always sent. send is
// called from one goroutine and should not block for long. A member going
// lost changes no record, so a timer at the earliest such deadline marks
// it. Close stops it; so does the end of ctx. It does not close st.
func Observe(ctx context.Context, st store.Store, opts ObserveOptions, send func(Snapshot)) (*Observer, error) {
	o := newObserver(st, opts, send)
	o.ctx, o.cancel = context.WithCancel(ctx)
	if err := o.start(); err != nil {
		o.Close()
		return nil, fmt.Errorf("observe: %w", err)
	}
	o.mu.Lock()
	o.m.changed() // the first snapshot goes out even for an empty team
	o.mu.Unlock()
	o.wg.Add(2)
	go o.loop()
	go func() {
		defer o.wg.Done()
		sendSnapshots(o.ctx, o.opts.Frame, &o.mu, &o.m, o.send)
	}()
	return o, nil
}

func newObserver(st store.Store, opts ObserveOptions, send func(Snapshot)) *Observer {
	o := &Observer{
		st: st, opts: opts.withDefaults(), send: send,
		pending: map[store.Change]bool{}, unreadDue: map[string]bool{}, kick: make(chan struct{}, 1),
		m: newModel(), states: map[string]store.MemberState{}, inboxes: map[string]*followed{},
		// Observe gives it its own; a bench that calls the reads of one
		// newObserver made runs them under one that never ends.
		ctx: context.Background(), refresh: refreshEvery,
	}
	o.lock, _ = st.(team.RuntimeLocker)
	// Up, by the heartbeats, until runtime.lock or the members read say
	// otherwise.
	o.m.byHeartbeat, o.m.probed, o.m.runtime.Running = true, true, true
	return o
}

// start starts the store's watches, then reads what they watch: a change
// made between the two is read twice, never missed. The inboxes are
// followed after (follow).
func (o *Observer) start() error {
	sub, err := o.st.Watch(o.ctx, o.told, store.ChangeRequest, store.ChangeMember)
	if err != nil {
		return err
	}
	o.subs = append(o.subs, sub)
	if rw, ok := o.st.(runtimeWatcher); ok && o.lock != nil {
		if err := o.subscribe(rw.WatchRuntime(o.ctx, func() { o.due(&o.runtimeDue) })); err != nil {
			return err
		}
	}
	if cw, ok := o.st.(store.ConfigWatcher); ok {
		if err := o.subscribe(cw.WatchConfig(o.ctx, store.ConfigTeam, func() { o.due(&o.teamDue) })); err != nil {
			return err
		}
		o.watchesConfig = true
	}
	if dw, ok := o.st.(store.DeadLetterWatcher); ok {
		if err := o.subscribe(dw.WatchDeadLetters(o.ctx, func() { o.due(&o.deadDue) })); err != nil {
			return err
		}
		o.watchesDead = true
	}
	o.load()
	if err := o.subscribe(o.st.WatchSpans(o.ctx, true, o.span)); err != nil {
		return err
	}
	return nil
}

// follow starts what the first snapshot can do without, on the loop's
// goroutine once that snapshot is on its way: a follow of every inbox
// and cursor journal, and the unread counts of those it cannot follow. A
// team of thousands of members opens its screen on the roster and the
// requests, and the Messages pane fills a moment later.
func (o *Observer) follow() {
	o.followInboxes()
	o.readUnread()
}

// load reads everything but the spans and the messages, once, at the
// start: what the first snapshot shows before any inbox is followed.
func (o *Observer) load() {
	o.probeRuntime()
	o.loadTeam()
	o.loadHistory()
	o.readAll(store.ChangeRequest)
	o.readAll(store.ChangeMember)
	o.readDeadLetters()
}

// subscribe keeps a watch the store started, for Close to stop.
func (o *Observer) subscribe(sub store.Subscription, err error) error {
	if err != nil {
		return err
	}
	o.subs = append(o.subs, sub)
	return nil
}

// Close stops the observer's goroutines and the store's watches.
func (o *Observer) Close() error {
	o.cancel()
	o.wg.Wait() // the loop no longer starts watches
	var errs []error
	for _, sub := range o.subs {
		errs = append(errs, sub.Stop())
	}
	return errors.Join(errs...)
}

// told is the store's callback: it notes the change and wakes the loop,
// never waiting for it.
func (o *Observer) told(c store.Change) {
	o.pmu.Lock()
	o.pending[c] = true
	o.pmu.Unlock()
	o.wake()
}

// due notes that what flag stands for is to be read, and wakes the loop.
func (o *Observer) due(flag *bool) {
	o.pmu.Lock()
	*flag = true
	o.pmu.Unlock()
	o.wake()
}

func (o *Observer) wake() {
	select {
	case o.kick <- struct{}{}:
	default:
	}
}

// retryAfter is how long a read that failed (the store unreachable) waits
// to be tried again.
const retryAfter = time.Second

// again notes a change whose read failed, for the loop to try after
// retryAfter (or with the next change told).
func (o *Observer) again(c store.Change) {
	o.pmu.Lock()
	o.pending[c] = true
	o.pmu.Unlock()
}

// loop reads what the store said changed. Its clocks: members going lost
// (by their heartbeats), the probe of runtime.lock while a runtime runs,
// the opt-in rescan, and the refresh of what the store does not watch.
func (o *Observer) loop() {
	defer o.wg.Done()
	o.follow()
	lost := time.NewTimer(time.Hour)
	defer lost.Stop()
	probe := time.NewTimer(time.Hour)
	probe.Stop()
	defer probe.Stop()
	probeArmed := false
	var refresh, rescan <-chan time.Time
	if _, commits := o.st.(store.CommitWatcher); !o.watchesDead || !commits {
		tick := time.NewTicker(o.refresh)
		defer tick.Stop()
		refresh = tick.C
	}
	if o.opts.Rescan > 0 {
		tick := time.NewTicker(o.opts.Rescan)
		defer tick.Stop()
		rescan = tick.C
	}
	retry := time.NewTimer(retryAfter)
	retry.Stop()
	defer retry.Stop()
	for {
		o.armLost(lost)
		if run := o.lockRunning(); !run {
			probe.Stop()
			probeArmed = false
		} else if !probeArmed {
			probe.Reset(o.opts.Probe)
			probeArmed = true
		}
		o.pmu.Lock()
		failed := len(o.pending) > 0 || len(o.unreadDue) > 0
		o.pmu.Unlock()
		if failed || o.unseeded() {
			retry.Reset(retryAfter)
		}
		select {
		case <-o.ctx.Done():
			return
		case <-o.kick:
		case <-retry.C:
		case <-lost.C:
			o.mu.Lock()
			o.showMembers()
			o.mu.Unlock()
			continue
		case <-probe.C:
			probeArmed = false // fired: armed again above while a runtime runs
			o.probeRuntime()
			continue
		case <-rescan:
			o.rescan()
		case <-refresh:
			o.pmu.Lock()
			o.deadDue = o.deadDue || !o.watchesDead
			o.teamDue = o.teamDue || !o.watchesConfig
			o.pmu.Unlock()
			o.noteUnread(o.unreadNames()...)
		}
		o.readPending()
	}
}

// rescan marks everything to be read again.
func (o *Observer) rescan() {
	o.pmu.Lock()
	o.pending[store.Change{Kind: store.ChangeRequest}] = true
	o.pending[store.Change{Kind: store.ChangeMember}] = true
	o.teamDue, o.deadDue, o.runtimeDue = true, true, true
	o.pmu.Unlock()
	o.noteUnread(o.unreadNames()...)
}

// lockRunning reports whether the last probe of runtime.lock found a
// runtime running.
func (o *Observer) lockRunning() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.lock != nil && !o.m.byHeartbeat && o.m.runtime.Running
}

// readPending reads what was noted since the last call.
func (o *Observer) readPending() {
	o.pmu.Lock()
	batch := o.pending
	o.pending = make(map[store.Change]bool, len(batch))
	teamDue, deadDue, runtimeDue := o.teamDue, o.deadDue, o.runtimeDue
	o.teamDue, o.deadDue, o.runtimeDue = false, false, false
	o.pmu.Unlock()
	if runtimeDue {
		o.probeRuntime()
	}
	if teamDue || (!o.watchesConfig && o.teamMissing()) {
		o.loadTeam() // init --store may have put it since
		o.followInboxes()
	}
	o.seedInboxes()
	for _, kind := range []store.ChangeKind{store.ChangeRequest, store.ChangeMember} {
		if batch[store.Change{Kind: kind}] {
			o.readAll(kind)
		}
	}
	for c := range batch {
		switch {
		case c.Name == "" || batch[store.Change{Kind: c.Kind}]:
		case c.Kind == store.ChangeRequest:
			o.readRequest(c.Name)
		case c.Kind == store.ChangeMember:
			o.readMember(c.Name)
		}
	}
	if deadDue {
		o.readDeadLetters()
	}
	o.readUnread()
}

func (o *Observer) opCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(o.ctx, observeOpTimeout)
}

func (o *Observer) teamMissing() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.m.team == nil
}

// loadTeam reads team.json; a caller then follows the inboxes of members
// it names for the first time (followInboxes).
func (o *Observer) loadTeam() {
	ctx, cancel := o.opCtx()
	t, err := team.LoadFrom(ctx, o.st)
	cancel()
	o.mu.Lock()
	switch {
	case err != nil && (o.m.team != nil || o.m.teamErr != err.Error()):
		o.m.team, o.m.teamErr = nil, err.Error()
	case err == nil && (o.m.team == nil || !reflect.DeepEqual(o.m.team, t)):
		o.m.team, o.m.teamErr = t, ""
	default:
		o.mu.Unlock()
		return
	}
	o.m.membersStale = true
	o.m.changed()
	o.mu.Unlock()
}

// probeRuntime asks runtime.lock whether a runtime runs the team. Once a
// runtime ran here (the lock holds its record) the lock says it; until
// then the members' heartbeats do, as filestore's Members judges them.
func (o *Observer) probeRuntime() {
	if o.lock == nil {
		return
	}
	st, err := o.lock.RuntimeLock()
	if err != nil {
		return // the next change or rescan asks again
	}
	byLock := st.Running || st.Last.PID != 0
	o.mu.Lock()
	defer o.mu.Unlock()
	if !byLock {
		if !o.m.byHeartbeat { // runtime.lock removed: the heartbeats say again
			o.m.byHeartbeat = true
			o.showMembers()
		}
		return
	}
	cur := o.m.runtime
	if !o.m.byHeartbeat && cur.Running == st.Running && cur.Last.PID == st.Last.PID &&
		cur.Last.Started.Equal(st.Last.Started) && (cur.Last.Stopped == nil) == (st.Last.Stopped == nil) {
		return
	}
	wasHeartbeat := o.m.byHeartbeat
	o.m.runtime, o.m.byHeartbeat = st, false
	if wasHeartbeat {
		o.showMembers() // without the verdicts of the heartbeats
	}
	o.m.membersStale = true // members are shown as stopped while it is down
	o.m.changed()
}

// readAll reads every record of kind again: the live requests (those that
// left were archived or removed), or every member.
func (o *Observer) readAll(kind store.ChangeKind) {
	if kind == store.ChangeRequest {
		o.loadRequests()
		return
	}
	ctx, cancel := o.opCtx()
	states, bad, err := o.st.Members(ctx, o.opts.LostAfter)
	cancel()
	if err != nil {
		o.again(store.Change{Kind: kind})
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	clear(o.states)
	for _, s := range states {
		o.states[s.Name] = s
	}
	corrupt := make(map[string]bool, len(bad))
	for i := range bad {
		corrupt[bad[i].Name] = true
		o.m.setCorruptMember(&bad[i])
	}
	for name := range o.m.corruptMembers {
		if !corrupt[name] {
			delete(o.m.corruptMembers, name)
			o.m.membersStale = true
			o.m.changed()
		}
	}
	o.showMembers()
	o.noteUnread(o.unreadNamesLocked()...)
}

// loadHistory reads the newest archived requests once, at the start: the
// archive only grows with requests the observer then sees being decided.
// A store that cannot read them alone (no store.HistoryReader) reads all
// its records and keeps those that are not live.
func (o *Observer) loadHistory() {
	ctx, cancel := o.opCtx()
	defer cancel()
	var hist []protocol.Request
	if hr, ok := o.st.(store.HistoryReader); ok {
		h, _, err := hr.History(ctx, MaxHistory)
		if err != nil {
			return
		}
		hist = h
	} else {
		all, _, err := o.st.Requests(ctx)
		if err != nil {
			return
		}
		live, _, err := o.st.LiveRequests(ctx)
		if err != nil {
			return
		}
		isLive := make(map[string]bool, len(live))
		for i := range live {
			isLive[live[i].ID] = true
		}
		for _, r := range all {
			if !isLive[r.ID] && r.Status.IsTerminal() {
				hist = append(hist, r)
			}
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := range hist {
		o.m.archived[hist[i].ID] = true
		o.m.setRequest(hist[i].ID, &hist[i])
	}
}

// loadRequests reads the live request records, and never the archive: a
// request that left the live ones was archived (it is read once, and kept
// while the bound allows) or removed.
func (o *Observer) loadRequests() {
	ctx, cancel := o.opCtx()
	defer cancel()
	live, bad, err := o.st.LiveRequests(ctx)
	if err != nil {
		o.again(store.Change{Kind: store.ChangeRequest})
		return
	}
	present := make(map[string]bool, len(live)+len(bad))
	for i := range live {
		present[live[i].ID] = true
	}
	for i := range bad {
		present[bad[i].Name] = true
	}
	o.mu.Lock()
	var gone []string
	for id := range o.m.reqs {
		if !present[id] && !o.m.archived[id] {
			gone = append(gone, id)
		}
	}
	o.mu.Unlock()
	// Where did they go? Archived (the store still has it) or removed.
	moved := make(map[string]*protocol.Request, len(gone))
	for _, id := range gone {
		r, err := o.st.Request(ctx, id)
		switch {
		case err == nil:
			moved[id] = r
		case !errors.Is(err, store.ErrNotFound):
			o.again(store.Change{Kind: store.ChangeRequest, Name: id})
			moved[id] = nil
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := range live {
		r := live[i]
		o.m.setRequest(r.ID, &r)
	}
	for i := range bad {
		o.m.setRequest(bad[i].Name, team.CorruptRecord(bad[i].Name, &bad[i]))
	}
	for _, id := range gone {
		r, ok := moved[id]
		switch {
		case ok && r == nil: // not read: tried again
		case r != nil && r.Status.IsTerminal():
			o.m.archived[id] = true
			o.m.setRequest(id, r)
		default:
			o.m.setRequest(id, r)
		}
	}
}

// readRequest reads one request: a record that does not read is shown
// corrupt, resolved when and by whom its decision says, when it has one.
func (o *Observer) readRequest(id string) {
	ctx, cancel := o.opCtx()
	r, err := o.st.Request(ctx, id)
	cancel()
	var ce *store.CorruptError
	switch {
	case errors.As(err, &ce):
		bad := team.CorruptRecord(id, ce)
		if r != nil {
			bad.ResolvedAt, bad.ResolvedBy = r.ResolvedAt, r.ResolvedBy
		}
		r = bad
	case errors.Is(err, store.ErrNotFound):
		r = nil // removed
	case err != nil:
		o.again(store.Change{Kind: store.ChangeRequest, Name: id})
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.m.setRequest(id, r)
}

func (o *Observer) readMember(name string) {
	ctx, cancel := o.opCtx()
	s, err := o.st.Member(ctx, name, o.opts.LostAfter)
	cancel()
	var ce *store.CorruptError
	if err != nil && !errors.Is(err, store.ErrNotFound) && !errors.As(err, &ce) {
		o.again(store.Change{Kind: store.ChangeMember, Name: name})
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if prev, ok := o.states[name]; s == nil || !ok || !beatOnly(prev, *s) {
		o.noteUnread(name) // a member record changes as its inbox is worked
	}
	switch {
	case ce != nil:
		delete(o.states, name)
		delete(o.m.records, name)
		o.m.setCorruptMember(ce)
	case s == nil:
		delete(o.states, name)
		o.m.setMember(name, nil)
	default:
		o.states[name] = *s
		o.showMember(name, time.Now())
		if st := o.states[name]; o.m.runtime.Running && store.IsLive(st.Status) && !st.Lost {
			return // still running, as it was: no need to look at every member
		}
	}
	o.showDown()
}

// beatOnly reports whether a member's record moved only by its heartbeat
// (Seen): the member did nothing its unread count would show.
func beatOnly(prev, next store.MemberState) bool {
	return prev.Status == next.Status && prev.Activity == next.Activity && prev.RunID == next.RunID && prev.Since.Equal(next.Since)
}

// showMembers sets the model's records from the store's, each judged lost
// or not now, and Down from them. Called under mu.
func (o *Observer) showMembers() {
	now := time.Now()
	for name := range o.states {
		o.showMember(name, now)
	}
	for name := range o.m.records {
		if _, ok := o.states[name]; !ok {
			o.m.setMember(name, nil)
		}
	}
	o.showDown()
}

// showMember sets the model's record of name from the store's: judged
// lost or not at now where the heartbeats say who runs (one heartbeat
// costs one record); as it is where runtime.lock says it (shown stopped
// while no runtime runs: model.shown). Called under mu.
func (o *Observer) showMember(name string, now time.Time) {
	s := o.states[name]
	rec := s.Member
	if o.m.byHeartbeat && !o.opts.NoRuntime {
		s.Lost = store.IsLive(s.Status) && now.Sub(s.Seen) > o.opts.LostAfter
		o.states[name] = s
		if s.Lost {
			rec.Status = team.StatusLost
			rec.Activity = fmt.Sprintf("was %s, not seen since %s", s.Status, s.Seen.Local().Format("15:04:05"))
		}
	}
	o.m.setMember(name, &rec)
}

// showDown sets Down, and the runtime state, from the members' states
// where the heartbeats say who runs (RuntimeFromRecords, over the map: it runs on
// every heartbeat). While the team is down the deadlines stand still from
// the last member's Seen. Called under mu.
func (o *Observer) showDown() {
	if !o.m.byHeartbeat || o.opts.NoRuntime {
		return // runtime.lock says it (probeRuntime), or no runtime ever does
	}
	rt := team.RuntimeFromRecords(maps.Values(o.states), o.opts.LostAfter)
	cur := o.m.runtime
	if rt.Running != cur.Running || rt.ByRecords != cur.ByRecords || (!rt.Running && !rt.LastAlive.Equal(cur.LastAlive)) {
		o.m.runtime = rt
		o.m.membersStale = true
		o.m.changed()
	}
}

// armLost sets t to fire when the first member seen alive passes its
// deadline (stopped when none is alive, or runtime.lock says who runs).
func (o *Observer) armLost(t *time.Timer) {
	o.mu.Lock()
	var next time.Time
	for _, s := range o.states {
		if !o.m.byHeartbeat {
			break // runtime.lock says who runs: no member goes lost
		}
		if store.IsLive(s.Status) && !s.Lost {
			if at := s.Seen.Add(o.opts.LostAfter); next.IsZero() || at.Before(next) {
				next = at
			}
		}
	}
	o.mu.Unlock()
	t.Stop()
	select {
	case <-t.C:
	default:
	}
	if !next.IsZero() {
		// A moment past the deadline: Lost is "older than", not "as old as".
		t.Reset(time.Until(next) + time.Millisecond)
	}
}

// readDeadLetters reads the dead letters again; they only grow.
func (o *Observer) readDeadLetters() {
	ctx, cancel := o.opCtx()
	letters, _, err := team.DeadLetters(ctx, o.st)
	cancel()
	if err != nil {
		return // the next change or tick tries again
	}
	// A fresh array: the snapshots handed out keep the old one.
	letters = letters[max(len(letters)-MaxDeadLetters, 0):]
	o.mu.Lock()
	defer o.mu.Unlock()
	// Unchanged when the newest is the same and as many are kept: they
	// are appended and expire oldest first. (Comparing the count alone
	// would see a change every read once more than MaxDeadLetters exist.)
	n := len(letters)
	if n == len(o.m.dead) && (n == 0 || letters[n-1] == o.m.dead[n-1]) {
		return
	}
	o.m.dead = letters
	o.m.changed()
}

// span takes one span from the store's watch.
func (o *Observer) span(s trace.Span) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.m.traces.Add(s)
	o.m.changed()
}

// followInboxes follows the lead's and every member's inbox not followed
// yet (docs/ARCHITECTURE.md, "The team directory and the store"): where
// its consumer stands first (WatchCommits), then the watch (WatchInbox,
// from now on), then the seed (seedInboxes: what the store holds), so the
// Messages pane starts with the messages the store still holds and goes
// on live, with no gap and no message twice, and each one is counted
// unread until the consumer commits it. A store with no watch is seeded
// only; one with no Messages only watched.
func (o *Observer) followInboxes() {
	iw, watches := o.st.(store.InboxWatcher)
	_, seeds := o.st.(store.MessageReader)
	cw, commits := o.st.(store.CommitWatcher)
	o.mu.Lock()
	var fresh []string
	for _, name := range o.m.team.InboxNames() {
		if o.inboxes[name] == nil {
			o.inboxes[name] = &followed{seeded: !seeds}
			if seeds {
				o.toSeed++
			}
			fresh = append(fresh, name)
		}
	}
	o.mu.Unlock()
	for _, name := range fresh {
		if commits {
			// Not counted when the journal cannot be followed: Unread
			// tells the count then.
			sub, err := cw.WatchCommits(o.ctx, name, func(c int64) { o.committed(name, c) })
			if err == nil {
				o.subs = append(o.subs, sub)
			}
		}
		if watches {
			// Not watched when the watch cannot start (the store away):
			// the seed still shows what it holds.
			sub, err := iw.WatchInbox(o.ctx, name, func(d store.Delivery) { o.delivered(name, d) })
			if err == nil {
				o.subs = append(o.subs, sub)
			}
		}
	}
	o.seedInboxes()
}

// committed takes where name's consumer stands (WatchCommits).
func (o *Observer) committed(name string, c int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.m.commit(name, c)
}

// unseeded reports whether an inbox followed is still to be seeded (its
// read failed: the loop tries again after retryAfter).
func (o *Observer) unseeded() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.toSeed > 0
}

// seedInboxes reads the messages the store holds and folds into the
// Messages pane those of the inboxes not seeded yet, skipping what their
// watch delivered already.
func (o *Observer) seedInboxes() {
	mr, ok := o.st.(store.MessageReader)
	if !ok || !o.unseeded() {
		return
	}
	ctx, cancel := o.opCtx()
	ds, err := mr.Messages(ctx)
	cancel()
	if err != nil {
		return // unseeded still: the loop tries again
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	lastWatched := map[string]int64{}
	for name, f := range o.inboxes {
		lastWatched[name] = -1
		for seq := range f.watched {
			lastWatched[name] = max(lastWatched[name], seq)
		}
	}
	for _, d := range ds {
		f := o.inboxes[d.Msg.To]
		if f == nil || f.seeded || f.watched[d.Seq] {
			continue
		}
		o.m.addMessage(MessageView{Inbox: d.Msg.To, Offset: d.Seq, Msg: d.Msg})
		o.m.seen(d.Msg.To, d.Seq)
		if d.Seq > lastWatched[d.Msg.To] {
			f.seeds = append(f.seeds, d.Seq)
		}
	}
	for _, f := range o.inboxes {
		f.seeded, f.watched = true, nil
	}
	o.toSeed = 0
}

// delivered takes one message an inbox watch saw, once: before the seed it
// notes the sequence for the seed to skip; after, it skips a sequence the
// seed showed. An inbox not counted has its unread count asked again.
func (o *Observer) delivered(name string, d store.Delivery) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if iv := o.m.inboxes[name]; iv == nil || !iv.counted {
		o.dueUnread(name)
	}
	f := o.inboxes[name]
	switch {
	case f == nil:
	case !f.seeded:
		if f.watched == nil {
			f.watched = map[int64]bool{}
		}
		f.watched[d.Seq] = true
	case len(f.seeds) > 0:
		i, dup := slices.BinarySearch(f.seeds, d.Seq)
		if dup {
			i++
		}
		f.seeds = f.seeds[i:]
		if dup {
			return
		}
	}
	o.m.addMessage(MessageView{Inbox: name, Offset: d.Seq, Msg: d.Msg})
	o.m.seen(name, d.Seq)
}

// unreadNames are the inboxes whose unread count a snapshot shows: the
// lead's, the team's members' and those with a record.
func (o *Observer) unreadNames() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.unreadNamesLocked()
}

func (o *Observer) unreadNamesLocked() []string {
	names := o.m.team.InboxNames()
	for name := range o.states {
		names = append(names, name)
	}
	return names
}

// dueUnread notes inboxes whose unread count is to be asked again and
// wakes the loop, never waiting for it.
func (o *Observer) dueUnread(names ...string) {
	o.noteUnread(names...)
	o.wake()
}

// noteUnread is dueUnread without the wake, for a caller on the loop's
// goroutine (which reads them before it waits again).
func (o *Observer) noteUnread(names ...string) {
	o.pmu.Lock()
	defer o.pmu.Unlock()
	for _, name := range names {
		o.unreadDue[name] = true
	}
}

// readUnread asks the store the unread count of each inbox due that the
// observer does not count itself; a count that cannot be read stays due,
// for the retry, and so do the ones not asked yet: a store that does not
// answer costs the loop one timeout, not one per inbox.
func (o *Observer) readUnread() {
	o.pmu.Lock()
	due := o.unreadDue
	o.unreadDue = make(map[string]bool, len(due))
	o.pmu.Unlock()
	o.mu.Lock()
	for name := range due {
		if iv := o.m.inboxes[name]; protocol.ValidateName(name) != nil || (iv != nil && iv.counted) {
			delete(due, name) // no store holds such an inbox, or counted here
		}
	}
	o.mu.Unlock()
	for name := range due {
		ctx, cancel := o.opCtx()
		n, err := o.st.Unread(ctx, name)
		cancel()
		if err != nil {
			if o.ctx.Err() == nil {
				o.noteUnread(slices.Collect(maps.Keys(due))...) // this one and those not asked yet
			}
			return
		}
		delete(due, name)
		o.mu.Lock()
		if iv := o.m.inbox(name); !iv.counted && iv.stored != n {
			iv.stored = n
			o.m.membersStale = true
			o.m.changed()
		}
		o.mu.Unlock()
	}
}
