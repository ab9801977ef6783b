package team

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"huddle/ipc/trace"
	"huddle/protocol"
	"huddle/store"
)

// StatusLost is the status a UI shows for a member of a team in a store
// that should be running and was not seen within the deadline (its machine
// or process went away); like StatusCorrupt, no state of docs/ARCHITECTURE.md, "State machines"
const StatusLost = "lost"

// deadLettersEvery is how often a store observer reads the dead letters
// again, and asks every unread count again: the store has no watch on
// them (docs/ARCHITECTURE.md, "The team directory and the store"). A variable for a test that must tell a count
// refreshed by a change from one refreshed by this clock.
var deadLettersEvery = 10 * time.Second

// observeOpTimeout bounds each read of a store observer.
const observeOpTimeout = 15 * time.Second

// StoreObserver folds a team kept in a store into Snapshots, live: the
// store's Watch says which request or member changed and it reads only
// that record; the spans come from WatchSpans; the messages from what the
// store holds (Messages) and then WatchInbox, when the store has them; the
// unread counts from Unread. The store's callbacks only note what changed:
// the reads and the sends run on the observer's goroutines.
type StoreObserver struct {
	st        store.Store
	opts      ObserveOptions
	lostAfter time.Duration
	send      func(Snapshot)

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	subs   []store.Subscription

	// Changes told by the store and not read yet, with all set when every
	// record of a kind is to be read again.
	pmu     sync.Mutex
	pending map[store.Change]bool
	// unreadDue are the inboxes whose unread count is to be asked again.
	unreadDue map[string]bool
	kick      chan struct{}

	mu     sync.Mutex
	m      model
	states map[string]store.MemberState // the records as the store has them
	// inboxes are the inboxes followed, by name (followInboxes).
	inboxes map[string]*followed
}

// followed is what a store observer keeps of one inbox it follows, to
// fold the messages the store held when it began (the seed) and those its
// watch delivers into one list, each once. The watch starts first: a
// message appended between the two can come from both.
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

// ObserveOn folds the team kept in st and calls send with a new Snapshot
// after each change, at most once per opts.Frame, as Observe does for a
// team directory. lostAfter is the deadline past which a member that
// should be running shows StatusLost (LostAfter when not positive); a
// member going lost changes no record, so a timer at the earliest such
// deadline marks it. Close stops it; so does the end of ctx. It does not
// close st.
func ObserveOn(ctx context.Context, st store.Store, lostAfter time.Duration, opts ObserveOptions, send func(Snapshot)) (*StoreObserver, error) {
	if lostAfter <= 0 {
		lostAfter = LostAfter
	}
	o := &StoreObserver{
		st: st, opts: opts.withDefaults(), lostAfter: lostAfter, send: send,
		pending: map[store.Change]bool{}, unreadDue: map[string]bool{}, kick: make(chan struct{}, 1),
		m: newModel(), states: map[string]store.MemberState{}, inboxes: map[string]*followed{},
	}
	// Up until the members read say otherwise.
	o.m.onStore, o.m.probed, o.m.runtime.Running = true, true, true
	o.ctx, o.cancel = context.WithCancel(ctx)
	// The watch first, then the reads: a change made between them is read
	// twice, never missed.
	sub, err := st.Watch(o.ctx, o.told, store.ChangeRequest, store.ChangeMember)
	if err != nil {
		o.cancel()
		return nil, fmt.Errorf("observe: %w", err)
	}
	o.subs = append(o.subs, sub)
	o.loadTeam()
	o.readAll(store.ChangeRequest)
	o.readAll(store.ChangeMember)
	o.readDeadLetters()
	sub, err = st.WatchSpans(o.ctx, true, o.span)
	if err != nil {
		o.Close()
		return nil, fmt.Errorf("observe: %w", err)
	}
	o.subs = append(o.subs, sub)
	o.followInboxes()
	o.readUnread()
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

// Close stops the observer's goroutines and the store's watches.
func (o *StoreObserver) Close() error {
	o.cancel()
	o.wg.Wait()
	var errs []error
	for _, sub := range o.subs {
		errs = append(errs, sub.Stop())
	}
	return errors.Join(errs...)
}

// told is the store's callback: it notes the change and wakes the loop,
// never waiting for it.
func (o *StoreObserver) told(c store.Change) {
	o.pmu.Lock()
	o.pending[c] = true
	o.pmu.Unlock()
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
func (o *StoreObserver) again(c store.Change) {
	o.pmu.Lock()
	o.pending[c] = true
	o.pmu.Unlock()
}

// loop reads what the store said changed, marks members lost as their
// deadlines pass, and reads the dead letters on their clock.
func (o *StoreObserver) loop() {
	defer o.wg.Done()
	lost := time.NewTimer(time.Hour)
	defer lost.Stop()
	dead := time.NewTicker(deadLettersEvery)
	defer dead.Stop()
	retry := time.NewTimer(retryAfter)
	retry.Stop()
	defer retry.Stop()
	for {
		o.armLost(lost)
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
			o.readPending()
		case <-retry.C:
			o.readPending()
		case <-lost.C:
			o.mu.Lock()
			o.showMembers()
			o.mu.Unlock()
		case <-dead.C:
			o.readDeadLetters()
			o.noteUnread(o.unreadNames()...)
			o.readUnread()
		}
	}
}

// readPending reads the records of the changes noted since the last call.
func (o *StoreObserver) readPending() {
	o.pmu.Lock()
	batch := o.pending
	o.pending = make(map[store.Change]bool, len(batch))
	o.pmu.Unlock()
	if o.teamMissing() {
		o.loadTeam() // init --store may have put it since
		if !o.teamMissing() {
			o.followInboxes() // its members' inboxes
		}
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
	o.readUnread()
}

func (o *StoreObserver) opCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(o.ctx, observeOpTimeout)
}

func (o *StoreObserver) teamMissing() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.m.team == nil
}

// loadTeam reads team.json: it is put once (init --store), so it is read
// at the start and, while it is missing, with the next change.
func (o *StoreObserver) loadTeam() {
	ctx, cancel := o.opCtx()
	t, err := LoadTeamOn(ctx, o.st)
	cancel()
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case err != nil && o.m.teamErr != err.Error():
		o.m.teamErr = err.Error()
	case err == nil:
		o.m.team, o.m.teamErr = t, ""
	default:
		return // still missing, for the same reason
	}
	o.m.membersStale = true
	o.m.changed()
}

// readAll reads every record of kind again.
func (o *StoreObserver) readAll(kind store.ChangeKind) {
	ctx, cancel := o.opCtx()
	defer cancel()
	if kind == store.ChangeRequest {
		recs, _, err := o.st.Requests(ctx)
		if err != nil {
			o.again(store.Change{Kind: kind})
			return
		}
		o.mu.Lock()
		defer o.mu.Unlock()
		present := make(map[string]bool, len(recs))
		for i := range recs {
			present[recs[i].ID] = true
			o.m.setRequest(recs[i].ID, &recs[i])
		}
		for id := range o.m.reqs {
			if !present[id] {
				o.m.setRequest(id, nil)
			}
		}
		return
	}
	states, _, err := o.st.Members(ctx, o.lostAfter)
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
	o.showMembers()
	o.noteUnread(o.unreadNamesLocked()...)
}

func (o *StoreObserver) readRequest(id string) {
	ctx, cancel := o.opCtx()
	r, err := o.st.Request(ctx, id)
	cancel()
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		o.again(store.Change{Kind: store.ChangeRequest, Name: id})
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.m.setRequest(id, r) // nil: removed
}

func (o *StoreObserver) readMember(name string) {
	ctx, cancel := o.opCtx()
	s, err := o.st.Member(ctx, name, o.lostAfter)
	cancel()
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		o.again(store.Change{Kind: store.ChangeMember, Name: name})
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if prev, ok := o.states[name]; s == nil || !ok || !beatOnly(prev, *s) {
		o.noteUnread(name) // a member record changes as its inbox is worked
	}
	if s == nil {
		delete(o.states, name)
		o.m.setMember(name, nil)
	} else {
		o.states[name] = *s
		o.showMember(name, time.Now())
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
func (o *StoreObserver) showMembers() {
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

// showMember sets the model's record of name from the store's, judged
// lost or not at now: one heartbeat costs one record. Called under mu.
func (o *StoreObserver) showMember(name string, now time.Time) {
	s := o.states[name]
	s.Lost = store.IsLive(s.Status) && now.Sub(s.Seen) > o.lostAfter
	o.states[name] = s
	rec := s.Member
	if s.Lost {
		rec.Status = StatusLost
		rec.Activity = fmt.Sprintf("was %s, not seen since %s", s.Status, s.Seen.Local().Format("15:04:05"))
	}
	o.m.setMember(name, &rec)
}

// showDown sets Down, and the runtime state, from the members' states
// (runtimeOn, over the map: it runs on every heartbeat). While the team is
// down the deadlines stand still from the last member's Seen. Called
// under mu.
func (o *StoreObserver) showDown() {
	rt := runtimeOn(maps.Values(o.states), o.lostAfter)
	cur := o.m.runtime
	if rt.Running != cur.Running || (!rt.Running && !rt.LastAlive.Equal(cur.LastAlive)) {
		o.m.runtime = rt
		o.m.membersStale = true
		o.m.changed()
	}
}

// armLost sets t to fire when the first member seen alive passes its
// deadline (stopped when none is alive).
func (o *StoreObserver) armLost(t *time.Timer) {
	o.mu.Lock()
	var next time.Time
	for _, s := range o.states {
		if store.IsLive(s.Status) && !s.Lost {
			if at := s.Seen.Add(o.lostAfter); next.IsZero() || at.Before(next) {
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
func (o *StoreObserver) readDeadLetters() {
	ctx, cancel := o.opCtx()
	letters, _, err := DeadLetters(ctx, o.st)
	cancel()
	if err != nil {
		return // the next tick tries again
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
func (o *StoreObserver) span(s trace.Span) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.m.traces.Add(s)
	o.m.changed()
}

// followInboxes follows the lead's and every member's inbox not followed
// yet, as the directory observer does (docs/ARCHITECTURE.md, "The team directory and the store"): the watch
// first (WatchInbox, from now on), then the seed (seedInboxes: what the
// store holds), so the Messages pane starts with the messages the store
// still holds and goes on live, with no gap and no message twice. A store
// with no watch is seeded only; one with no Messages only watched.
func (o *StoreObserver) followInboxes() {
	iw, watches := o.st.(store.InboxWatcher)
	_, seeds := o.st.(store.MessageReader)
	o.mu.Lock()
	var fresh []string
	for _, name := range o.m.team.InboxNames() {
		if o.inboxes[name] == nil {
			o.inboxes[name] = &followed{seeded: !seeds}
			fresh = append(fresh, name)
		}
	}
	o.mu.Unlock()
	if watches {
		for _, name := range fresh {
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

// unseeded reports whether an inbox followed is still to be seeded (its
// read failed: the loop tries again after retryAfter).
func (o *StoreObserver) unseeded() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, f := range o.inboxes {
		if !f.seeded {
			return true
		}
	}
	return false
}

// seedInboxes reads the messages the store holds and folds into the
// Messages pane those of the inboxes not seeded yet, skipping what their
// watch delivered already.
func (o *StoreObserver) seedInboxes() {
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
		if d.Seq > lastWatched[d.Msg.To] {
			f.seeds = append(f.seeds, d.Seq)
		}
	}
	for _, f := range o.inboxes {
		f.seeded, f.watched = true, nil
	}
}

// delivered takes one message an inbox watch saw, once: before the seed it
// notes the sequence for the seed to skip; after, it skips a sequence the
// seed showed. Its inbox's unread count is asked again.
func (o *StoreObserver) delivered(name string, d store.Delivery) {
	o.dueUnread(name)
	o.mu.Lock()
	defer o.mu.Unlock()
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
}

// unreadNames are the inboxes whose unread count a snapshot shows: the
// lead's, the team's members' and those with a record.
func (o *StoreObserver) unreadNames() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.unreadNamesLocked()
}

func (o *StoreObserver) unreadNamesLocked() []string {
	names := o.m.team.InboxNames()
	for name := range o.states {
		names = append(names, name)
	}
	return names
}

// dueUnread notes inboxes whose unread count is to be asked again and
// wakes the loop, never waiting for it.
func (o *StoreObserver) dueUnread(names ...string) {
	o.noteUnread(names...)
	select {
	case o.kick <- struct{}{}:
	default:
	}
}

// noteUnread is dueUnread without the wake, for a caller on the loop's
// goroutine (which reads them before it waits again).
func (o *StoreObserver) noteUnread(names ...string) {
	o.pmu.Lock()
	defer o.pmu.Unlock()
	for _, name := range names {
		o.unreadDue[name] = true
	}
}

// readUnread asks the store the unread count of each inbox due; a count
// that cannot be read stays due, for the retry, and so do the ones not
// asked yet: a store that does not answer costs the loop one timeout, not
// one per inbox.
func (o *StoreObserver) readUnread() {
	o.pmu.Lock()
	due := o.unreadDue
	o.unreadDue = make(map[string]bool, len(due))
	o.pmu.Unlock()
	for name := range due {
		if protocol.ValidateName(name) != nil {
			delete(due, name) // no store holds such an inbox
		}
	}
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
		if iv := o.m.inbox(name); iv.stored != n {
			iv.stored = n
			o.m.membersStale = true
			o.m.changed()
		}
		o.mu.Unlock()
	}
}
