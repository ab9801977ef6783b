package tui

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/spinner"
	tea "charm.land/bubbletea/v2"

	"huddle/notify"
	"huddle/protocol"
	"huddle/team"
	"huddle/team/view"
)

// pane names a pane of the screen; 1–4 select them.
type pane int

const (
	paneRoster pane = iota
	paneRequests
	paneTraces
	paneMessages
	paneDeadLetters
	paneCount
)

var paneNames = [paneCount]string{"Roster", "Requests", "Traces", "Messages", "Dead letters"}

// paneShortNames stand for paneNames in a title too narrow for them.
var paneShortNames = [paneCount]string{"Roster", "Req", "Traces", "Msgs", "Dead"}

// SnapshotMsg carries a new fold of the team directory.
type SnapshotMsg view.Snapshot

// ActionDoneMsg reports what an action (approve, reject, …) did.
type ActionDoneMsg struct {
	Text string
	Err  error
}

// tickMsg moves the clock and the ages to now.
type tickMsg time.Time

// clockMsg is the clock's tick: tickMsg from the one tick scheduled last
// (gen), so that a tick brought forward ends the one it replaced.
type clockMsg struct{ gen int }

// grace is how long approve and reject are ignored after a request
// arrives, or comes under the cursor or changes by itself, so a keystroke
// meant for something else cannot decide it.
const grace = 400 * time.Millisecond

// Options set up a Model.
type Options struct {
	// Dir is the team directory the actions write to.
	Dir string
	// Actions are what the keys do (LeadActions(StoreLead(…)) for a huddle
	// team); nil: the keys say they act on nothing.
	Actions Actions
	// Styles; zero means NewStyles(true, true).
	Styles *Styles
	// Now is the clock (tests fix it).
	Now func() time.Time
	// Footer says where the UI runs (the directory, attach or runtime).
	Footer string
	// RunsTeam is set when quitting the UI stops the team (huddle up, the
	// demo): q asks first while there is work going on.
	RunsTeam bool
	// NoFeed, when set, says why the member view shows no log, transcript
	// or status history (a replay of a team kept in a store, a Claude Code
	// team).
	NoFeed string
	// Lines, when set, is where the member view reads a member's log or
	// transcript (kind is its runtime's) instead of the files in Dir: a
	// team in a store, whose copy of them any machine reads.
	Lines func(member, kind string) view.LineSource
	// Controls, when set, make the UI read-only (a replay): the footer
	// offers them instead of the keys that act on the team.
	Controls []key.Binding
	// Notify says what a person is told of besides the screen: on the
	// terminal (a desktop notification sequence and the bell) and through
	// its channels, each request and crash once.
	Notify Notify
}

// Notify is what the UI tells a person of (notify.Event), and where.
type Notify struct {
	// Kinds are what is told: nil, every kind (notify.AllKinds); empty,
	// nothing.
	Kinds []string
	// Channels are where it is told besides the terminal (a desktop's
	// notifications, a webhook), by a notify.Sender Run starts.
	Channels []notify.Channel
}

// common is what the root model shares with its panes: they read it, only
// the root writes it.
type common struct {
	// spin turns by the members at work (moving), ticking only while
	// some member is (spinning).
	spin     spinner.Model
	spinning bool
	styles   Styles
	keys     KeyMap
	now      func() time.Time
	clock    time.Time // the time the screen shows
	snap     view.Snapshot
	haveSnap bool
	focus    pane
	// onScreen is the request the details last drew for a and r, and
	// changedAt when it got there or changed by itself (zero when the
	// person's key put it there): see noteSelection.
	onScreen  shownRequest
	changedAt time.Time
	// readOnly is set for a UI whose keys decide nothing (a replay).
	readOnly bool
}

// component is a pane as the root model sees it.
type component interface {
	// HandleKey takes a key the pane handles itself (moving, details); it
	// returns a command only for a side effect.
	HandleKey(k tea.KeyPressMsg) tea.Cmd
	// Render draws the pane's inside, w×h.
	Render(w, h int) string
	// ShortHelp is the pane's part of the footer, FullHelp its columns of
	// the ? screen.
	ShortHelp() []key.Binding
	FullHelp() [][]key.Binding

	filter() string
	// setFilter sets the filter and rebuilds the rows.
	setFilter(f string)
	// counts are the rows the filter lets through and all there are.
	counts() (shown, all int)
	// moveBy moves the cursor n rows, stopping at the ends.
	moveBy(n int)
	// home puts the cursor where a fresh list starts.
	home()
	details() *details
}

// Model is the root model: it owns focus, layout and the dialog stack.
type Model struct {
	common
	dir      string
	footer   string
	runsTeam bool
	controls []key.Binding // a read-only UI's keys (Options.Controls)
	// tickGen is the clock's last tick scheduled, due at tickDue.
	tickGen int
	tickDue time.Time
	// notes hands out what to tell a person of (Options.Notify); sender
	// takes it to the channels, when Run started one.
	notes  *notify.Watcher
	sender *notify.Sender
	// flashAt is when the flash on the status line was set.
	flashAt time.Time

	width, height int
	right         pane // the pane the right column shows: requests, traces or messages

	roster   *rosterPane
	requests *requestsPane
	traces   *tracesPane
	messages *messagesPane
	dead     *deadLettersPane
	panes    [paneCount]component
	// member, when open, fills the right column with the member under the
	// roster's cursor.
	member *memberView

	// diff, when open, fills the screen with a change: a review's, or a
	// plan's work so far (diffview.go).
	diff *diffView

	dialog   *dialog
	flash    string
	flashBad bool

	// actions are what the keys do (Options.Actions; nil: nothing).
	actions Actions
}

// New builds the root model.
func New(opts Options) *Model {
	m := &Model{dir: opts.Dir, footer: opts.Footer, runsTeam: opts.RunsTeam, controls: opts.Controls, right: paneRequests}
	m.keys, m.now, m.focus = DefaultKeyMap(), opts.Now, paneRequests
	m.readOnly = opts.Controls != nil
	if m.now == nil {
		m.now = time.Now
	}
	if opts.Styles != nil {
		m.styles = *opts.Styles
	} else {
		m.styles = NewStyles(true, true)
	}
	m.clock = m.now()
	m.spin = spinner.New(spinner.WithSpinner(spinner.MiniDot))
	m.actions = opts.Actions
	m.roster = newRosterPane(&m.common)
	m.requests = newRequestsPane(&m.common)
	m.traces = newTracesPane(&m.common)
	m.messages = newMessagesPane(&m.common)
	m.dead = newDeadLettersPane(&m.common)
	m.panes = [paneCount]component{m.roster, m.requests, m.traces, m.messages, m.dead}
	m.member = newMemberView(&m.common, opts.Dir)
	if opts.NoFeed != "" {
		m.member.noFeed = opts.NoFeed
	}
	m.member.source = opts.Lines
	if kinds := opts.Notify.Kinds; !m.readOnly {
		if kinds == nil {
			kinds = notify.AllKinds()
		}
		m.notes = notify.NewWatcher(kinds)
	}
	return m
}

// Close releases what the model holds outside the program once it has
// stopped: the member view's follower and its watch (the kernel allows a
// user only so many). Call it after Run returns.
func (m *Model) Close() {
	if m.member != nil {
		m.member.stopTail()
	}
}

func (m *Model) Init() tea.Cmd { return m.tick() }

// tick schedules the clock's next tick: in a second while the screen
// counts something in seconds, else when the header's clock turns to the
// next minute. An idle screen draws once a minute.
func (m *Model) tick() tea.Cmd {
	now := m.now()
	d := time.Minute - time.Duration(now.Second())*time.Second - time.Duration(now.Nanosecond())
	if m.countsSeconds(now) {
		d = time.Second
	}
	m.tickGen++
	m.tickDue = now.Add(d)
	gen := m.tickGen
	return tea.Tick(d, func(time.Time) tea.Msg { return clockMsg{gen: gen} })
}

// countsSeconds reports whether the screen shows something that changes
// by the second at now: a flash (it clears after a few seconds), a member
// at work, a request pending (its countdown) or one that came or was
// decided in the last hour (its age, to the second), the member card (how
// long in its status), or a call still running near the Traces pane's
// cursor (its time).
func (m *Model) countsSeconds(now time.Time) bool {
	if m.flash != "" || m.member.open || m.moving() {
		return true
	}
	if m.right == paneTraces && m.traces.runningNear(max(m.height, 1)) {
		return true
	}
	for i := range m.snap.Requests {
		r := &m.snap.Requests[i]
		at := r.Created
		if r.ResolvedAt != nil {
			at = *r.ResolvedAt
		}
		if r.Status == protocol.RequestPending || now.Sub(at) < time.Hour {
			return true
		}
	}
	return false
}

// Update handles a message. It does no I/O: actions return tea.Cmds.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	before := m.flash
	model, cmd := m.update(msg)
	if _, ticked := msg.(clockMsg); !ticked && m.tickDue.Sub(m.now()) > time.Second && m.countsSeconds(m.now()) {
		// Something now counted in seconds came on screen while the
		// clock waits for the next minute: drawn with the time now, its
		// tick comes forward.
		m.clock = m.now()
		cmd = tea.Batch(cmd, m.tick())
	}
	switch {
	case m.flash != before:
		m.flashAt = m.now()
	case m.flash != "" && m.now().Sub(m.flashAt) >= flashLife(m.flashBad):
		// A flash says what just happened; the footer's own line comes
		// back a few seconds later, at the clock's next tick.
		m.flash = ""
	}
	return model, cmd
}

// flashFor is how long a flash stays on the status line; a failure stays
// twice as long.
const flashFor = 4 * time.Second

func flashLife(bad bool) time.Duration {
	if bad {
		return 2 * flashFor
	}
	return flashFor
}

func (m *Model) update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case tickMsg:
		m.clock = m.now()
	case clockMsg:
		if msg.gen != m.tickGen {
			return m, nil // a tick brought forward replaced it
		}
		m.clock = m.now()
		return m, m.tick()
	case graceOverMsg:
		m.clock = m.now() // drawn again: the footer offers what now acts
	case SnapshotMsg:
		return m, m.applySnapshot(view.Snapshot(msg))
	case spinner.TickMsg:
		if !m.moving() {
			m.spinning = false // no member at work: the spinner stops ticking
			return m, nil
		}
		var cmd tea.Cmd
		m.spin, cmd = m.spin.Update(msg)
		return m, cmd
	case tailOpenedMsg:
		return m, m.member.opened(msg)
	case tailMsg:
		return m, m.member.appended(msg)
	case historyMsg:
		m.member.historyRead(msg)
	case diffLoadedMsg:
		m.diffLoaded(msg)
	case unmergedMsg:
		m.unmergedRead(msg)
	case ActionDoneMsg:
		m.flash, m.flashBad = msg.Text, msg.Err != nil
		if msg.Err != nil {
			m.flash = msg.Err.Error()
		}
	case tea.BackgroundColorMsg:
		if m.styles.color {
			m.styles = NewStyles(true, msg.IsDark())
		}
	case tea.KeyPressMsg:
		return m, m.key(msg)
	}
	return m, nil
}

// applySnapshot takes a new fold of the team directory: the panes rebuild
// their rows (the requests keep the selection on the same request), a
// dialog whose request was resolved elsewhere closes, and a new pending
// request rings the bell.
//
// A pane whose part of the snapshot is the very slice it had (an observer
// hands out the same slice while that part did not change, and a snapshot
// is never modified) keeps its rows; the traces pane updates only the
// chains that changed.
func (m *Model) applySnapshot(s view.Snapshot) tea.Cmd {
	m.clock = m.now()
	prev, had := m.snap, m.haveSnap
	m.snap, m.haveSnap = s, true
	if !had || !sameSlice(prev.Members, s.Members) {
		m.roster.refresh()
	}
	landed := false
	if !had || !sameSlice(prev.Requests, s.Requests) {
		landed = m.requests.refresh()
	} else {
		m.requests.refused = nil // told with the snapshot that brought them
	}
	m.traces.refresh()
	if !had || !sameSlice(prev.Messages, s.Messages) {
		m.messages.refresh()
	}
	if !had || !sameSlice(prev.DeadLetters, s.DeadLetters) {
		m.dead.refresh()
	}
	if landed {
		// A request landing under the cursor puts the details on screen
		// back at their top, whichever pane shows them.
		m.shown().details().scroll = 0
	}

	var cmds []tea.Cmd
	if v := m.diff; v != nil && v.id != "" {
		if r := m.requests.byID(v.id); r != nil && r.Status.IsTerminal() && !strings.HasSuffix(v.title, string(r.Status)) {
			v.title = strings.TrimSuffix(v.title, string(protocol.RequestPending)) + string(r.Status)
			m.flash, m.flashBad = fmt.Sprintf("%s is %s by %s", r.ID, r.Status, r.ResolvedBy), r.Status != protocol.RequestMerged
		}
	}
	if d := m.dialog; d != nil && (d.kind == dialogReject || d.kind == dialogChanges || d.kind == dialogDiscard) {
		if r := m.requests.byID(d.target); r != nil && r.Status.IsTerminal() {
			m.dialog = nil
			m.flash, m.flashBad = fmt.Sprintf("%s was resolved by %s (%s) while the dialog was open", r.ID, r.ResolvedBy, r.Status), true
		}
	}
	for _, r := range m.requests.refused {
		// A refusal arrives when it arrives: say it, whatever is on screen.
		m.flash, m.flashBad = fmt.Sprintf("%s refused to shut down (%s): %s", r.To, r.ID, team.Printable(r.ResponseReason)), true
	}
	fresh := m.requests.announce()
	if m.notes != nil {
		for _, e := range m.notes.New(s) {
			cmds = append(cmds, tea.Raw(notify.Terminal(e)))
			if m.sender != nil {
				m.sender.Notify(e)
			}
		}
	}
	if m.focus == paneRoster {
		// The roster's rows may have moved under the card (show gathers
		// the facts of the member it shows from this snapshot), and the
		// member may have moved.
		cmds = append(cmds, m.syncMember())
		if mv := m.member.facts.mv; m.member.open && mv != nil {
			cmds = append(cmds, m.member.refreshHistory(mv))
		}
	}
	if m.noteSelection(true) || fresh {
		cmds = append(cmds, graceOver())
	}
	if !m.spinning && m.moving() {
		m.spinning = true
		cmds = append(cmds, m.spin.Tick)
	}
	return tea.Batch(cmds...)
}

// sameSlice reports whether a and b are the same slice: the same elements
// in the same array.
func sameSlice[E any](a, b []E) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// focused is the pane with focus; shown is the one in the right column,
// whose details are on screen.
func (m *Model) focused() component { return m.panes[m.focus] }
func (m *Model) shown() component   { return m.panes[m.right] }

// selectedRequest is the request under the cursor, if any.
func (m *Model) selectedRequest() *protocol.Request { return m.requests.selected() }

// selectedMember is the member under the roster's cursor, if any.
func (m *Model) selectedMember() *view.MemberView { return m.roster.selected() }

// match reports whether any field contains the filter (case-insensitive).
func match(filter string, fields ...string) bool {
	if filter == "" {
		return true
	}
	f := strings.ToLower(filter)
	for _, s := range fields {
		if strings.Contains(strings.ToLower(s), f) {
			return true
		}
	}
	return false
}

func clamp(v, lo, hi int) int {
	if v > hi {
		v = hi
	}
	if v < lo {
		v = lo
	}
	return v
}

// key handles a key press. What a key put on screen needs no grace: it is
// where the person moved; so does what a moving key leaves where it was
// (the person looks at it).
func (m *Model) key(k tea.KeyPressMsg) tea.Cmd {
	km := m.keys
	moving := m.dialog == nil && key.Matches(k, km.Up, km.Down, km.NextPane, km.PrevPane, km.Roster, km.Requests, km.Traces, km.Messages, km.DeadLetters)
	cmd := m.handleKey(k)
	m.noteSelection(false)
	if moving {
		m.changedAt = time.Time{}
	}
	return cmd
}

// handleKey takes a key press: the root takes the keys of focus, dialogs
// and actions, the focused pane the rest.
func (m *Model) handleKey(k tea.KeyPressMsg) tea.Cmd {
	if key.Matches(k, m.keys.ForceQuit) {
		return tea.Quit
	}
	if m.dialog != nil {
		return m.dialogKey(k)
	}
	if m.diff != nil {
		return m.diffKey(k)
	}
	km := m.keys
	if r := m.selectedRequest(); r != nil && m.focus == paneRequests && !m.readOnly {
		if cmd, ok := m.reviewKey(k, r); ok {
			return cmd
		}
	}
	switch {
	case key.Matches(k, km.Quit):
		if work := m.workGoingOn(); m.runsTeam && work != "" {
			m.dialog = &dialog{kind: dialogQuit, target: work}
			return nil
		}
		return tea.Quit
	case key.Matches(k, km.Help):
		m.dialog = &dialog{kind: dialogHelp}
	case key.Matches(k, km.NextPane):
		return m.setFocus((m.focus + 1) % paneCount)
	case key.Matches(k, km.PrevPane):
		return m.setFocus((m.focus + paneCount - 1) % paneCount)
	case key.Matches(k, km.Roster):
		return m.setFocus(paneRoster)
	case key.Matches(k, km.Requests):
		return m.setFocus(paneRequests)
	case key.Matches(k, km.Traces):
		return m.setFocus(paneTraces)
	case key.Matches(k, km.Messages):
		return m.setFocus(paneMessages)
	case key.Matches(k, km.DeadLetters):
		return m.setFocus(paneDeadLetters)
	case key.Matches(k, km.Up, km.Down):
		cmd := m.focused().HandleKey(k)
		// Moving any cursor, the roster's too, puts the details on
		// screen back at their top.
		m.shown().details().scroll = 0
		if m.focus == paneRoster {
			return tea.Batch(cmd, m.syncMember())
		}
		return cmd
	case key.Matches(k, km.Top, km.Bottom) && !m.fullDetails(), key.Matches(k, km.PageUp, km.PageDown) && !m.scrollsDetails():
		// The list moves: to an end, or a page (about the rows it shows).
		n := max(1, (m.height-4)*2/5-1)
		switch {
		case key.Matches(k, km.Top):
			n = -maxRows
		case key.Matches(k, km.Bottom):
			n = maxRows
		case key.Matches(k, km.PageUp):
			n = -n
		}
		m.focused().moveBy(n)
		m.shown().details().scroll = 0
		if m.focus == paneRoster {
			return m.syncMember()
		}
	case key.Matches(k, km.DetailsUp, km.PageUp, km.Top):
		// The details on screen scroll whichever column has focus (page
		// keys too, while the details fill the pane).
		n := -5
		if key.Matches(k, km.Top) {
			n = -maxRows
		}
		if m.member.open {
			m.member.scrollBy(n)
		} else {
			m.shown().details().scrollBy(n)
		}
	case key.Matches(k, km.DetailsDown, km.PageDown, km.Bottom):
		n := 5
		if key.Matches(k, km.Bottom) {
			n = maxRows
		}
		if m.member.open {
			m.member.scrollBy(n)
		} else {
			m.shown().details().scrollBy(n)
		}
	case key.Matches(k, km.Open, km.FullLog) && m.focus == paneRoster:
		// The member's log or transcript fills the card's column, or
		// gives the card back.
		m.member.full = m.member.open && !m.member.full
	case key.Matches(k, km.Back):
		m.flash = ""
		if m.focus == paneRoster {
			if m.member.full {
				m.member.full = false
				return nil
			}
			return m.setFocus(m.right) // back to the pane the roster was entered from
		}
		return m.focused().HandleKey(k)
	case key.Matches(k, km.Approve):
		return m.approveSelected()
	case key.Matches(k, km.Reject):
		return m.rejectSelected()
	case key.Matches(k, km.AllowSession):
		return m.allowSessionSelected()
	case key.Matches(k, km.Shutdown):
		if why := m.memberRefusal(km.Shutdown); why != "" {
			m.flash, m.flashBad = why, true
		} else if name := m.actedOn(); name != "" {
			if why := m.cannotShutDown(name); why != "" {
				m.flash, m.flashBad = why, true
				return nil
			}
			m.dialog = &dialog{kind: dialogShutdown, target: name}
		} else {
			m.flash, m.flashBad = "this row names no member to shut down", true
		}
	case key.Matches(k, km.Message):
		if why := m.memberRefusal(km.Message); why != "" {
			m.flash, m.flashBad = why, true
			return nil
		}
		if name := m.actedOn(); name != "" {
			m.dialog = newInputDialog(dialogMessage, name, "message to "+name, m.styles)
			return m.dialog.input.Focus()
		}
		m.flash, m.flashBad = "this row names no member to message", true
	case key.Matches(k, km.Restart):
		name := m.actedOn()
		if name == "" {
			m.flash, m.flashBad = "this row names no member to restart", true
			return nil
		}
		if why := m.cannotRestart(name); why != "" {
			m.flash, m.flashBad = why, true
			return nil
		}
		m.flash, m.flashBad = "asking to restart "+name+"…", false
		return m.restart(name)
	case key.Matches(k, km.Broadcast):
		if why := m.memberRefusal(km.Broadcast); why != "" {
			m.flash, m.flashBad = why, true
			return nil
		}
		m.dialog = newInputDialog(dialogBroadcast, "", "broadcast to every member", m.styles)
		return m.dialog.input.Focus()
	case key.Matches(k, km.Filter):
		m.dialog = newInputDialog(dialogFilter, "", "filter "+strings.ToLower(paneNames[m.focus]), m.styles)
		m.dialog.input.SetValue(m.focused().filter())
		return m.dialog.input.Focus()
	default:
		return m.focused().HandleKey(k)
	}
	return nil
}

func memberName(mv *view.MemberView) string {
	if mv.Spec.Name != "" {
		return mv.Spec.Name
	}
	return mv.Record.Name
}

// setFocus moves the focus to p; moving it closes the details. The roster
// shows the card of the member under its cursor in the right column; the
// other panes show themselves there.
func (m *Model) setFocus(p pane) tea.Cmd {
	if p != m.focus {
		for _, c := range m.panes {
			c.details().reset()
		}
	}
	if p == paneRequests && m.focus != paneRequests {
		m.requests.openOnPending()
	}
	m.focus = p
	if p != paneRoster {
		m.right = p
	}
	return m.syncMember()
}

// workGoingOn says what quitting would interrupt: members at work or
// waiting on the lead, and pending requests; "" when there is none.
func (m *Model) workGoingOn() string {
	busy := 0
	for _, mv := range m.snap.Members {
		switch mv.Record.Status {
		case protocol.MemberStarting, protocol.MemberWorking, protocol.MemberAwaitingApproval, protocol.MemberRevising:
			busy++
		}
	}
	var parts []string
	if busy > 0 {
		parts = append(parts, plural(busy, "member")+" at work")
	}
	if m.snap.Pending > 0 {
		parts = append(parts, plural(m.snap.Pending, "pending request"))
	}
	return strings.Join(parts, ", ")
}

// syncMember keeps the card in the right column on the roster's selected
// member while the roster has focus, and closes it otherwise.
func (m *Model) syncMember() tea.Cmd {
	if m.focus != paneRoster {
		m.member.close()
		return nil
	}
	mv := m.selectedMember()
	if mv == nil {
		m.member.close()
		return nil
	}
	return m.member.show(mv)
}

func (m *Model) approveSelected() tea.Cmd {
	r := m.decidable()
	if r == nil {
		return nil
	}
	m.flash, m.flashBad = "approving "+r.ID+"…", false
	if r.Kind == protocol.KindPermission {
		m.flash = "allowing " + r.ID + " once…"
	}
	return m.approve(r.ID)
}

// allowSessionSelected allows the selected permission and what its rule
// covers for the rest of the member's session.
func (m *Model) allowSessionSelected() tea.Cmd {
	r := m.decidable()
	if r == nil {
		return nil
	}
	if r.Kind != protocol.KindPermission || r.Rule == "" {
		m.flash, m.flashBad = r.ID+" is not a permission: A allows a tool for the session", true
		return nil
	}
	m.flash, m.flashBad = "allowing "+r.Rule+" for "+r.From+"'s session…", false
	return m.allowForSession(r.ID)
}

func (m *Model) rejectSelected() tea.Cmd {
	r := m.decidable()
	if r == nil {
		return nil
	}
	prompt := "feedback for " + r.From + " on " + r.ID + " (required)"
	if r.Kind == protocol.KindPermission {
		prompt = "why " + r.From + " may not " + permissionLine(r) + " (its agent reads it; required)"
	}
	m.dialog = newInputDialog(dialogReject, r.ID, prompt, m.styles)
	return m.dialog.input.Focus()
}

// maxRows stands for "as far as it goes" in moveBy and scrollBy.
const maxRows = 1 << 30

// scrollsDetails reports whether the page keys scroll details rather than
// move a list: the focused pane's details fill it, or the roster shows its
// member (a roster is short; its member's log is long).
func (m *Model) scrollsDetails() bool {
	if m.focus == paneRoster {
		return m.member.open
	}
	return m.focused().details().open
}

// fullDetails reports whether details fill the column, so that g and G
// go to their top and bottom rather than the list's ends.
func (m *Model) fullDetails() bool {
	if m.focus == paneRoster {
		return m.member.open && m.member.full
	}
	return m.focused().details().open
}

// moving reports whether a member is at work (starting or working): the
// roster's spinner turns for it.
func (c *common) moving() bool {
	for _, mv := range c.snap.Members {
		if spins(mv.Record.Status) {
			return true
		}
	}
	return false
}

// spins reports whether a member in status s is shown by the spinner.
func spins(s protocol.MemberStatus) bool {
	return s == protocol.MemberWorking || s == protocol.MemberStarting
}
