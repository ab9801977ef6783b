package tui

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"huddle/ipc/trace"
	"huddle/protocol"
	"huddle/team"
	"huddle/team/view"
)

// The member view fills the right column when enter is pressed on a roster
// row: who the member is, what it does and waits for, its recent mail and
// calls, and a live tail of its transcript (an llm member) or its log.
// Moving the roster's cursor shows the next member; esc closes it.

const (
	// tailBytes is how much of a long transcript or log the view reads
	// when it opens: its end, from a line start.
	tailBytes = 256 << 10
	// tailEntries is how many lines of it the view keeps.
	tailEntries = 500
	// recentMail is how many of the member's messages it shows.
	recentMail = 4
	// recentMoves is how many of its status changes it shows.
	recentMoves = 5
)

// memberView is the state of the member view. Its tail is read by
// commands: a follower the view owns, one at a time, named by gen so that
// what a replaced follower still delivers is dropped.
type memberView struct {
	*common
	dir string
	// noFeed, when set, says why there is no log or transcript to read:
	// the team is not a huddle team directory (a Claude Code team, a
	// replayed export).
	noFeed string
	// source, when set, is where a member's log or transcript is read
	// instead of the files in dir (a team in a store).
	source func(member, kind string) view.LineSource
	open   bool
	name   string // the member shown

	gen     int
	feed    team.Feed
	tail    view.LineSource
	opening *tailSlot // where the command opening the tail puts it
	lines   []string
	tailErr string
	// noLog, when set, says why the member has no log at all (a script
	// member writes none).
	noLog string
	up    int  // lines scrolled up from the newest
	full  bool // the feed fills the view, without the card (l)

	// facts are what the card shows that takes a pass over the snapshot,
	// gathered when a snapshot arrives, not at every frame.
	facts memberFacts
	// tallies are the member's calls, kept from snapshot to snapshot so that
	// one costs the chains that changed, not the history.
	tallies callTallies

	// history is the member's latest status changes, read again when its
	// record says it moved (movedAt).
	history []team.StatusChange
	movedAt string
}

// memberFacts are the parts of the snapshot that concern the member shown.
// They point into the snapshot, which is never modified.
type memberFacts struct {
	mv            *view.MemberView // nil once the member left the team
	pending       *protocol.Request
	calls, failed int
	lastFailed    *trace.Call
	dead          int
	lastDead      *team.DeadLetter
	mail          []*view.MessageView // the newest recentMail, oldest first
}

// gather takes the member's facts from the newest snapshot.
func (v *memberView) gather() {
	f := memberFacts{}
	for i := range v.snap.Members {
		if memberName(&v.snap.Members[i]) == v.name {
			f.mv = &v.snap.Members[i]
			break
		}
	}
	// The card draws one pending request, the one a and r decide on the
	// roster: the member's oldest asking the lead, else a shutdown asked of
	// it (listed pending first, oldest first).
	for i := range v.snap.Requests {
		r := &v.snap.Requests[i]
		if r.Status != protocol.RequestPending {
			break
		}
		if r.From == v.name && r.Kind != protocol.KindShutdown {
			f.pending = r
			break
		}
		if f.pending == nil && r.Kind == protocol.KindShutdown && r.To == v.name {
			f.pending = r
		}
	}
	t := v.tallies.of(v.name, v.snap.Chains)
	f.calls, f.failed, f.lastFailed = t.calls, t.failed, t.lastFailed
	for i := range v.snap.DeadLetters {
		if d := &v.snap.DeadLetters[i]; d.Caused(v.name) {
			f.dead, f.lastDead = f.dead+1, d
		}
	}
	for i := len(v.snap.Messages) - 1; i >= 0 && len(f.mail) < recentMail; i-- {
		if m := &v.snap.Messages[i]; m.Msg.From == v.name || m.Msg.To == v.name {
			f.mail = append(f.mail, m)
		}
	}
	slices.Reverse(f.mail)
	v.facts = f
}

// historyMsg brings a member's latest status changes.
type historyMsg struct {
	name    string
	movedAt string
	changes []team.StatusChange
}

// tailOpenedMsg brings the end of a member's feed and its follower.
type tailOpenedMsg struct {
	gen   int
	f     view.LineSource
	lines []string
	err   error
}

// tailMsg brings the lines appended to a member's feed.
type tailMsg struct {
	gen   int
	lines []string
	err   error
}

func newMemberView(c *common, dir string) *memberView { return &memberView{common: c, dir: dir} }

// show opens the view on mv, or keeps it on mv when it is already there;
// either way the member's facts are gathered from the newest snapshot. It
// returns the commands that read a new member's feed.
func (v *memberView) show(mv *view.MemberView) tea.Cmd {
	name := memberName(mv)
	if v.open && name == v.name {
		v.gather()
		return nil
	}
	v.stopTail()
	v.open, v.name, v.up = true, name, 0
	v.lines, v.tailErr = nil, ""
	v.history, v.movedAt = nil, ""
	v.gather()
	history := v.refreshHistory(mv)
	v.noLog = ""
	if v.noFeed != "" {
		v.feed = team.Feed{What: "log"}
		v.tailErr = v.noFeed
		return history
	}
	switch mv.Spec.Runtime.Kind {
	case team.RuntimeScript:
		v.noLog = "a script member writes no log: its steps are in team.json"
	case team.RuntimeExternal:
		v.noLog = "an external member's log is its own: huddle keeps none"
	}
	if mv.Spec.Target != nil {
		v.noLog = "called through a command of its own: huddle keeps no log of it"
	}
	if v.noLog != "" {
		v.feed = team.Feed{What: "log"}
		return history
	}
	if v.source != nil {
		feed, _ := team.MemberFeed(v.dir, name, mv.Spec.Runtime.Kind) // its What and Line; no path is read
		feed.Path = ""                                                // the label names no local file
		v.feed = feed
		v.gen++
		// Opened by the command, not here: Update starts no reader.
		gen, source, kind, slot := v.gen, v.source, mv.Spec.Runtime.Kind, v.newSlot()
		return tea.Batch(history, func() tea.Msg {
			f := source(name, kind)
			if !slot.put(f) {
				f = nil
			}
			return tailOpenedMsg{gen: gen, f: f}
		})
	}
	if v.noFeed != "" {
		v.feed = team.Feed{What: "log"}
		v.tailErr = v.noFeed
		return history
	}
	feed, err := team.MemberFeed(v.dir, name, mv.Spec.Runtime.Kind)
	v.feed = feed
	if err != nil {
		v.tailErr = err.Error()
		return history
	}
	v.gen++
	return tea.Batch(history, openTail(v.gen, feed, v.newSlot()))
}

// refreshHistory reads the member's status history again when its record
// shows a move the view has not read.
func (v *memberView) refreshHistory(mv *view.MemberView) tea.Cmd {
	moved := string(mv.Record.Status) + "@" + mv.Record.Since.String()
	if !v.open || memberName(mv) != v.name || moved == v.movedAt || v.dir == "" {
		return nil
	}
	v.movedAt = moved
	dir, name := v.dir, v.name
	return func() tea.Msg {
		changes, _ := team.ReadStatusHistory(dir, name, recentMoves) // none is shown as none
		return historyMsg{name: name, movedAt: moved, changes: changes}
	}
}

// historyRead takes a member's status changes, if they are still wanted.
func (v *memberView) historyRead(msg historyMsg) {
	if msg.name == v.name && msg.movedAt == v.movedAt {
		v.history = msg.changes
	}
}

// close closes the view and stops its follower.
func (v *memberView) close() {
	v.open, v.full = false, false
	v.tallies = callTallies{} // what it kept is of no use until the view opens again
	v.stopTail()
}

// stopTail closes the follower and forgets it.
//
// The follower is closed here, not by a command: closing an inotify watch
// does not wait on the disk, and a close left to a command that never runs
// (the program quitting, a dropped command) would keep the watch — the
// kernel allows a user only so many. Its waiting read returns, and its
// message is dropped (gen).
func (v *memberView) stopTail() {
	if v.tail != nil {
		_ = v.tail.Close()
	}
	if v.opening != nil {
		v.opening.close()
	}
	v.tail, v.opening = nil, nil
	v.gen++
}

func (v *memberView) newSlot() *tailSlot {
	v.opening = &tailSlot{}
	return v.opening
}

// tailSlot hands a follower from the command that opened it to the view.
// The view may stop before the command's message arrives, or never get it
// (the program quit): whichever of put and close comes second closes the
// follower.
type tailSlot struct {
	mu     sync.Mutex
	f      view.LineSource
	closed bool
}

// put keeps f for the view, or closes it and says false if the view
// stopped.
func (s *tailSlot) put(f view.LineSource) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		if f != nil {
			_ = f.Close()
		}
		return false
	}
	s.f = f
	return true
}

func (s *tailSlot) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.f != nil {
		_ = s.f.Close()
		s.f = nil
	}
}

// opened takes the end of the feed and starts following it.
func (v *memberView) opened(msg tailOpenedMsg) tea.Cmd {
	if msg.gen != v.gen {
		return nil // a member the view has left: stopTail closed its slot, and the follower in it
	}
	v.opening = nil // the follower is the view's now
	if msg.err != nil {
		v.tailErr = msg.err.Error()
		return nil
	}
	v.tail = msg.f
	v.add(msg.lines)
	return nextTail(v.gen, msg.f, v.feed)
}

// appended takes what was appended and waits for more.
func (v *memberView) appended(msg tailMsg) tea.Cmd {
	if msg.gen != v.gen || v.tail == nil {
		return nil
	}
	v.add(msg.lines)
	if msg.err != nil {
		v.tailErr = msg.err.Error()
		v.tail = nil
		return nil
	}
	return nextTail(v.gen, v.tail, v.feed)
}

// add keeps the newest tailEntries lines; a view scrolled up stays on the
// lines it shows.
func (v *memberView) add(lines []string) {
	v.lines = append(v.lines, lines...)
	if over := len(v.lines) - tailEntries; over > 0 {
		v.lines = append(v.lines[:0:0], v.lines[over:]...)
	}
	if v.up > 0 {
		v.up += len(lines) // an approximation in entries; clamped when drawn
	}
}

// scrollBy scrolls the tail by n lines (negative: towards older lines).
func (v *memberView) scrollBy(n int) { v.up = max(v.up-n, 0) }

// openTail reads the end of a feed and starts following it.
func openTail(gen int, feed team.Feed, slot *tailSlot) tea.Cmd {
	return func() tea.Msg {
		off, err := team.TailStart(feed.Path, tailBytes)
		if err != nil {
			return tailOpenedMsg{gen: gen, err: err}
		}
		raw, end, err := team.ReadLines(feed.Path, off)
		if err != nil {
			return tailOpenedMsg{gen: gen, err: err}
		}
		f, err := team.Follow(feed.Path, end)
		if err != nil {
			// No follower: a nil *Follower in f would read as one, and be
			// followed.
			return tailOpenedMsg{gen: gen, lines: readable(raw, feed), err: err}
		}
		if !slot.put(f) {
			return tailOpenedMsg{gen: gen} // the view stopped: stale
		}
		return tailOpenedMsg{gen: gen, f: f, lines: readable(raw, feed)}
	}
}

// nextTail waits for lines appended to a feed.
func nextTail(gen int, f view.LineSource, feed team.Feed) tea.Cmd {
	return func() tea.Msg {
		raw, err := f.Next(context.Background())
		return tailMsg{gen: gen, lines: readable(raw, feed), err: err}
	}
}

func readable(raw [][]byte, feed team.Feed) []string {
	out := make([]string, 0, len(raw))
	for _, b := range raw {
		out = append(out, feed.Line(b))
	}
	return out
}

// Render draws the view w×h: the member's card on top (at most half of
// h), then its feed, newest at the bottom.
func (v *memberView) Render(w, h int) string {
	mv := v.facts.mv
	if mv == nil {
		return v.styles.Muted.Render(v.name + " is no longer in the team")
	}
	card := v.card(mv, w)
	pending := len(v.pendingLines(w)) // drawn under the name and status line
	if v.full {
		// The name and status line, and the request that waits, which a
		// and r decide: it stays on screen.
		card = card[:1+pending]
	}
	if len(card) > h/2 {
		card = card[:max(h/2, 1+min(pending, 2))]
	}
	out := append(card, v.rule(w))
	return strings.Join(append(out, v.feedLines(w, h-len(out))...), "\n")
}

// card is who the member is and what it is doing.
func (v *memberView) card(mv *view.MemberView, w int) []string {
	st, rec := v.styles, mv.Record
	g, gs := v.glyph(rec.Status)
	word := string(rec.Status)
	if word == "" {
		word = "not started"
	}
	head := gs.Render(g) + " " + st.Title.Render(v.name) + st.Muted.Render(" · ") + gs.Render(strings.ReplaceAll(word, "_", " "))
	if !rec.Since.IsZero() {
		head += st.Muted.Render(" for " + age(v.clock.Sub(rec.Since)))
	}
	if t := tokens(rec.Counters); t != "" {
		head = fit(head, w-ansi.StringWidth(t)-1) + " " + st.Muted.Render(t)
	}
	out := append([]string{head}, v.pendingLines(w)...)
	field := func(label, text string) {
		if text != "" {
			out = append(out, fit(st.Muted.Render(fmt.Sprintf("%-8s", label))+team.Printable(text), w))
		}
	}
	field("role", mv.Spec.Role)
	field("runtime", runtimeLine(mv.Spec))
	field("doing", rec.Activity)
	if rec.Error != "" {
		out = append(out, st.Danger.Render("error"))
		out = append(out, wrapText(rec.Error, w)...)
		if rec.LastLog != "" {
			out = append(out, wrapText("last log line: "+rec.LastLog, w)...)
		}
	}
	c := rec.Counters
	field("counts", fmt.Sprintf("received %d · sent %d · plans %d · calls %d", c.Received, c.Sent, c.Plans, c.Calls))
	out = append(out, v.moves(w)...)
	out = append(out, v.calls(w)...)
	out = append(out, v.deadLetters(w)...)
	return append(out, v.mail(w)...)
}

// pendingLines draw the pending request of the card, the one a and r
// decide: its kind and id, then what it asks.
func (v *memberView) pendingLines(w int) []string {
	r := v.facts.pending
	if r == nil {
		return nil
	}
	st := v.styles
	what, who := r.Plan, r.From+" → "+r.To
	switch {
	case r.Kind == protocol.KindShutdown:
		what = r.Reason
	case r.Permission != nil:
		what = "asks to use " + r.Permission.Tool + ": " + r.Permission.Summary
	}
	out := []string{fit(st.Warning.Render("⚑ "+string(r.Kind)+" "+r.ID)+st.Muted.Render(" · "+who+" · waiting "+age(v.clock.Sub(r.Created))), w)}
	return append(out, wrapText(what, w)...)
}

// moves are the member's latest status changes, one line each.
func (v *memberView) moves(w int) []string {
	if len(v.history) == 0 {
		return nil
	}
	st := v.styles
	out := []string{st.Muted.Render("moves")}
	for _, c := range v.history {
		g, gs := v.glyph(c.Status)
		line := "  " + st.Muted.Render(c.TS.Local().Format("15:04:05")) + " " + gs.Render(g+" "+strings.ReplaceAll(string(c.Status), "_", " "))
		if what := c.Activity + c.Error; what != "" {
			line += st.Muted.Render(" · ") + team.Printable(what)
		}
		out = append(out, fit(line, w))
	}
	return out
}

// runtimeLine says how the member runs.
func runtimeLine(spec team.MemberSpec) string {
	rt := spec.Runtime
	switch {
	case spec.Target != nil:
		return "invoked through " + spec.Target.Kind
	case rt.Kind == "llm":
		return strings.TrimSpace("llm · " + rt.Provider + " " + rt.Model)
	case rt.Kind == "exec":
		return "exec · " + team.Printable(strings.Join(rt.Command, " "))
	}
	return rt.Kind
}

// calls counts the member's calls and says the last failure in full.
func (v *memberView) calls(w int) []string {
	f := &v.facts
	if f.calls == 0 {
		return nil
	}
	st := v.styles
	line := st.Muted.Render(fmt.Sprintf("%-8s", "calls")) + fmt.Sprintf("%d made, %d failed", f.calls, f.failed)
	out := []string{fit(line, w)}
	if last := f.lastFailed; last != nil {
		out = append(out, wrapText(last.ErrorCode+" "+last.Target+"."+last.Action+": "+last.ErrorMessage, w)...)
	}
	return out
}

// deadLetters counts the input refused that the member caused or that came
// through it, and says the last one's reason.
func (v *memberView) deadLetters(w int) []string {
	f := &v.facts
	if f.dead == 0 {
		return nil
	}
	st := v.styles
	line := st.Muted.Render(fmt.Sprintf("%-8s", "refused")) + st.Danger.Render(plural(f.dead, "dead letter")) + st.Muted.Render(" (5) · last: ") + team.Printable(f.lastDead.Reason)
	return []string{fit(line, w)}
}

// mail is the member's newest messages in and out, one line each.
func (v *memberView) mail(w int) []string {
	if len(v.facts.mail) == 0 {
		return nil
	}
	st := v.styles
	out := []string{st.Muted.Render("mail")}
	for _, mv := range v.facts.mail {
		msg := &mv.Msg
		dir := st.Muted.Render("← ") + msg.From
		if msg.From == v.name {
			dir = st.Muted.Render("→ ") + msg.To
		}
		out = append(out, fit("  "+st.Muted.Render(msg.TS.Local().Format("15:04:05"))+" "+dir+"  "+v.messageText(msg), w))
	}
	return out
}

// rule separates the card from the feed and names the feed's file.
func (v *memberView) rule(w int) string {
	label := "─ " + v.feed.What + " "
	if v.feed.Path != "" {
		label += shortPath(v.feed.Path) + " "
	}
	if v.up > 0 {
		label += "(scrolled: pgdn to follow) "
	}
	if v.full {
		label += "(l: the card) "
	}
	return v.styles.Muted.Render(fit(label+strings.Repeat("─", max(w-ansi.StringWidth(label), 0)), w))
}

// shortPath is a member file's path from the team directory's members/.
func shortPath(p string) string {
	if i := strings.LastIndex(p, "/members/"); i >= 0 {
		return p[i+1:]
	}
	return p
}

// feedLines is the feed wrapped to w, the newest line at the bottom of h,
// scrolled up by v.up.
func (v *memberView) feedLines(w, h int) []string {
	if h <= 0 {
		return nil
	}
	var all []string
	for _, l := range v.lines {
		// A long entry wraps under itself, indented, so entries stay
		// apart; it breaks at spaces, a token only when longer than a
		// line. A failed tool's result is in the danger ink.
		parts := wrapOnSpaces(l, max(w-2, 10))
		bad := v.feed.What == "transcript" && strings.Contains(l, " ERROR")
		for i, part := range parts {
			if i > 0 {
				part = "  " + strings.TrimLeft(part, " ")
			}
			if bad {
				if j := strings.Index(part, " ERROR"); j >= 0 && i == 0 {
					part = part[:j] + v.styles.Danger.Render(part[j:])
				} else if i > 0 {
					part = v.styles.Danger.Render(part)
				}
			}
			all = append(all, part)
		}
	}
	if v.tailErr != "" {
		all = append(all, v.styles.Danger.Render(team.Printable(v.tailErr)))
	}
	if w := v.waiting(); w != "" {
		all = append(all, v.spin.View()+" "+v.styles.Muted.Render(w))
	}
	if v.noLog != "" {
		return []string{v.styles.Muted.Render(v.noLog)}
	}
	if len(all) == 0 {
		what := "nothing in its " + v.feed.What + " yet"
		if v.feed.What == "log" {
			what += " (what the process writes on stderr)"
		}
		return []string{v.styles.Muted.Render(what)}
	}
	// The scroll is clamped to what is drawn (View runs on the update
	// loop), so pgdn answers at once after scrolling past the top.
	v.up = clamp(v.up, 0, max(len(all)-h, 0))
	end := len(all) - v.up
	return all[max(end-h, 0):end]
}

// memberKey is b with the help the member view gives it.
func memberKey(b key.Binding, desc string) key.Binding {
	return key.NewBinding(key.WithKeys(b.Keys()...), key.WithHelp(b.Help().Key, desc))
}

// waiting is the line under an llm member's transcript while its loop
// waits on the model ("waiting for the model, 4s"), the time counted from
// when its record said so; "" otherwise.
func (v *memberView) waiting() string {
	mv := v.facts.mv
	if mv == nil || mv.Spec.Runtime.Kind != team.RuntimeLLM || mv.Record.Activity != "thinking" || !spins(mv.Record.Status) {
		return ""
	}
	since := mv.Record.ActivitySince
	if since.IsZero() {
		since = mv.Record.Since
	}
	return "waiting for the model, " + age(v.clock.Sub(since))
}
