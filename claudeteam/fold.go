package claudeteam

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"huddle/protocol"
	"huddle/team"
	"huddle/team/view"
)

// message is one inbox entry huddle has seen, kept across rewrites.
type message struct {
	inbox string
	seq   int64 // its place among the messages seen in that inbox
	entry Entry
	p     payload
	proto bool // text held a protocol message
	at    time.Time
}

// inboxState is what huddle knows of one inbox file.
type inboxState struct {
	keys   []string // identities of the elements at the last good read
	read   []bool   // their read flags
	msgs   []*message
	err    string // why the last read failed; cleared by a good one
	locked string // a lock held past Claude Code's stale threshold
}

// folder keeps the messages of every inbox of one team across reads, so a
// rewrite shows each message once, and folds them into snapshots.
type folder struct {
	root, team string
	inboxes    map[string]*inboxState
	version    uint64
	now        func() time.Time
	// j is the journal (journal.go): keys are the messages seen in each
	// inbox, cfg the last config.json read (the team's, once its directory
	// is gone), jerr why the journal could not be read or written.
	j      Journal
	keys   map[string]map[string]bool
	cfg    *Config
	cfgKey string
	// everyone is every member any config.json read named: a removed
	// team's roster (a member leaves config.json when it stops).
	everyone []ConfigMember
	jerr     string
}

func newFolder(root, team string, j Journal) *folder {
	f := &folder{root: root, team: team, inboxes: map[string]*inboxState{}, now: time.Now, j: j, keys: map[string]map[string]bool{}}
	if j != "" {
		f.load()
	}
	return f
}

// State is one fold of a Claude Code team: what the UI draws, and the tasks.
type State struct {
	Snapshot view.Snapshot
	Config   Config
	Tasks    []Task
	// Gone says Claude Code removed the team: Config and the messages are
	// huddle's journal of it.
	Gone bool
}

// fold reads the team's files and returns the new state. It never fails: a
// file it cannot read is shown (TeamErr, a member's activity) and read
// again on the next change.
func (f *folder) fold() State {
	var st State
	cfg, err := ReadConfig(f.root, f.team)
	switch {
	case err == nil:
		st.Config = cfg
		f.noteConfig(cfg)
	case f.cfg != nil && errors.Is(err, fs.ErrNotExist):
		// Claude Code removed the team: what huddle journaled of it stands.
		cfg, err = *f.cfg, nil
		cfg.Members = f.everyone
		st.Config = cfg
		st.Gone = true
		st.Snapshot.TeamErr = "Claude Code removed this team (its config.json is gone): shown as huddle saw it"
	default:
		st.Snapshot.TeamErr = err.Error() + "; read again when it changes"
	}
	if f.jerr != "" {
		st.Snapshot.TeamErr = strings.TrimPrefix(st.Snapshot.TeamErr+"; "+f.jerr, "; ")
	}
	f.readInboxes()
	st.Tasks, _ = readTasks(f.root, f.team)
	f.version++
	st.Snapshot.Version = f.version
	st.Snapshot.Messages = f.messages()
	st.Snapshot.Requests, st.Snapshot.Pending = f.requests()
	if err == nil {
		st.Snapshot.Team = teamOf(cfg)
	}
	st.Snapshot.Members = f.roster(cfg, st.Tasks)
	f.count(st.Snapshot.Members)
	return st
}

// count sets each member's counters from the messages huddle saw: those
// in its inbox received, those it wrote sent, its plans and permission
// requests, so its card counts what it lists.
func (f *folder) count(members []view.MemberView) {
	at := map[string]*protocol.Counters{}
	for i := range members {
		at[members[i].Record.Name] = &members[i].Record.Counters
	}
	for _, m := range f.all() {
		v := m.view()
		if c := at[m.inbox]; c != nil {
			c.Received++
		}
		c := at[v.From]
		if c == nil {
			continue
		}
		c.Sent++
		switch v.Type {
		case protocol.TypePlanApprovalRequest:
			c.Plans++
		case protocol.MessageType(typePermissionRequest):
			c.Permissions++
		}
	}
}

// readInboxes reads every inbox file of the team's inboxes directory.
func (f *folder) readInboxes() {
	ents, err := os.ReadDir(inboxesDir(f.root, f.team))
	if err != nil {
		return
	}
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || e.IsDir() || CheckName("member", name) != nil {
			continue
		}
		f.readInbox(name)
	}
}

// lockStale is proper-lockfile's default: a lock whose mtime is older is
// taken over by the next locker.
const lockStale = 10 * time.Second

func (f *folder) readInbox(name string) {
	st := f.inboxes[name]
	if st == nil {
		st = &inboxState{}
		f.inboxes[name] = st
	}
	path := InboxPath(f.root, f.team, name)
	st.locked = ""
	if fi, err := os.Stat(lockPath(path)); err == nil {
		if held := f.now().Sub(fi.ModTime()); held > lockStale {
			st.locked = fmt.Sprintf("inbox lock held %s (past Claude Code's %s stale threshold)", held.Round(time.Second), lockStale)
		}
	}
	elems, err := readInbox(path)
	if err != nil {
		st.err = err.Error()
		return
	}
	st.err = ""
	keys := make([]string, len(elems))
	read := make([]bool, len(elems))
	entries := make([]Entry, len(elems))
	for i, raw := range elems {
		keys[i], entries[i] = identity(raw)
		read[i] = entries[i].Read
	}
	for _, i := range newIndexes(st.keys, keys) {
		if f.seen(name, keys[i]) {
			continue // journaled before: this reader's first sight of it
		}
		e := entries[i]
		f.remember(name, keys[i], e)
		f.record(journalLine{Inbox: name, Key: keys[i], Entry: &e})
	}
	st.keys, st.read = keys, read
}

// all is every message seen, oldest first (by timestamp, then inbox and
// place, so the order is the same at every fold).
func (f *folder) all() []*message {
	var out []*message
	for _, st := range f.inboxes {
		out = append(out, st.msgs...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.at.Equal(b.at) {
			return a.at.Before(b.at)
		}
		if a.inbox != b.inbox {
			return a.inbox < b.inbox
		}
		return a.seq < b.seq
	})
	return out
}

func (f *folder) messages() []view.MessageView {
	all := f.all()
	if len(all) > view.MaxMessages {
		all = all[len(all)-view.MaxMessages:]
	}
	out := make([]view.MessageView, 0, len(all))
	for _, m := range all {
		out = append(out, view.MessageView{Inbox: m.inbox, Offset: m.seq, Msg: m.view()})
	}
	return out
}

// view is the message as huddle's message pane shows one: the protocol
// messages huddle has a type for become that type; the others a message
// whose content says them readably (or raw, for a type huddle does not
// know), with claude_type naming what it was.
func (m *message) view() protocol.Message {
	v := protocol.Message{
		ID: fmt.Sprintf("%s#%d", m.inbox, m.seq), Type: protocol.TypeMessage,
		From: m.entry.From, To: m.inbox, TS: m.at, Content: m.entry.Text,
	}
	if !m.proto {
		if m.entry.Summary != "" {
			v.Extra = map[string]any{"summary": m.entry.Summary}
		}
		return v
	}
	p := &m.p
	v.Extra = map[string]any{"claude_type": p.Type}
	switch p.Type {
	case typePlanRequest:
		v.Type, v.RequestID, v.Plan, v.Content = protocol.TypePlanApprovalRequest, p.id(), p.plan(), ""
	case typePlanResponse:
		v.Type, v.RequestID, v.Approve, v.Feedback, v.Content = protocol.TypePlanApprovalResponse, p.id(), protocol.Bool(p.Approved != nil && *p.Approved), p.Feedback, ""
	case typeShutdownRequest:
		v.Type, v.RequestID, v.Reason, v.Content = protocol.TypeShutdownRequest, p.id(), p.Reason, ""
	case typeShutdownApproved, typeShutdownRejected, typeShutdownResponse:
		approve, why := shutdownAnswer(p)
		v.Type, v.RequestID, v.Approve, v.Reason, v.Content = protocol.TypeShutdownResponse, p.id(), protocol.Bool(approve), why, ""
	case typeIdle:
		// The pane says "status idle" before it: the rest is why.
		v.Type, v.Status, v.Content = protocol.TypeStatus, protocol.MemberIdle, strings.TrimPrefix(readable(p, m.entry.Text), "idle ")
	default:
		v.Content = readable(p, m.entry.Text)
	}
	return v
}

// shutdownAnswer is what a shutdown answer says, in any of its forms.
func shutdownAnswer(p *payload) (approve bool, why string) {
	why = p.Reason
	if why == "" {
		why = p.Content
	}
	switch p.Type {
	case typeShutdownApproved:
		return true, why
	case typeShutdownRejected:
		return false, why
	}
	return p.Approved != nil && *p.Approved, why
}

// teamOf is config.json as huddle's team.Team, for the header and roster.
func teamOf(c Config) *team.Team {
	t := &team.Team{Name: c.Name}
	for _, m := range c.Members {
		t.Members = append(t.Members, team.MemberSpec{Name: m.Name, Role: role(m), Runtime: team.RuntimeSpec{Kind: "claude-code"}, Dir: m.Cwd})
	}
	return t
}

func role(m ConfigMember) string {
	parts := []string{}
	for _, s := range []string{m.AgentType, m.Model} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, " · ")
}

// tasksOf reads the task files once for a fold.
func readTasks(root, team string) ([]Task, error) {
	dir := tasksDir(root, team)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []Task
	for _, e := range ents {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		var t Task
		if json.Unmarshal(b, &t) != nil || t.ID == "" {
			continue // being rewritten, or not a task: read again on the next change
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return taskOrder(out[i].ID, out[j].ID) })
	return out, nil
}
