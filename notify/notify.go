// Package notify tells a person when a team needs them — a request waits
// for the lead, a member crashed — at most once each, on the terminal, the
// desktop and a webhook.
package notify

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"huddle/protocol"
	"huddle/team/view"
)

// Kinds of what needs a person: the request kinds that wait for the lead,
// and a crash.
const (
	KindCrash = "crash"
)

// AllKinds are the kinds notified by default: every request kind the lead
// decides, and a crash.
func AllKinds() []string {
	return []string{string(protocol.KindPlan), string(protocol.KindPermission), KindCrash}
}

// ParseKinds reads a comma-separated list of kinds: "all" (every one),
// "off" (none), or names from AllKinds.
func ParseKinds(s string) ([]string, error) {
	switch strings.TrimSpace(s) {
	case "", "all":
		return AllKinds(), nil
	case "off", "none":
		return []string{}, nil
	}
	var out []string
	for k := range strings.SplitSeq(s, ",") {
		k = strings.TrimSpace(k)
		if !slices.Contains(AllKinds(), k) {
			return nil, fmt.Errorf("%q is no kind of notification: want %s, all or off", k, strings.Join(AllKinds(), ", "))
		}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out, nil
}

// Event is one thing a person is needed for.
type Event struct {
	// Key says what it is once: the request id, or the crash's member and
	// time.
	Key    string `json:"key"`
	Kind   string `json:"kind"`
	Team   string `json:"team"`
	Member string `json:"member"`
	// ID is the request's id ("" for a crash).
	ID string `json:"id,omitempty"`
	// Line is the first line of what it is about: the plan, the use asked
	// for, the crash's error.
	Line string    `json:"line"`
	At   time.Time `json:"at"`
	// Show is the command that shows it all.
	Show string `json:"show"`
}

// Title is the event in a few words: "plan from reservas".
func (e Event) Title() string {
	if e.Kind == KindCrash {
		return e.Member + " crashed"
	}
	return e.Kind + " from " + e.Member
}

// Body is the event's line and where to see it.
func (e Event) Body() string {
	if e.Show == "" {
		return e.Line
	}
	return e.Line + " — " + e.Show
}

// Needs lists what in s needs a person now: the pending requests to the
// lead, and the crashed members.
func Needs(s view.Snapshot) []Event {
	name := ""
	if s.Team != nil {
		name = s.Team.Name
	}
	var out []Event
	for _, r := range s.Requests {
		if r.Status != protocol.RequestPending || r.To != protocol.Lead {
			continue
		}
		out = append(out, Event{Key: r.ID, Kind: string(r.Kind), Team: name, Member: r.From, ID: r.ID,
			Line: firstLine(what(&r)), At: r.Created, Show: "huddle show " + r.ID})
	}
	for _, m := range s.Members {
		if m.Record.Status != protocol.MemberCrashed || s.Down {
			continue
		}
		line := m.Record.Error
		if line == "" {
			line = m.Record.LastLog
		}
		out = append(out, Event{Key: "crash:" + m.Record.Name + ":" + m.Record.Since.UTC().Format(time.RFC3339Nano), Kind: KindCrash,
			Team: name, Member: m.Record.Name, Line: firstLine(line), At: m.Record.Since, Show: "huddle logs " + m.Record.Name})
	}
	return out
}

func what(r *protocol.Request) string {
	switch {
	case r.Permission != nil && r.Permission.Summary != "":
		return r.Permission.Summary
	case r.Permission != nil:
		return r.Permission.Tool
	case r.Plan != "":
		return r.Plan
	}
	return r.Reason
}

// firstLine is s's first non-blank line, printable, at most 120
// characters.
func firstLine(s string) string {
	for line := range strings.SplitSeq(s, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			return ansi.Truncate(printable(line), 120, "…")
		}
	}
	return ""
}

// printable drops control characters, so nothing an agent wrote can act
// on the terminal or break a header.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return -1
		}
		return r
	}, s)
}

// Watcher hands out each event once: the ones of its kinds not handed
// out before.
type Watcher struct {
	kinds []string
	seen  map[string]bool
}

// NewWatcher watches for kinds (none: it hands out nothing).
func NewWatcher(kinds []string) *Watcher {
	return &Watcher{kinds: kinds, seen: map[string]bool{}}
}

// New returns the events of s not handed out before.
func (w *Watcher) New(s view.Snapshot) []Event {
	var out []Event
	for _, e := range Needs(s) {
		if w.seen[e.Key] || !slices.Contains(w.kinds, e.Kind) {
			continue
		}
		w.seen[e.Key] = true
		out = append(out, e)
	}
	return out
}

// Terminal is what a terminal is sent for e: the desktop notification of
// iTerm2, WezTerm, Ghostty and others (OSC 9), of rxvt, foot and Konsole
// (OSC 777), and the bell for the rest. A terminal ignores the sequences
// it does not know.
func Terminal(e Event) string {
	title, body := strings.ReplaceAll(e.Title(), ";", ","), strings.ReplaceAll(e.Body(), ";", ",")
	return ansi.Notify("huddle: "+title+": "+body) + ansi.URxvtExt("notify", "huddle: "+title, body) + "\a"
}
