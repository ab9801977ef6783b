package claudeteam

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"huddle/teamdir"
)

// Claude Code deletes the messages it delivered (an inbox goes back to
// []) and removes a team's directory when its session ends, so what
// huddle saw of a team would be gone with it. A Journal keeps it: one
// append-only file a team (<team>.jsonl), a line for each message huddle
// saw in an inbox and for each config.json it read, so status, requests
// --all and the UI show the team's history after Claude Code deleted it.
// Every reader of a team journals what it sees (attach, status, requests,
// `huddle claude watch`).

// Journal is the directory of a root's team journals; "" keeps none.
type Journal string

// DefaultJournal is the journal of the teams under root, in huddle's
// configuration directory: huddle/claude-journal/<12 hex of root's
// path's hash>.
func DefaultJournal(root string) (Journal, error) {
	base, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no configuration directory for the journal of Claude Code teams: %w", err)
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(abs))
	return Journal(filepath.Join(base, "huddle", "claude-journal", hex.EncodeToString(sum[:6]))), nil
}

func (j Journal) path(team string) string { return filepath.Join(string(j), team+".jsonl") }

// Teams are the teams the journal holds, sorted.
func (j Journal) Teams() ([]string, error) {
	if j == "" {
		return nil, nil
	}
	ents, err := os.ReadDir(string(j))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("claude journal: %w", err)
	}
	var out []string
	for _, e := range ents {
		if name, ok := strings.CutSuffix(e.Name(), ".jsonl"); ok && !e.IsDir() && CheckName("team", name) == nil {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// journalLine is one line of a team's journal: a message seen in an
// inbox (Inbox, Key, Entry) or the config.json read (Config).
type journalLine struct {
	Seen   time.Time `json:"seen"`
	Inbox  string    `json:"inbox,omitempty"`
	Key    string    `json:"key,omitempty"`
	Entry  *Entry    `json:"entry,omitempty"`
	Config *Config   `json:"config,omitempty"`
}

// maxJournalLine bounds a journal line read back.
const maxJournalLine = 16 << 20

// load reads the team's journal into f: its messages, each once, in the
// order they were seen, and its last config. A line that does not read is
// skipped and counted in f.jerr.
func (f *folder) load() {
	file, err := os.Open(f.j.path(f.team))
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		f.jerr = err.Error()
		return
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 64<<10), maxJournalLine)
	bad := 0
	for sc.Scan() {
		var l journalLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			bad++
			continue
		}
		switch {
		case l.Config != nil:
			f.met(*l.Config, configKey(*l.Config))
		case l.Entry != nil && CheckName("member", l.Inbox) == nil && !f.seen(l.Inbox, l.Key):
			f.remember(l.Inbox, l.Key, *l.Entry)
		}
	}
	if err := sc.Err(); err != nil {
		f.jerr = err.Error()
	}
	if bad > 0 {
		f.jerr = fmt.Sprintf("%d lines of %s do not read", bad, f.j.path(f.team))
	}
}

// seen reports whether the message key of inbox is known already.
func (f *folder) seen(inbox, key string) bool { return f.keys[inbox][key] }

// remember adds a message of inbox to those seen.
func (f *folder) remember(inbox, key string, e Entry) *message {
	st := f.inboxes[inbox]
	if st == nil {
		st = &inboxState{}
		f.inboxes[inbox] = st
	}
	if f.keys[inbox] == nil {
		f.keys[inbox] = map[string]bool{}
	}
	f.keys[inbox][key] = true
	m := &message{inbox: inbox, seq: int64(len(st.msgs)), entry: e, at: parseStamp(e.Timestamp)}
	m.p, m.proto = parsePayload(e.Text)
	st.msgs = append(st.msgs, m)
	return m
}

// record appends l to the team's journal, if f keeps one.
func (f *folder) record(l journalLine) {
	if f.j == "" {
		return
	}
	l.Seen = f.now().UTC()
	b, err := json.Marshal(l)
	if err == nil {
		if err = os.MkdirAll(string(f.j), 0o700); err == nil {
			err = teamdir.AppendLine(f.j.path(f.team), append(b, '\n'))
		}
	}
	if err != nil {
		f.jerr = "journal: " + err.Error()
	}
}

// noteConfig journals cfg when it differs from the last one journaled.
func (f *folder) noteConfig(cfg Config) {
	k := configKey(cfg)
	if k == f.cfgKey {
		return
	}
	f.met(cfg, k)
	f.record(journalLine{Config: &cfg})
}

// met takes cfg (whose configKey is key) as the team's last config, and
// its members as ever seen.
func (f *folder) met(cfg Config, key string) {
	f.cfg, f.cfgKey = &cfg, key
	for _, m := range cfg.Members {
		if !slices.ContainsFunc(f.everyone, func(o ConfigMember) bool { return o.Name == m.Name }) {
			f.everyone = append(f.everyone, m)
		}
	}
}

func configKey(c Config) string {
	b, _ := json.Marshal(c)
	return string(b)
}
