package tui

import (
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"huddle/protocol"
	"huddle/team"
)

// pane names a pane of the screen; 1–4 select them.
type pane int

const (
	paneRoster pane = iota
	paneRequests
	paneTraces
	paneMessages
	paneCount
)

var paneNames = [paneCount]string{"Roster", "Requests", "Traces", "Messages"}

// SnapshotMsg carries a new fold of the team directory.
type SnapshotMsg team.Snapshot

// ActionDoneMsg reports what an action (approve, reject, …) did.
type ActionDoneMsg struct {
	Text string
	Err  error
}

// tickMsg moves the clock and the ages.
type tickMsg time.Time

// grace is how long approve and reject are ignored after a new request
// lands under the cursor, so a keystroke meant for something else cannot
// approve it.
const grace = 400 * time.Millisecond

// Options set up a Model.
type Options struct {
	// Dir is the team directory the actions write to.
	Dir string
	// Styles; zero means NewStyles(true, true).
	Styles *Styles
	// Now is the clock (tests fix it).
	Now func() time.Time
	// Footer says where the UI runs (the directory, attach or runtime).
	Footer string
}

// Model is the root model: it owns focus, layout and the dialog stack.
type Model struct {
	dir    string
	footer string
	styles Styles
	keys   KeyMap
	now    func() time.Time
	clock  time.Time

	width, height int
	snap          team.Snapshot
	haveSnap      bool

	focus pane
	right pane // the pane the right column shows: requests, traces or messages

	filters [paneCount]string
	// Indices into the snapshot after filtering, rebuilt when either changes.
	members  []int
	requests []int
	traces   []traceRow
	messages []int

	rosterSel, traceSel, msgSel int
	reqSel                      string // id of the selected request
	reqIdx                      int
	msgFollow                   bool // keep the newest message selected
	detailOpen                  bool
	detailScroll                int

	// landedAt is when the request under the cursor got there by itself (a
	// new request, or the one before was resolved); zero when the person
	// moved the cursor.
	landedAt time.Time
	// seen are the pending request ids already announced with a bell.
	seen map[string]bool
	// pendingBefore is the pending set of the previous snapshot.
	pendingBefore map[string]bool

	dialog   *dialog
	flash    string
	flashBad bool
}

// traceRow is one row of the traces pane: a chain's header (row < 0) or one
// of its calls.
type traceRow struct {
	chain, row int
}

// New builds the root model.
func New(opts Options) *Model {
	m := &Model{
		dir: opts.Dir, footer: opts.Footer, keys: DefaultKeyMap(), now: opts.Now,
		right: paneRequests, focus: paneRequests, msgFollow: true, seen: map[string]bool{},
	}
	if m.now == nil {
		m.now = time.Now
	}
	if opts.Styles != nil {
		m.styles = *opts.Styles
	} else {
		m.styles = NewStyles(true, true)
	}
	m.clock = m.now()
	return m
}

func (m *Model) Init() tea.Cmd { return m.tick() }

func (m *Model) tick() tea.Cmd {
	return tea.Tick(time.Second, func(t time.Time) tea.Msg { return tickMsg(t) })
}

// Update handles a message. It does no I/O: actions return tea.Cmds.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case tickMsg:
		m.clock = m.now()
		return m, m.tick()
	case SnapshotMsg:
		return m, m.applySnapshot(team.Snapshot(msg))
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

// applySnapshot takes a new fold of the team directory: it keeps the
// selection on the same request, closes a dialog whose request was resolved
// elsewhere, and rings the bell for a new pending request.
func (m *Model) applySnapshot(s team.Snapshot) tea.Cmd {
	now := m.now()
	m.clock = now
	prevSel := m.reqSel
	m.snap, m.haveSnap = s, true
	m.refilter()

	// The request under the cursor: the same one while it is pending; when
	// it became final, the one that now stands at its place (with grace).
	if i, ok := m.requestIndex(prevSel); ok && (m.snap.Requests[m.requests[i]].Status == protocol.RequestPending || !m.wasPending(prevSel)) {
		m.reqIdx = i
	} else {
		m.reqIdx = clamp(m.reqIdx, 0, len(m.requests)-1)
	}
	m.reqSel = ""
	if m.reqIdx >= 0 && m.reqIdx < len(m.requests) {
		m.reqSel = m.snap.Requests[m.requests[m.reqIdx]].ID
	}
	if m.reqSel != prevSel && m.reqSel != "" {
		m.landedAt = now
		m.detailScroll = 0
	}
	m.pendingBefore = m.pendingSet()

	var cmds []tea.Cmd
	if d := m.dialog; d != nil && d.kind == dialogReject {
		if r := m.request(d.target); r != nil && r.Status.IsTerminal() {
			m.dialog = nil
			m.flash, m.flashBad = fmt.Sprintf("%s was resolved by %s (%s) while the dialog was open", r.ID, r.ResolvedBy, r.Status), true
		}
	}
	fresh := false
	for _, r := range m.snap.Requests {
		if r.Status != protocol.RequestPending {
			break // pending come first
		}
		if !m.seen[r.ID] {
			m.seen[r.ID] = true
			fresh = true
		}
	}
	if fresh {
		cmds = append(cmds, tea.Raw("\a"))
	}
	if m.msgFollow {
		m.msgSel = len(m.messages) - 1
	}
	m.rosterSel = clamp(m.rosterSel, 0, len(m.members)-1)
	m.traceSel = clamp(m.traceSel, 0, len(m.traces)-1)
	return tea.Batch(cmds...)
}

// wasPending reports whether id was pending in the snapshot before the
// current one.
func (m *Model) wasPending(id string) bool { return m.pendingBefore[id] }

func (m *Model) pendingSet() map[string]bool {
	out := make(map[string]bool, m.snap.Pending)
	for _, r := range m.snap.Requests[:m.snap.Pending] {
		out[r.ID] = true
	}
	return out
}

func (m *Model) requestIndex(id string) (int, bool) {
	if id == "" {
		return 0, false
	}
	for i, ri := range m.requests {
		if m.snap.Requests[ri].ID == id {
			return i, true
		}
	}
	return 0, false
}

func (m *Model) request(id string) *protocol.Request {
	for i := range m.snap.Requests {
		if m.snap.Requests[i].ID == id {
			return &m.snap.Requests[i]
		}
	}
	return nil
}

// selectedRequest is the request under the cursor, if any.
func (m *Model) selectedRequest() *protocol.Request {
	if m.reqIdx < 0 || m.reqIdx >= len(m.requests) {
		return nil
	}
	return &m.snap.Requests[m.requests[m.reqIdx]]
}

// selectedMember is the member under the roster's cursor, if any.
func (m *Model) selectedMember() *team.MemberView {
	if m.rosterSel < 0 || m.rosterSel >= len(m.members) {
		return nil
	}
	return &m.snap.Members[m.members[m.rosterSel]]
}

// refilter rebuilds the filtered index lists.
func (m *Model) refilter() {
	s := &m.snap
	m.members = m.members[:0]
	for i, mv := range s.Members {
		if match(m.filters[paneRoster], mv.Record.Name, mv.Spec.Name, mv.Spec.Role, string(mv.Record.Status)) {
			m.members = append(m.members, i)
		}
	}
	m.requests = m.requests[:0]
	for i, r := range s.Requests {
		if match(m.filters[paneRequests], r.ID, r.From, r.To, string(r.Kind), string(r.Status)) {
			m.requests = append(m.requests, i)
		}
	}
	m.traces = m.traces[:0]
	f := m.filters[paneTraces]
	for ci, c := range s.Chains {
		keep := f == "" || strings.Contains(c.CorrelationID, f)
		for _, r := range c.Rows {
			keep = keep || match(f, r.Call.Caller, r.Call.Target, r.Call.Action, r.Call.ErrorCode, r.Call.RequestID)
		}
		if !keep {
			continue
		}
		m.traces = append(m.traces, traceRow{ci, -1})
		for ri := range c.Rows {
			m.traces = append(m.traces, traceRow{ci, ri})
		}
	}
	m.messages = m.messages[:0]
	for i, mv := range s.Messages {
		if match(m.filters[paneMessages], mv.Msg.From, mv.Msg.To, mv.Inbox) {
			m.messages = append(m.messages, i)
		}
	}
}

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

// key handles a key press.
func (m *Model) key(k tea.KeyPressMsg) tea.Cmd {
	if key.Matches(k, m.keys.ForceQuit) {
		return tea.Quit
	}
	if m.dialog != nil {
		return m.dialogKey(k)
	}
	km := m.keys
	switch {
	case key.Matches(k, km.Quit):
		return tea.Quit
	case key.Matches(k, km.Help):
		m.dialog = &dialog{kind: dialogHelp}
	case key.Matches(k, km.NextPane):
		m.setFocus((m.focus + 1) % paneCount)
	case key.Matches(k, km.PrevPane):
		m.setFocus((m.focus + paneCount - 1) % paneCount)
	case key.Matches(k, km.Roster):
		m.setFocus(paneRoster)
	case key.Matches(k, km.Requests):
		m.setFocus(paneRequests)
	case key.Matches(k, km.Traces):
		m.setFocus(paneTraces)
	case key.Matches(k, km.Messages):
		m.setFocus(paneMessages)
	case key.Matches(k, km.Up):
		m.move(-1)
	case key.Matches(k, km.Down):
		m.move(1)
	case key.Matches(k, km.PageUp):
		m.detailScroll = max(m.detailScroll-5, 0)
	case key.Matches(k, km.PageDown):
		m.detailScroll += 5
	case key.Matches(k, km.Open):
		if m.focus != paneRoster {
			m.detailOpen = !m.detailOpen
			m.detailScroll = 0
		}
	case key.Matches(k, km.Back):
		m.detailOpen = false
		m.flash = ""
	case key.Matches(k, km.Approve):
		return m.approveSelected()
	case key.Matches(k, km.Reject):
		return m.rejectSelected()
	case key.Matches(k, km.Shutdown):
		if mv := m.selectedMember(); mv != nil {
			m.dialog = &dialog{kind: dialogShutdown, target: memberName(mv)}
		}
	case key.Matches(k, km.Message):
		if mv := m.selectedMember(); mv != nil {
			m.dialog = newInputDialog(dialogMessage, memberName(mv), "message to "+memberName(mv), m.styles)
			return m.dialog.input.Focus()
		}
	case key.Matches(k, km.Broadcast):
		m.dialog = newInputDialog(dialogBroadcast, "", "broadcast to every member", m.styles)
		return m.dialog.input.Focus()
	case key.Matches(k, km.Filter):
		m.dialog = newInputDialog(dialogFilter, "", "filter "+strings.ToLower(paneNames[m.focus]), m.styles)
		m.dialog.input.SetValue(m.filters[m.focus])
		return m.dialog.input.Focus()
	}
	return nil
}

func memberName(mv *team.MemberView) string {
	if mv.Spec.Name != "" {
		return mv.Spec.Name
	}
	return mv.Record.Name
}

func (m *Model) setFocus(p pane) {
	if p != m.focus {
		m.detailOpen = false
		m.detailScroll = 0
	}
	m.focus = p
	if p != paneRoster {
		m.right = p
	}
}

// move moves the cursor of the focused pane; the person moved it, so no
// grace applies to the request it lands on.
func (m *Model) move(d int) {
	m.detailScroll = 0
	switch m.focus {
	case paneRoster:
		m.rosterSel = clamp(m.rosterSel+d, 0, len(m.members)-1)
	case paneRequests:
		m.reqIdx = clamp(m.reqIdx+d, 0, len(m.requests)-1)
		if r := m.selectedRequest(); r != nil {
			m.reqSel = r.ID
		}
		m.landedAt = time.Time{}
	case paneTraces:
		m.traceSel = clamp(m.traceSel+d, 0, len(m.traces)-1)
	case paneMessages:
		m.msgSel = clamp(m.msgSel+d, 0, len(m.messages)-1)
		m.msgFollow = m.msgSel == len(m.messages)-1
	}
}

// inGrace reports whether the request under the cursor arrived too recently
// to be approved or rejected by a key.
func (m *Model) inGrace() bool {
	return !m.landedAt.IsZero() && m.now().Sub(m.landedAt) < grace
}

// decidable returns the selected request if the lead may decide it now, or
// says why not in the flash line.
func (m *Model) decidable() *protocol.Request {
	if m.focus != paneRequests {
		m.flash, m.flashBad = "select a request first (2)", true
		return nil
	}
	r := m.selectedRequest()
	switch {
	case r == nil:
		m.flash, m.flashBad = "no request selected", true
	case m.inGrace():
		return nil // swallowed: it just arrived under the cursor
	case r.Status.IsTerminal():
		m.flash, m.flashBad = fmt.Sprintf("%s is already %s by %s", r.ID, r.Status, r.ResolvedBy), true
	case r.Kind != protocol.KindPlan:
		m.flash, m.flashBad = fmt.Sprintf("%s asks %s to shut down: only %s answers it", r.ID, r.To, r.To), true
	default:
		return r
	}
	return nil
}

func (m *Model) approveSelected() tea.Cmd {
	r := m.decidable()
	if r == nil {
		return nil
	}
	m.flash, m.flashBad = "approving "+r.ID+"…", false
	return m.approve(r.ID)
}

func (m *Model) rejectSelected() tea.Cmd {
	r := m.decidable()
	if r == nil {
		return nil
	}
	m.dialog = newInputDialog(dialogReject, r.ID, "feedback for "+r.From+" (required)", m.styles)
	return m.dialog.input.Focus()
}
