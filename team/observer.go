package team

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"huddle/inbox"
	"huddle/ipc/trace"
	"huddle/protocol"
	"huddle/store"
	"huddle/teamdir"
)

// ObserveOptions tune an Observer. Zero values take the defaults.
type ObserveOptions struct {
	// Frame is the least time between two sends: changes that come faster
	// are coalesced into one snapshot. Default 16ms.
	Frame time.Duration
	// Rescan, when set, is how often everything is read again, for a file
	// system that does not report changes. Zero (the default) reads again
	// only when the watcher reports an error (a queue overflow: events
	// were lost) and when a watched directory is recreated: fsnotify loses
	// no event otherwise, and an idle observer does nothing.
	Rescan time.Duration
	// Probe is how often runtime.lock is probed while the last probe found
	// a runtime running: a runtime killed with kill -9 changes no file, so
	// only a probe sees it. Default 2s. No probe runs while the team is
	// down: a runtime starting writes runtime.lock.
	Probe time.Duration
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
	return o
}

// Observer folds a team directory into Snapshots, live: fsnotify tells it
// which file changed and it reads only that file; a watcher overflow or
// error (events were lost) makes it read everything again, so a dropped
// event costs latency, never correctness. Nothing else is read on a clock
// (unless ObserveOptions.Rescan asks for it), but runtime.lock while a
// runtime runs (ObserveOptions.Probe). It only reads: any number of observers,
// in any number of processes, watch one team.
type Observer struct {
	dir  string
	opts ObserveOptions
	send func(Snapshot)

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	fsw    *fsnotify.Watcher
	iw     *inbox.Watcher

	// Owned by the event goroutine (and by Observe before it starts).
	watched   map[string]string // watched directory -> what it holds
	observing map[string]bool   // inboxes followed
	reader    *trace.TraceReader
	restarts  int64
	// probeArmed is set while the probe timer runs.
	probeArmed bool

	mu sync.Mutex
	m  model
}

// model is the folded state. Its fields change under Observer.mu; the
// slices it hands out in a Snapshot are never written again.
type model struct {
	team    *Team
	teamErr string
	records map[string]protocol.Member
	reqs    map[string]*protocol.Request // never modified once stored
	byOrder []*protocol.Request          // reqs in Snapshot.Requests order
	traces  *trace.Traces
	inboxes map[string]*inboxView
	// archived are the final requests known to be in requests/done/: a
	// rescan does not look for them in requests/ again.
	archived map[string]bool
	// corruptMembers are the member records that cannot be read, with why.
	corruptMembers map[string]string
	// runtime is what runtime.lock says: is a runtime running the team;
	// probed is set once it has been asked.
	runtime RuntimeState
	probed  bool

	msgs     []MessageView // oldest first once sorted
	unsorted bool          // a message arrived older than the last one

	// dead are the dead letters read so far, deadOff where the next read
	// of deadletter.jsonl starts.
	dead    []DeadLetter
	deadOff int64

	// The last built parts of a snapshot, rebuilt only when stale.
	members       []MemberView
	membersStale  bool
	requests      []protocol.Request
	requestsStale bool

	dirty   bool
	version uint64
	// wake tells the sender the model changed.
	wake chan struct{}
	// onStore: the team is in a store (ObserveOn); Down is then "no member
	// seen alive", and a member's record is shown as it is (lost, not
	// stopped).
	onStore bool
}

// inboxView is what the observer knows of one inbox.
type inboxView struct {
	committed int64   // the consumer's committed logical offset
	unread    []int64 // offsets of observed messages at or past committed, ascending
	// stored is the unread count as the store tells it (ObserveOn): a
	// store observer does not see the consumer's cursor, so it asks.
	stored int
}

// Observe folds the team directory dir and calls send with a new Snapshot
// after each change, at most once per opts.Frame; the first change after a
// quiet spell goes out at once and the last change is always sent. send is
// called from one goroutine and should not block for long. It creates dir's
// members, requests, cursors and inbox directories if they are missing. Close stops
// it; so does the end of ctx.
func Observe(ctx context.Context, dir string, opts ObserveOptions, send func(Snapshot)) (*Observer, error) {
	o := newObserver(dir, opts, send)
	for _, sub := range []string{teamdir.MembersDirPath(dir), teamdir.RequestsDirPath(dir), teamdir.CursorsDirPath(dir)} {
		if err := os.MkdirAll(sub, teamdir.DirMode); err != nil {
			return nil, fmt.Errorf("observe: %w", err)
		}
	}
	o.ctx, o.cancel = context.WithCancel(ctx)
	// The inbox watcher rescans only when asked too (zero is off there).
	iw, err := inbox.NewWatcher(o.ctx, dir, inbox.Options{Rescan: o.opts.Rescan})
	if err != nil {
		o.cancel()
		return nil, fmt.Errorf("observe: %w", err)
	}
	o.iw = iw
	if o.fsw, err = fsnotify.NewWatcher(); err != nil {
		o.cancel()
		iw.Close()
		return nil, fmt.Errorf("observe: watch: %w", err)
	}
	for path := range o.watched {
		if err := o.fsw.Add(path); err != nil {
			o.cancel()
			o.fsw.Close()
			iw.Close()
			return nil, fmt.Errorf("observe: watch %s: %w", path, err)
		}
	}
	o.follow([]string{protocol.Lead})
	o.loadHistory()
	o.rescan()
	o.mu.Lock()
	o.changed() // the first snapshot goes out even for an empty directory
	o.mu.Unlock()
	o.wg.Add(2)
	go o.watch()
	go o.sender()
	return o, nil
}

func newObserver(dir string, opts ObserveOptions, send func(Snapshot)) *Observer {
	dir = filepath.Clean(dir)
	return &Observer{
		dir: dir, opts: opts.withDefaults(), send: send,
		watched: map[string]string{
			dir:                          "",
			teamdir.MembersDirPath(dir):  teamdir.MembersDir,
			teamdir.RequestsDirPath(dir): teamdir.RequestsDir,
			teamdir.CursorsDirPath(dir):  teamdir.CursorsDir,
		},
		observing: make(map[string]bool),
		reader:    trace.NewTraceReader(dir),
		m:         newModel(),
	}
}

// newModel is an empty model, its parts to be built.
func newModel() model {
	return model{
		records: make(map[string]protocol.Member), reqs: make(map[string]*protocol.Request),
		traces: trace.NewTraces(), inboxes: make(map[string]*inboxView),
		archived: make(map[string]bool), corruptMembers: make(map[string]string),
		membersStale: true, requestsStale: true,
		wake: make(chan struct{}, 1),
	}
}

// Close stops every goroutine the observer started and waits for them.
func (o *Observer) Close() error {
	o.cancel()
	err := o.fsw.Close()
	o.wg.Wait() // the event goroutine no longer starts inbox observers
	return errors.Join(err, o.iw.Close())
}

// watch is the event goroutine: it reads what each event names. Its
// clocks: the opt-in rescan, and the probe of runtime.lock, armed only
// while a runtime runs.
func (o *Observer) watch() {
	defer o.wg.Done()
	var rescan <-chan time.Time
	if o.opts.Rescan > 0 {
		tick := time.NewTicker(o.opts.Rescan)
		defer tick.Stop()
		rescan = tick.C
	}
	probe := time.NewTimer(o.opts.Probe)
	defer probe.Stop()
	for {
		if !o.running() {
			probe.Stop()
		} else if !o.probeArmed {
			probe.Reset(o.opts.Probe)
		}
		o.probeArmed = o.running()
		select {
		case <-o.ctx.Done():
			return
		case ev, ok := <-o.fsw.Events:
			if !ok {
				return
			}
			o.handle(ev)
		case _, ok := <-o.fsw.Errors:
			if !ok {
				return
			}
			o.rescan() // overflow or another error: events were lost
		case <-rescan:
			o.rescan()
		case <-probe.C:
			o.probeArmed = false // fired: armed again below while it runs
			o.probeRuntime()
		}
	}
}

// running reports whether the last probe found a runtime running.
func (o *Observer) running() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.m.runtime.Running
}

// handle reads again the one file an event names.
func (o *Observer) handle(ev fsnotify.Event) {
	kind, ok := o.watched[filepath.Dir(ev.Name)]
	base := filepath.Base(ev.Name)
	if !ok || strings.HasPrefix(base, ".") {
		return
	}
	switch kind {
	case "":
		switch base {
		case "team.json":
			o.loadTeam()
		case teamdir.TracesFile:
			o.readTraces()
		case teamdir.DeadLetterFile:
			o.readDeadLetters()
		case teamdir.RuntimeLockFile:
			o.probeRuntime()
		case teamdir.MembersDir, teamdir.RequestsDir, teamdir.CursorsDir:
			// Recreated: watch it again and read what it holds.
			if ev.Has(fsnotify.Create) && o.fsw != nil {
				_ = o.fsw.Add(ev.Name)
				o.rescan()
			}
		}
	case teamdir.MembersDir:
		if name, ok := strings.CutSuffix(base, ".json"); ok {
			o.loadMember(name)
		}
	case teamdir.RequestsDir:
		if id, ok := strings.CutSuffix(base, ".json"); ok {
			o.loadRequest(id)
		} else if id, ok := strings.CutSuffix(base, ".decision"); ok {
			o.loadRequest(id)
		}
	case teamdir.CursorsDir:
		if name, ok := strings.CutSuffix(base, ".cursor"); ok && o.observing[name] {
			o.loadCommitted(name)
		}
	}
}

// rescan reads everything again.
func (o *Observer) rescan() {
	o.probeRuntime() // a runtime killed with kill -9 changes no file: only a probe sees it
	o.loadTeam()
	o.loadMembers()
	o.loadRequests()
	o.readTraces()
	o.readDeadLetters()
	for name := range o.observing {
		o.loadCommitted(name)
	}
}

// changed marks the model dirty and wakes the sender. Called under mu.
func (o *Observer) changed() { o.m.changed() }

// changed marks the model dirty and wakes its sender. Called under the
// lock that guards it.
func (m *model) changed() {
	m.dirty = true
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

func (o *Observer) loadTeam() {
	t, err := Load(o.dir)
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
	o.changed()
	o.mu.Unlock()
	if t != nil {
		o.follow(t.InboxNames())
	}
}

// follow starts a read-only observer on each inbox not followed yet, from
// the oldest line on disk.
func (o *Observer) follow(names []string) {
	for _, name := range names {
		if o.observing[name] || o.iw == nil {
			continue
		}
		o.observing[name] = true
		o.loadCommitted(name) // before the first delivery, so read lines are not counted
		if _, err := o.iw.Observe(name, true, func(d inbox.Delivery) { o.delivered(name, d) }); err != nil {
			delete(o.observing, name)
		}
	}
}

// delivered takes one message an inbox observer saw.
func (o *Observer) delivered(name string, d inbox.Delivery) {
	o.mu.Lock()
	defer o.mu.Unlock()
	iv := o.m.inbox(name)
	if d.Offset >= iv.committed {
		iv.unread = append(iv.unread, d.Offset)
		o.m.membersStale = true
	}
	o.m.addMessage(MessageView{Inbox: name, Offset: d.Offset, Msg: d.Msg})
}

// addMessage takes one message seen in an inbox. Called under the lock.
func (m *model) addMessage(mv MessageView) {
	if n := len(m.msgs); n > 0 && mv.Msg.TS.Before(m.msgs[n-1].Msg.TS) {
		m.unsorted = true
	}
	// Appending never writes where a snapshot handed out can see: those
	// slices end at their length and capacity.
	m.msgs = append(m.msgs, mv)
	if !m.unsorted && len(m.msgs) > MaxMessages {
		m.msgs = m.msgs[len(m.msgs)-MaxMessages:]
	}
	m.changed()
}

func (m *model) inbox(name string) *inboxView {
	iv := m.inboxes[name]
	if iv == nil {
		iv = &inboxView{}
		m.inboxes[name] = iv
	}
	return iv
}

func (o *Observer) loadCommitted(name string) {
	c, err := inbox.Committed(o.dir, name)
	if err != nil {
		return // the rescan tries again
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	iv := o.m.inbox(name)
	if c == iv.committed {
		return
	}
	iv.committed = c
	i, _ := slices.BinarySearch(iv.unread, c)
	if i > 0 {
		iv.unread = iv.unread[i:]
		o.m.membersStale = true
		o.changed()
	}
}

func (o *Observer) loadMember(name string) {
	rec, err := LoadMember(o.dir, name)
	var ce *store.CorruptError
	if errors.As(err, &ce) {
		o.mu.Lock()
		defer o.mu.Unlock()
		o.m.setCorruptMember(ce)
		return
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return // an invalid name: not a member's record
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.m.setMember(name, rec)
}

// setCorruptMember shows a member whose record cannot be read as corrupt,
// saying why. Called under mu.
func (m *model) setCorruptMember(ce *store.CorruptError) {
	name := ce.Name
	delete(m.records, name)
	if m.corruptMembers[name] == ce.Error() {
		return
	}
	m.corruptMembers[name] = ce.Error()
	m.membersStale = true
	m.changed()
}

// probeRuntime asks runtime.lock whether a runtime runs the team.
func (o *Observer) probeRuntime() {
	st, err := ProbeRuntime(o.dir)
	if err != nil {
		return // the next rescan asks again
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m.probed && o.m.runtime.Running == st.Running && o.m.runtime.Last.PID == st.Last.PID &&
		o.m.runtime.Last.Started.Equal(st.Last.Started) && (o.m.runtime.Last.Stopped == nil) == (st.Last.Stopped == nil) {
		return
	}
	o.m.runtime, o.m.probed = st, true
	o.m.membersStale = true // members are shown as stopped while it is down
	o.changed()
}

// setMember records rec as name's record; nil removes it. Called under mu.
func (m *model) setMember(name string, rec *protocol.Member) {
	if _, bad := m.corruptMembers[name]; bad {
		delete(m.corruptMembers, name)
		m.membersStale = true
		m.changed()
	}
	old, had := m.records[name]
	switch {
	case rec == nil && !had:
		return
	case rec == nil:
		delete(m.records, name)
	case had && reflect.DeepEqual(old, *rec):
		return
	default:
		m.records[name] = *rec
	}
	m.membersStale = true
	m.changed()
}

func (o *Observer) loadMembers() {
	recs, bad, err := ReadMembers(o.dir)
	if err != nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	seen := make(map[string]bool, len(recs))
	for i := range recs {
		seen[recs[i].Name] = true
		o.m.setMember(recs[i].Name, &recs[i])
	}
	for i := range bad {
		seen[bad[i].Name] = true
		o.m.setCorruptMember(&bad[i])
	}
	for name := range o.m.records {
		if !seen[name] {
			o.m.setMember(name, nil)
		}
	}
	for name := range o.m.corruptMembers {
		if !seen[name] {
			delete(o.m.corruptMembers, name)
			o.m.membersStale = true
			o.changed()
		}
	}
}

func (o *Observer) loadRequest(id string) {
	r, err := LoadRequest(o.dir, id)
	var ce *store.CorruptError
	if errors.As(err, &ce) {
		r, err = corruptRequest(id, ce), nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.m.setRequest(id, r)
}

// StatusCorrupt is the status a UI shows for a record that cannot be read
// (a request's or a member's); it is no state of docs/ARCHITECTURE.md, "State machines"
const StatusCorrupt = "corrupt"

// corruptRequest stands for a request record that cannot be read: its id,
// the status corrupt, and why in ResponseReason.
func corruptRequest(id string, ce *store.CorruptError) *protocol.Request {
	return &protocol.Request{ID: id, Status: protocol.RequestStatus(StatusCorrupt), ResponseReason: ce.Error()}
}

// MaxHistory bounds the final requests an observer keeps (the newest), so a
// long history costs a UI nothing; huddle requests --all lists all of it.
const MaxHistory = 500

// loadHistory reads the newest archived requests once, at the start: the
// archive only grows with requests the observer then sees being decided.
func (o *Observer) loadHistory() {
	hist, _, err := ReadHistory(o.dir, MaxHistory)
	if err != nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := range hist {
		o.m.archived[hist[i].ID] = true
		o.m.setRequest(hist[i].ID, &hist[i])
	}
}

// setRequest records r as request id; nil removes it. Called under mu.
func (m *model) setRequest(id string, r *protocol.Request) {
	old, had := m.reqs[id]
	switch {
	case r == nil && !had:
		return
	case had && r != nil && reflect.DeepEqual(old, r):
		return
	}
	if had {
		i, _ := slices.BinarySearchFunc(m.byOrder, old, RequestOrder)
		m.byOrder = slices.Delete(m.byOrder, i, i+1)
		delete(m.reqs, id)
	}
	if r != nil {
		i, _ := slices.BinarySearchFunc(m.byOrder, r, RequestOrder)
		m.byOrder = slices.Insert(m.byOrder, i, r)
		m.reqs[id] = r
	}
	// Final requests come last, newest first: drop the oldest past the bound.
	for n := len(m.byOrder); n > 0 && n-m.pending() > MaxHistory; n-- {
		gone := m.byOrder[n-1]
		m.byOrder = m.byOrder[:n-1]
		delete(m.reqs, gone.ID)
		delete(m.archived, gone.ID)
	}
	m.requestsStale = true
	m.changed()
}

// loadRequests reads the live request records, requests/ itself, and never
// the archive: a request that left requests/ was archived (it is read once,
// from requests/done/, and kept while the bound allows) or removed.
func (o *Observer) loadRequests() {
	live, bad, err := ReadLiveRequests(o.dir)
	if err != nil {
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
	// Where did they go? Archived (found in requests/done/) or removed.
	moved := make(map[string]*protocol.Request, len(gone))
	for _, id := range gone {
		if r, err := LoadRequest(o.dir, id); err == nil {
			moved[id] = r
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := range live {
		r := live[i]
		o.m.setRequest(r.ID, &r)
	}
	for i := range bad {
		o.m.setRequest(bad[i].Name, corruptRequest(bad[i].Name, &bad[i]))
	}
	for _, id := range gone {
		r := moved[id]
		if r != nil && r.Status.IsTerminal() {
			o.m.archived[id] = true
		}
		o.m.setRequest(id, r)
	}
}

func (o *Observer) readTraces() {
	spans, err := o.reader.Read()
	if err != nil && len(spans) == 0 {
		return
	}
	restarted := o.reader.Restarts() != o.restarts
	o.restarts = o.reader.Restarts()
	if len(spans) == 0 && !restarted {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if restarted {
		// traces.jsonl was truncated or replaced: fold its new content alone.
		o.m.traces = trace.NewTraces()
	}
	for _, s := range spans {
		o.m.traces.Add(s)
	}
	o.changed()
}

// readDeadLetters reads the dead letters appended since the last read (all
// of them again when the file shrank).
func (o *Observer) readDeadLetters() {
	o.mu.Lock()
	off := o.m.deadOff
	o.mu.Unlock()
	path := teamdir.DeadLetterPath(o.dir)
	if fi, err := os.Stat(path); err == nil && fi.Size() < off {
		off = 0
		o.mu.Lock()
		o.m.dead = nil
		o.mu.Unlock()
	}
	lines, end, err := ReadLines(path, off)
	if err != nil || end == off {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.m.deadOff = end
	for _, l := range lines {
		if d, ok := parseDeadLetter(l); ok {
			o.m.dead = append(o.m.dead, d)
		}
	}
	if len(o.m.dead) > 2*MaxDeadLetters {
		// A fresh array: the snapshots handed out keep the old one.
		o.m.dead = append([]DeadLetter(nil), o.m.dead[len(o.m.dead)-MaxDeadLetters:]...)
	}
	o.changed()
}

// sender is the one goroutine that calls send.
func (o *Observer) sender() {
	defer o.wg.Done()
	sendSnapshots(o.ctx, o.opts.Frame, &o.mu, &o.m, o.send)
}

// sendSnapshots calls send with a snapshot of m, under mu, whenever m
// changed: at most once per frame, and always once more after the last
// change, until ctx ends. The directory's and the store's observers share it.
func sendSnapshots(ctx context.Context, frameLen time.Duration, mu *sync.Mutex, m *model, send func(Snapshot)) {
	frame := time.NewTimer(time.Hour)
	frame.Stop()
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.wake:
		}
		if wait := frameLen - time.Since(last); wait > 0 {
			frame.Reset(wait)
			select {
			case <-ctx.Done():
				frame.Stop()
				return
			case <-frame.C:
			}
		}
		mu.Lock()
		snap, ok := m.snapshot()
		mu.Unlock()
		if ok {
			send(snap)
			last = time.Now()
		}
	}
}

// snapshot builds a Snapshot of the model if it changed since the last one,
// rebuilding only the parts that did. Called under mu.
func (m *model) snapshot() (Snapshot, bool) {
	if !m.dirty {
		return Snapshot{}, false
	}
	m.dirty = false
	m.version++
	if m.membersStale {
		m.members = m.buildMembers()
		m.membersStale = false
	}
	if m.requestsStale {
		m.requests = m.buildRequests()
		m.requestsStale = false
	}
	if m.unsorted {
		m.sortMessages()
	}
	return Snapshot{
		Runtime:  m.runtime,
		Down:     m.down(),
		Store:    m.onStore,
		Version:  m.version,
		Team:     m.team,
		TeamErr:  m.teamErr,
		Members:  m.members,
		Requests: m.requests,
		Pending:  m.pending(),
		Chains:   m.traces.List(),
		Messages: m.msgs[:len(m.msgs):len(m.msgs)],
		// Appended only: a snapshot's slice never changes under it.
		DeadLetters: m.dead[max(len(m.dead)-MaxDeadLetters, 0):len(m.dead):len(m.dead)],
	}, true
}

// buildMembers lists the members in team.json's order, then those with a
// record but no entry, by name.
func (m *model) buildMembers() []MemberView {
	out := make([]MemberView, 0, len(m.records)+8)
	unread := func(name string) int {
		if iv := m.inboxes[name]; iv != nil {
			if m.onStore {
				return iv.stored
			}
			return len(iv.unread)
		}
		return 0
	}
	inTeam := make(map[string]bool)
	if m.team != nil {
		for _, spec := range m.team.Members {
			inTeam[spec.Name] = true
			out = append(out, MemberView{Record: m.shown(spec.Name), Spec: spec, Unread: unread(spec.Name)})
		}
	}
	n := len(out)
	for name := range m.records {
		if !inTeam[name] {
			out = append(out, MemberView{Record: m.shown(name), Unread: unread(name)})
		}
	}
	for name := range m.corruptMembers {
		if _, ok := m.records[name]; !ok && !inTeam[name] {
			out = append(out, MemberView{Record: m.shown(name), Unread: unread(name)})
		}
	}
	slices.SortFunc(out[n:], func(a, b MemberView) int { return cmp.Compare(a.Record.Name, b.Record.Name) })
	return out
}

// shown is the record of member name as a UI shows it: corrupt when it
// cannot be read, stopped when no runtime runs the team (AsSeenWhileDown).
func (m *model) shown(name string) protocol.Member {
	if why, bad := m.corruptMembers[name]; bad {
		return protocol.Member{Name: name, Status: protocol.MemberStatus(StatusCorrupt), Error: why}
	}
	rec, ok := m.records[name]
	if !ok {
		return protocol.Member{Name: name}
	}
	if m.down() && !m.onStore {
		return AsSeenWhileDown(rec)
	}
	return rec
}

// down reports whether a probe found that no runtime runs the team.
func (m *model) down() bool { return m.probed && !m.runtime.Running }

// buildRequests copies the requests in their order: pending first, oldest
// first; then the final ones, newest resolution first.
func (m *model) buildRequests() []protocol.Request {
	out := make([]protocol.Request, len(m.byOrder))
	for i, r := range m.byOrder {
		out[i] = *r
	}
	return out
}

// pending counts the pending requests: they come first.
func (m *model) pending() int {
	n, _ := slices.BinarySearchFunc(m.byOrder, true, func(r *protocol.Request, _ bool) int {
		if r.Status == protocol.RequestPending {
			return -1
		}
		return 1
	})
	return n
}

// RequestOrder is the order of Snapshot.Requests: pending first, oldest
// first; then the final ones, newest resolution first. A replay orders its
// snapshots' requests with it too.
func RequestOrder(a, b *protocol.Request) int {
	ap, bp := a.Status == protocol.RequestPending, b.Status == protocol.RequestPending
	switch {
	case ap && !bp:
		return -1
	case bp && !ap:
		return 1
	case ap:
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
	default:
		if c := resolvedAt(b).Compare(resolvedAt(a)); c != 0 {
			return c
		}
	}
	return cmp.Compare(a.ID, b.ID)
}

func resolvedAt(r *protocol.Request) time.Time {
	if r.ResolvedAt != nil {
		return *r.ResolvedAt
	}
	return r.Created
}

// sortMessages puts the messages in time order in a new array (the old one
// may be in a snapshot) and keeps the newest MaxMessages.
func (m *model) sortMessages() {
	// Sorted as indexes: a message is too large to move around cheaply.
	idx := make([]int32, len(m.msgs))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortStableFunc(idx, func(a, b int32) int { return m.msgs[a].Msg.TS.Compare(m.msgs[b].Msg.TS) })
	idx = idx[max(len(idx)-MaxMessages, 0):]
	msgs := make([]MessageView, len(idx))
	for i, j := range idx {
		msgs[i] = m.msgs[j]
	}
	m.msgs, m.unsorted = msgs, false
}
